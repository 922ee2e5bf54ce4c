package experiment

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// An Arm is one entry of Options.Strategies: a curriculum strategy and
// the settings this arm alone changes, written STRATEGY[:OPTION...]:
//
//	uniform             the strategy with the experiment's settings
//	uniform:refill      zero-variance groups dropped and planned again
//	frontier:norefill   zero-variance groups kept (no signal, counted)
//	frontier:t=0.25     the replay sampler's temperature
//	frontier:return     beliefs and retirement on the return GRPO compares
//
// so that an experiment compares refill, the sampler's temperature or the
// curriculum's signal as arms of their own instead of as a setting every
// strategy shares. The whole string names the arm in the results and the
// table.
type Arm struct {
	// Name is the arm as written.
	Name string
	// Strategy is the curriculum's name (a --curriculum value).
	Strategy string
	// Refill, when set, replaces Options.Refill for this arm.
	Refill *bool
	// Temperature, when above 0, replaces the replay sampler's
	// temperature (curriculum.ReplayOptions.Temperature).
	Temperature float64
	// Return says the replay curricula judge a task by the return GRPO
	// compares (try cost included), not the 0/1 reward alone.
	Return bool
}

// ParseArm reads one entry of Options.Strategies.
func ParseArm(s string) (Arm, error) {
	parts := strings.Split(s, ":")
	a := Arm{Name: s, Strategy: parts[0]}
	if a.Strategy == "" {
		return Arm{}, fmt.Errorf("strategy %q: want STRATEGY[:refill|:norefill|:t=TEMPERATURE|:return]", s)
	}
	set := func(b bool) *bool { return &b }
	for _, p := range parts[1:] {
		switch {
		case p == "refill":
			a.Refill = set(true)
		case p == "norefill":
			a.Refill = set(false)
		case p == "return":
			a.Return = true
		case strings.HasPrefix(p, "t="):
			t, err := strconv.ParseFloat(strings.TrimPrefix(p, "t="), 64)
			if err != nil || !(t > 0) || math.IsInf(t, 0) {
				return Arm{}, fmt.Errorf("strategy %q: temperature %q: want a number above 0", s, strings.TrimPrefix(p, "t="))
			}
			a.Temperature = t
		default:
			return Arm{}, fmt.Errorf("strategy %q: option %q: want refill, norefill, t=TEMPERATURE or return", s, p)
		}
	}
	return a, nil
}

// refill is whether a run of arm a drops zero-variance groups and plans
// new ones.
func (o Options) refill(a Arm) bool {
	if a.Refill != nil {
		return *a.Refill
	}
	return o.Refill
}
