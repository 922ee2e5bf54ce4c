package cli

import (
	"slices"
	"strings"

	"github.com/frognano/frog/curriculum"
	"github.com/spf13/pflag"
)

// curricula are the values of --curriculum: the replay strategies and the
// two that only ever ask for fresh tasks.
var curricula = append(slices.Clone(curriculum.Strategies), "target", "fixed")

// replayOptions are the flags of the replay curricula (frontier and the
// strategies it is compared with): curriculum.ReplayOptions.
type replayOptions curriculum.ReplayOptions

func (o *replayOptions) flags(f *pflag.FlagSet) {
	d := curriculum.DefaultReplayConfig()
	f.Float64Var(&o.FreshShare, "fresh-share", d.FreshShare, "share of fresh tasks from the synthesizer in each request of the replay curricula")
	f.Float64Var(&o.Temperature, "curriculum-temperature", d.Temperature, "frontier: rank prioritization temperature (task of rank r drawn ∝ r^(-1/T))")
	f.Float64Var(&o.Staleness, "curriculum-staleness", d.Staleness, "frontier: share of the replay distribution given to how long a task went unplayed")
	f.Float64Var(&o.Discount, "curriculum-discount", d.Estimate.Discount, "evidence kept by the replay curricula's estimate per 4 groups learned from (an update of B groups keeps this^(B/4); 1: never forget)")
	f.IntVar(&o.FixedSet, "fixed-set", d.FixedSet, "offline, frontier-no-synth: tasks taken from the synthesizer before only replaying")
	f.IntVar(&o.Capacity, "replay-capacity", d.Capacity, "most tasks in the replay buffer")
	f.Float64Var(&o.Compound, "compound", d.Compound, "frontier: share of synthesis requests that ask for a compound task (a buffered task solved more often than not made harder by one more mutation; online synthesis only)")
}

// curriculumHelp is the usage line of --curriculum.
func curriculumHelp() string {
	return "curriculum: " + strings.Join(curricula, ", ") +
		" (frontier: replay by expected learnability, retire hopeless and saturated tasks, steer synthesis to learnable bins; see docs/curriculum.md)"
}

// The target curriculum's pass rate and step where a command has no flag
// for them.
const (
	defaultPassRate   = 0.5
	defaultTargetRate = 0.01
)

// curriculumSpec says which curriculum a command runs, and how.
type curriculumSpec struct {
	// Name is the value of --curriculum.
	Name string
	// Difficulty is what fixed asks for, where target starts, and what the
	// replay strategies ask of sources that take only a difficulty.
	Difficulty float64
	// PassRate is the pass rate target keeps; Rate its step per outcome.
	PassRate, Rate float64
	// Replay are the replay strategies' flags.
	Replay replayOptions
	Seed   uint64
	// GroupsPerUpdate sizes the replay estimate's forgetting (at least 1).
	GroupsPerUpdate int
}

// newCurriculum makes the curriculum s names; a bad name or setting is a
// UsageError.
func newCurriculum(s curriculumSpec) (curriculum.Curriculum, error) {
	name, difficulty, o, seed, groupsPerUpdate := s.Name, s.Difficulty, s.Replay, s.Seed, s.GroupsPerUpdate
	switch name {
	case "fixed":
		return &curriculum.Fixed{D: difficulty}, nil
	case "target":
		c, err := curriculum.NewTarget(s.PassRate, difficulty, s.Rate)
		if err != nil {
			return nil, &UsageError{Err: err}
		}
		return c, nil
	}
	if !slices.Contains(curricula, name) {
		return nil, usagef("--curriculum %q: want one of %s", name, strings.Join(curricula, ", "))
	}
	cfg := curriculum.DefaultReplayConfig()
	cfg.Strategy, cfg.Seed, cfg.Difficulty = name, seed, difficulty
	curriculum.ReplayOptions(o).Apply(&cfg)
	cfg.UpdateGroups = max(1, groupsPerUpdate)
	c, err := curriculum.NewReplay(cfg)
	if err != nil {
		return nil, &UsageError{Err: err}
	}
	return c, nil
}
