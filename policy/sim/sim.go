package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"weak"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/policy"
)

// SolveProb is the chance that a policy of the given skill solves a task of
// the given difficulty: the logistic function of their difference.
func SolveProb(skill, difficulty float64) float64 {
	return 1 / (1 + math.Exp(difficulty-skill))
}

// Oracle is what the simulated agent knows that no real policy may: each
// task's difficulty and fix. It is safe for concurrent use.
type Oracle struct {
	kept sync.Map // task id -> Fix, from Add: held as long as the oracle
	tied sync.Map // task id -> weak.Pointer[Fix], from Tie: held by the task
	// added is set by the first Add: until then Lookup, which the
	// simulated policy calls at every step, need not hash the id for kept.
	added atomic.Bool
}

// Fix is a task as the oracle knows it: its difficulty and the content of
// each file of its fix, in the order the agent writes them.
type Fix struct {
	Difficulty float64
	Files      []FileContent
}

// FileContent is the whole content of one file.
type FileContent struct {
	Path    string
	Content string
}

// NewOracle returns an empty oracle.
func NewOracle() *Oracle { return &Oracle{} }

// Add records what the oracle knows of task id, for as long as the oracle
// lives.
func (o *Oracle) Add(id string, f Fix) {
	o.kept.Store(id, f)
	o.added.Store(true)
}

// Tie records what the oracle knows of t for as long as t, or a copy of
// it, is reachable: the fix is kept in t.Private and the oracle forgets it
// once no task holds it. A simulation that makes tasks without end (frog
// sim) ties them, so that the oracle does not grow with every task made.
func (o *Oracle) Tie(t *env.Task, f Fix) {
	p := &f
	t.Private = p
	w := weak.Make(p)
	o.tied.Store(t.ID, w)
	runtime.AddCleanup(p, func(id string) { o.tied.CompareAndDelete(id, w) }, t.ID)
}

// Lookup returns what the oracle knows of task id.
func (o *Oracle) Lookup(id string) (Fix, bool) {
	if o.added.Load() {
		if f, ok := o.kept.Load(id); ok {
			return f.(Fix), true
		}
	}
	if w, ok := o.tied.Load(id); ok {
		if p := w.(weak.Pointer[Fix]).Value(); p != nil {
			return *p, true
		}
	}
	return Fix{}, false
}

// Known counts the tasks the oracle knows now (tied tasks whose last
// holder is gone may be counted until the collector notices).
func (o *Oracle) Known() int {
	n := 0
	for range o.kept.Range {
		n++
	}
	for range o.tied.Range {
		n++
	}
	return n
}

// SimFix is the fix of a simulated task (env/sim's convention: its gold
// patch written over its file fixes it).
func SimFix(t *env.Task) Fix {
	return Fix{Difficulty: t.Difficulty, Files: []FileContent{{Path: t.File, Content: t.Patch}}}
}

// Policy is one version of the simulated agent.
type Policy struct {
	Skill  float64
	Seed   uint64
	Oracle *Oracle
}

var (
	_ policy.Policy  = Policy{}
	_ policy.Learner = (*Learner)(nil)
)

// WrongFix is the content the simulated agent writes when its draw fails.
const WrongFix = "// a plausible but wrong fix\n"

// Act chooses, for each observation, the next of view, edit, …, submit.
func (p Policy) Act(ctx context.Context, obs []env.Observation, acts []env.Action) error {
	if len(acts) < len(obs) {
		return errors.New("sim policy: fewer action slots than observations")
	}
	if p.Oracle == nil {
		return errors.New("sim policy: no oracle")
	}
	var (
		fix    Fix
		ok     bool
		lastID string
	)
	for i := range obs {
		o := &obs[i]
		if o.Task == nil {
			return fmt.Errorf("sim policy: episode %d: the observation names no task", o.Episode)
		}
		// A group's episodes step together, so a batch holds runs of one
		// task: look each run up once.
		if i == 0 || o.Task.ID != lastID {
			fix, ok = p.Oracle.Lookup(o.Task.ID)
			lastID = o.Task.ID
		}
		if !ok || len(fix.Files) == 0 {
			return fmt.Errorf("sim policy: episode %d: the oracle does not know task %q", o.Episode, o.Task.ID)
		}
		acts[i] = p.act(o, fix)
	}
	return ctx.Err()
}

func (p Policy) act(o *env.Observation, fix Fix) env.Action {
	switch {
	case o.Step == 0:
		return env.Action{Tool: env.ToolView, Path: fix.Files[0].Path}
	case o.Step == 1:
		prob := SolveProb(p.Skill, fix.Difficulty)
		var src rand.PCG
		src.Seed(mix(p.Seed^seedTag), mix(o.Episode<<8|uint64(o.Attempt&0xff)))
		if u := float64(src.Uint64()>>11) / (1 << 53); u < prob {
			f := fix.Files[0]
			return env.Action{Tool: env.ToolEdit, Path: f.Path, New: f.Content, LogProb: math.Log(prob)}
		}
		return env.Action{Tool: env.ToolEdit, Path: fix.Files[0].Path, New: WrongFix, LogProb: math.Log1p(-prob)}
	case o.Step-1 < len(fix.Files) && o.Last != nil && wroteFix(o):
		// A fix of several files: the rest, one a step.
		f := fix.Files[o.Step-1]
		return env.Action{Tool: env.ToolEdit, Path: f.Path, New: f.Content}
	}
	return env.Action{Tool: env.ToolSubmit}
}

// wroteFix reports whether the episode's first edit was the fix (its
// log-probability is that of success).
func wroteFix(o *env.Observation) bool {
	return len(o.History) > 1 && o.History[1].Action.New != WrongFix
}

// Learner is the simulated learning rule.
type Learner struct {
	cur Policy
	// Rate is the skill gained per unit of learning signal: per group at a
	// pass rate of one half (variance 1/4), Rate/4.
	Rate float64
}

// NewLearner starts from a policy of the given skill that knows what
// oracle knows.
func NewLearner(skill, rate float64, seed uint64, oracle *Oracle) *Learner {
	return &Learner{cur: Policy{Skill: skill, Seed: seed, Oracle: oracle}, Rate: rate}
}

// Policy returns the current simulated policy.
func (l *Learner) Policy() policy.Policy { return l.cur }

// Skill returns the current skill.
func (l *Learner) Skill() float64 { return l.cur.Skill }

// Update raises the skill by Rate × the sum over the batch's groups of the
// within-group reward variance.
func (l *Learner) Update(ctx context.Context, batch []policy.Group) (policy.Policy, policy.UpdateStats, error) {
	st := policy.UpdateStats{Groups: len(batch)}
	var signal, rewards float64
	for i := range batch {
		r := batch[i].Rewards()
		v := policy.Variance(r)
		if v == 0 {
			st.ZeroSignalGroups++
		}
		signal += v
		for _, x := range r {
			rewards += x
		}
		st.Trajectories += len(r)
	}
	if len(batch) > 0 {
		st.Signal = signal / float64(len(batch))
	}
	if st.Trajectories > 0 {
		st.MeanReward = rewards / float64(st.Trajectories)
	}
	// The batch's signal is the sum over its groups, so the skill gained per
	// episode does not depend on how episodes are batched.
	l.cur.Skill += l.Rate * signal
	st.Loss = -st.Signal
	st.Extra = map[string]float64{"skill": l.cur.Skill}
	return l.cur, st, ctx.Err()
}

func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// seedTag separates the policy's draws from the sandbox's and the task
// source's, which are seeded from the same run seed.
const seedTag = 0x706f6c696379 // "policy"
