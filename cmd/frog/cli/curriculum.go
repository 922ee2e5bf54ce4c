package cli

import (
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/frognano/frog/synth"
)

// curricula are the values of --curriculum: the replay strategies and the
// two that only ever ask for fresh tasks.
var curricula = append(slices.Clone(synth.Strategies), "target", "fixed")

// replayOptions are the flags of the replay curricula (frontier and the
// strategies it is compared with).
type replayOptions struct {
	FreshShare  float64 `json:"fresh_share"`
	Temperature float64 `json:"temperature"`
	Staleness   float64 `json:"staleness"`
	Discount    float64 `json:"discount"`
	FixedSet    int     `json:"fixed_set"`
	Capacity    int     `json:"capacity"`
	Compound    float64 `json:"compound,omitempty"`
}

func (o *replayOptions) flags(f *pflag.FlagSet) {
	d := synth.DefaultReplayConfig()
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

// newCurriculum makes the curriculum named name.
func newCurriculum(name string, difficulty, passRate, rate float64, o replayOptions, seed uint64, groupsPerUpdate int) (synth.Curriculum, error) {
	switch name {
	case "fixed":
		return &synth.Fixed{D: difficulty}, nil
	case "target":
		c, err := synth.NewTarget(passRate, difficulty, rate)
		if err != nil {
			return nil, &UsageError{Err: err}
		}
		return c, nil
	}
	if !slices.Contains(curricula, name) {
		return nil, usagef("--curriculum %q: want one of %s", name, strings.Join(curricula, ", "))
	}
	cfg := synth.DefaultReplayConfig()
	cfg.Strategy, cfg.Seed, cfg.Difficulty = name, seed, difficulty
	cfg.FreshShare, cfg.Temperature, cfg.Staleness = o.FreshShare, o.Temperature, o.Staleness
	cfg.Estimate.Discount, cfg.FixedSet, cfg.Capacity = o.Discount, o.FixedSet, o.Capacity
	cfg.Compound = o.Compound
	cfg.UpdateGroups = max(1, groupsPerUpdate)
	c, err := synth.NewReplay(cfg)
	if err != nil {
		return nil, &UsageError{Err: err}
	}
	return c, nil
}
