package neural

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/policy"
	"github.com/frognano/frog/policy/repair"
)

// Policy is one version of the neural repair policy: the protocol of
// policy/repair (tests, coverage, fault localisation, candidates, tries,
// keeping partial fixes), with every choice of what to try next — or to stop
// — made by the network, a softmax over the options' scores. It is an
// immutable snapshot, safe for concurrent use: Params must not change.
type Policy struct {
	Dims   Dims
	Params []float32
	// Temperature divides the scores before the softmax when sampling
	// (training); Greedy takes the best option instead (evaluation).
	Temperature float64
	Greedy      bool
	Seed        uint64
	// Protocol is the repair protocol (its Keep is ignored: NoKeep says).
	Protocol repair.Config
	// NoStop: no option to stop is offered; NoKeep: partial fixes are
	// not applied (Config.NoStop, Config.NoKeep).
	NoStop, NoKeep bool
}

var _ policy.Policy = (*Policy)(nil)

// Kind names the decisions this policy records, for its learner.
const Kind = "try"

// Act chooses each episode's next action from its observation alone.
func (p *Policy) Act(ctx context.Context, obs []env.Observation, acts []env.Action) error {
	if len(acts) < len(obs) {
		return errors.New("neural: fewer action slots than observations")
	}
	if !repair.Readable(p.Dims.F) {
		return fmt.Errorf("neural: a network over %d features, and this frog computes %d (or reads the first %d)", p.Dims.F, repair.Dim, repair.PrefixDim)
	}
	if len(p.Params) != p.Dims.Params() {
		return errors.New("neural: parameters do not fit the network")
	}
	cfg := p.Protocol
	cfg.Keep = !p.NoKeep
	for i := range obs {
		acts[i] = repair.Next(obs[i], cfg, chooser{p}, repair.Seeded(p.Seed, obs[i]))
	}
	return ctx.Err()
}

// temperature is the one the policy samples at (and scores are divided by,
// greedy or not, so that a learner recomputes the same distribution).
func (p *Policy) temperature() float64 {
	if p.Temperature > 0 {
		return p.Temperature
	}
	return 1
}

type chooser struct{ p *Policy }

// Choose scores the untried candidates and stopping, and picks one.
func (c chooser) Choose(st *repair.State, ids []int, rnd *rand.Rand) (int, *env.Decision, float64) {
	p := c.p
	f := repair.NewFeaturizer(st)
	rows := make([][]float32, 0, len(ids)+1)
	F := p.Dims.F // Dim, or PrefixDim for a network from before the last features
	for _, id := range ids {
		rows = append(rows, f.Candidate(&st.List[id])[:F])
	}
	if !p.NoStop {
		rows = append(rows, f.Stop()[:F])
	}
	flat := make([]float32, 0, len(rows)*F)
	for _, r := range rows {
		flat = append(flat, r...)
	}
	t := p.temperature()
	lp := logSoftmax(scores(p.Dims, p.Params, flat, t))
	pick := 0
	if p.Greedy {
		for i := range lp {
			if lp[i] > lp[pick] {
				pick = i
			}
		}
	} else {
		u := rnd.Float64()
		pick = len(lp) - 1
		for i, l := range lp {
			if u -= math.Exp(l); u < 0 {
				pick = i
				break
			}
		}
	}
	dec := repair.Decision(Kind, rows, pick, t)
	if pick == len(ids) {
		return -1, dec, lp[pick]
	}
	return pick, dec, lp[pick]
}
