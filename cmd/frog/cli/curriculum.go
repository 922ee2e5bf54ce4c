package cli

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/frognano/frog/curriculum"
	"github.com/spf13/pflag"
)

// curricula are the values of --curriculum: the replay strategies, the
// seed report's rounds, and the two that only ever ask for fresh tasks.
var curricula = append(slices.Clone(curriculum.Strategies), curriculum.StrategyRounds, "target", "fixed")

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
	f.BoolVar(&o.Return, "curriculum-return", false, "frontier and the replay curricula: also judge a task by the return GRPO compares (try cost included): a task whose rollouts all pass in different numbers of tries still teaches what to try first, so it is not retired as saturated")
	r := curriculum.DefaultRoundsOptions()
	f.IntVar(&o.Rounds.Size, "round-size", r.Size, "rounds: fresh tasks calibrated in each round")
	f.IntVar(&o.Rounds.Calibration, "round-calibration", r.Calibration, "rounds: rollouts of the current policy that calibrate each task, a multiple of --group-size (0: one group); they count in --episodes")
	f.StringVar(&o.Rounds.Band, "round-band", r.Band, "rounds: a task is admitted when its calibration pass rate p lies in lo,hi and 0 < p < 1")
	f.StringVar(&o.Rounds.LastBand, "round-last-band", r.LastBand, "rounds: the band from round --round-last on")
	f.IntVar(&o.Rounds.LastRound, "round-last", r.LastRound, "rounds: the round from which --round-last-band replaces --round-band (0: never)")
	f.BoolVar(&o.Rounds.Refine, "round-refine", r.Refine, "rounds: refine a task outside the band (too easy: one more mutation, from a source that compounds; too hard: a task of an easier sibling bin, from a steerable source) instead of dropping it")
	f.IntVar(&o.Rounds.Updates, "round-updates", r.Updates, "rounds: policy updates trained on a round's admitted tasks before the next round")
}

// roundsConfig is the rounds curriculum's configuration of the flags o;
// a bad setting is a UsageError naming its flag.
func roundsConfig(o curriculum.RoundsOptions, groupSize int, difficulty float64, seed uint64) (curriculum.RoundsConfig, error) {
	c := curriculum.RoundsConfig{Size: o.Size, CalibrationGroups: 1, GroupSize: max(groupSize, 1), LastRound: o.LastRound,
		Refine: o.Refine, Updates: o.Updates, Difficulty: difficulty, Seed: seed}
	var err error
	if c.Band, err = parseBand("--round-band", o.Band); err != nil {
		return c, err
	}
	if c.LastBand, err = parseBand("--round-last-band", o.LastBand); err != nil {
		return c, err
	}
	switch {
	case o.Size < 1:
		return c, usagef("--round-size %d: want at least one task per round", o.Size)
	case o.Calibration < 0 || o.Calibration%c.GroupSize != 0:
		return c, usagef("--round-calibration %d: want a multiple of --group-size %d (calibration plays whole groups; 0: one group)", o.Calibration, c.GroupSize)
	case o.LastRound < 0:
		return c, usagef("--round-last %d: want a round number >= 1, or 0 for never", o.LastRound)
	case o.Updates < 1:
		return c, usagef("--round-updates %d: want at least one update per round", o.Updates)
	}
	if o.Calibration > 0 {
		c.CalibrationGroups = o.Calibration / c.GroupSize
	}
	return c, nil
}

// parseBand parses flag's value "lo,hi", 0 <= lo <= hi <= 1.
func parseBand(flag, v string) ([2]float64, error) {
	var b [2]float64
	parts := strings.Split(v, ",")
	if len(parts) != 2 {
		return b, usagef("%s %q: want two pass rates lo,hi", flag, v)
	}
	for i, s := range parts {
		x, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			return b, usagef("%s %q: want two pass rates lo,hi: %v", flag, v, err)
		}
		b[i] = x
	}
	if !(b[0] >= 0 && b[0] <= b[1] && b[1] <= 1) {
		return b, usagef("%s %q: want 0 <= lo <= hi <= 1", flag, v)
	}
	return b, nil
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
	// GroupSize is the run's --group-size: rounds calibrates in whole
	// groups.
	GroupSize int
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
	case curriculum.StrategyRounds:
		cfg, err := roundsConfig(o.Rounds, s.GroupSize, difficulty, seed)
		if err != nil {
			return nil, err
		}
		c, err := curriculum.NewRounds(cfg)
		if err != nil {
			return nil, &UsageError{Err: fmt.Errorf("--curriculum rounds: %w", err)}
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
