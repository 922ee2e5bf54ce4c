package baseline

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

// Names lists the baselines New knows, in order of strength.
var Names = []string{"random", "fl-greedy", "fl-feedback", "ceiling"}

// Policy is one baseline. It is immutable and safe for concurrent use.
type Policy struct {
	name    string
	seed    uint64
	cfg     repair.Config
	chooser repair.Chooser
}

var _ policy.Policy = (*Policy)(nil)

// New returns the named baseline, its draws seeded by seed.
func New(name string, seed uint64) (*Policy, error) {
	p := &Policy{name: name, seed: seed}
	switch name {
	case "random":
		p.chooser = uniform{}
	case "fl-greedy":
		p.chooser = inOrder{}
	case "fl-feedback":
		p.cfg.Keep, p.chooser = true, demoting{}
	case "ceiling":
		return Exhaustive(name, repair.Config{Keep: true, AllLines: true}, seed), nil
	default:
		return nil, fmt.Errorf("unknown baseline %q (want random, fl-greedy, fl-feedback or ceiling)", name)
	}
	return p, nil
}

// Exhaustive is the search that tries every candidate of each list the
// protocol cfg makes, all in one step (cfg.Exhaustive is set): with
// cfg{Keep, AllLines}, the candidate-space ceiling; with a policy's own
// protocol, every candidate that policy could try, each with its verdict
// (the tries a replay table records, env/replay).
func Exhaustive(name string, cfg repair.Config, seed uint64) *Policy {
	cfg.Exhaustive = true
	return &Policy{name: name, seed: seed, cfg: cfg, chooser: inOrder{}}
}

// Protocol is the repair protocol the baseline plays.
func (p *Policy) Protocol() repair.Config { return p.cfg }

// Name is the baseline's name.
func (p *Policy) Name() string { return p.name }

// Act chooses each episode's next action from its observation alone.
func (p *Policy) Act(ctx context.Context, obs []env.Observation, acts []env.Action) error {
	if len(acts) < len(obs) {
		return errors.New("baseline: fewer action slots than observations")
	}
	for i := range obs {
		acts[i] = repair.Next(obs[i], p.cfg, p.chooser, repair.Seeded(p.seed, obs[i]))
	}
	return ctx.Err()
}

// options are the features of a try's options (the untried candidates).
func options(st *repair.State, ids []int) [][]float32 {
	f := repair.NewFeaturizer(st)
	rows := make([][]float32, len(ids))
	for i, id := range ids {
		rows[i] = f.Candidate(&st.List[id])
	}
	return rows
}

// uniform picks any untried candidate.
type uniform struct{}

func (uniform) Choose(st *repair.State, ids []int, rnd *rand.Rand) (int, *env.Decision, float64) {
	pick := rnd.IntN(len(ids))
	return pick, repair.Decision("try", options(st, ids), pick, 0), -math.Log(float64(len(ids)))
}

// inOrder picks the first untried candidate: the most suspicious line's
// first template.
type inOrder struct{}

func (inOrder) Choose(st *repair.State, ids []int, _ *rand.Rand) (int, *env.Decision, float64) {
	return 0, repair.Decision("try", options(st, ids), 0, 0), 0
}

// demoting is inOrder that passes over lines where two tries changed
// nothing (one might be an edit that does not matter there) while other
// lines are left.
type demoting struct{}

// noEffectLimit is how many tries that change nothing demote a line.
const noEffectLimit = 2

func (demoting) Choose(st *repair.State, ids []int, _ *rand.Rand) (int, *env.Decision, float64) {
	pick := 0
	for i, id := range ids {
		c := st.List[id]
		if st.LineNoEffect[env.Line{File: c.File, Line: c.Line}] < noEffectLimit {
			pick = i
			break
		}
	}
	return pick, repair.Decision("try", options(st, ids), pick, 0), 0
}
