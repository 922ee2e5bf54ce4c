package experiment

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/frognano/frog/actors"
	"github.com/frognano/frog/env"
	envsim "github.com/frognano/frog/env/sim"
	"github.com/frognano/frog/policy"
	policysim "github.com/frognano/frog/policy/sim"
	"github.com/frognano/frog/run/taskenv"
	"github.com/frognano/frog/synth"
	synthsim "github.com/frognano/frog/synth/sim"
)

// Sim runs the strategies of Mode "sim": frog sim's named simulation with
// binned tasks, one test execution per episode, and the held-out solve
// rate of the simulated agent computed exactly.
type Sim struct {
	o       Options
	deps    Deps
	heldout heldoutSet
}

var _ Runner = (*Sim)(nil)

// NewSim makes the held-out set of o (the same for every run and seed).
func NewSim(o Options, deps Deps) (*Sim, error) {
	h, err := simHeldout(o)
	if err != nil {
		return nil, err
	}
	return &Sim{o: o, deps: deps, heldout: h}, nil
}

// heldoutSet is the fixed held-out task set of the simulation.
type heldoutSet struct{ d []float64 }

// rate is the expected held-out solve rate of the simulated agent at skill.
func (h heldoutSet) rate(skill float64) float64 {
	var s float64
	for _, d := range h.d {
		s += policysim.SolveProb(skill, d)
	}
	return s / float64(len(h.d))
}

// heldoutSeed fixes the held-out set: the same for every run and seed.
const heldoutSeed = 0x68656c646f7574

func simHeldout(o Options) (heldoutSet, error) {
	src := synthsim.NewHeldout(heldoutSeed, o.TaskSpread, o.Noise)
	tasks, err := src.TasksFor(context.Background(), o.Heldout, synth.Knobs{})
	if err != nil {
		return heldoutSet{}, err
	}
	h := heldoutSet{d: make([]float64, len(tasks))}
	for i, t := range tasks {
		h.d[i], _ = src.Truth(t.ID)
	}
	return h, nil
}

// countingProvider counts the test executions of its sandboxes: in the
// simulation every Exec runs a task's tests.
type countingProvider struct {
	env.Provider
	n *atomic.Int64
}

type countingSandbox struct {
	env.Sandbox
	n *atomic.Int64
}

func (p countingProvider) Open(ctx context.Context, opts env.OpenOptions) (env.Sandbox, error) {
	s, err := p.Provider.Open(ctx, opts)
	if err != nil {
		return nil, err
	}
	return countingSandbox{s, p.n}, nil
}

func (p countingProvider) Immediate() bool {
	im, ok := p.Provider.(env.Immediate)
	return ok && im.Immediate()
}

func (p countingProvider) Stats() env.SandboxStats {
	if s, ok := p.Provider.(env.ProviderStats); ok {
		return s.Stats()
	}
	return env.SandboxStats{}
}

func (s countingSandbox) Exec(ctx context.Context, opts env.ExecOptions) (env.ExecResult, error) {
	s.n.Add(1)
	return s.Sandbox.Exec(ctx, opts)
}

// check that the sandbox counter keeps the simulated provider's inline mode.
var _ env.Immediate = countingProvider{}

// Run runs one strategy with one seed on the simulation until the budget
// of test executions is spent, and measures its held-out curve.
func (s *Sim) Run(ctx context.Context, a Arm, seed uint64) (Result, error) {
	o, h := s.o, s.heldout
	start := time.Now()
	strategy := a.Name
	scfg := envsim.DefaultConfig()
	scfg.Seed = seed
	sp, err := envsim.New(scfg)
	if err != nil {
		return Result{}, err
	}
	var execs atomic.Int64
	prov := countingProvider{sp, &execs}
	cur, err := s.deps.Curriculum(a, seed, 0)
	if err != nil {
		return Result{}, err
	}
	oracle := policysim.NewOracle()
	learner := policysim.NewLearner(o.InitialSkill, o.LearningRate, seed, oracle)
	src := synthsim.NewBinned(seed, o.TaskSpread, o.Noise)
	var mu sync.Mutex
	type point struct {
		execs int64
		skill float64
	}
	curve := []point{{0, o.InitialSkill}}
	cfg := actors.DefaultConfig()
	cfg.Run = "experiment"
	// In the simulation an episode runs its tests once: the budget in
	// test executions is the budget in episodes (checked below).
	cfg.Episodes, cfg.Concurrency, cfg.GroupSize, cfg.GroupsPerUpdate, cfg.TaskRefill = o.Budget, o.Concurrency, o.GroupSize, o.GroupsPer, o.TaskRefill
	cfg.RefillZeroVariance = o.refill(a)
	tasks := newDistinct()
	deps := actors.Deps{
		Provider: prov, Learner: learner, Source: taskenv.OracleSource(src, oracle, taskenv.FixFor(src)),
		Curriculum: cur, Log: s.deps.Log.Level(zerolog.WarnLevel), OnEpisode: tasks.add,
		OnUpdate: func(r actors.UpdateRecord) {
			mu.Lock()
			curve = append(curve, point{execs.Load(), r.Extra["skill"]})
			mu.Unlock()
		},
	}
	sum, err := runWhole(ctx, cfg, deps)
	if err != nil {
		return Result{}, err
	}
	mu.Lock()
	defer mu.Unlock()
	curve = append(curve, point{execs.Load(), learner.Skill()})
	r := newResult(o, s.deps.Version, strategy, seed, execs.Load(), sum, len(h.d))
	r.FinalSkill = learner.Skill()
	r.Distinct = tasks.n()
	if r.Executions != o.Budget {
		return r, fmt.Errorf("spent %d test executions of a budget of %d", r.Executions, o.Budget)
	}
	// The curve at Points+1 evenly spaced budgets: the skill after the last
	// update that had been applied by then.
	j := 0
	for i := 0; i <= o.Points; i++ {
		x := o.Budget * int64(i) / int64(o.Points)
		for j+1 < len(curve) && curve[j+1].execs <= x {
			j++
		}
		y := h.rate(curve[j].skill)
		if i == o.Points {
			y = h.rate(learner.Skill())
		}
		r.CurveX, r.CurveY = append(r.CurveX, x), append(r.CurveY, y)
		if r.Reach < 0 && y >= o.TargetSolve {
			r.Reach = x
		}
	}
	r.Final = r.CurveY[len(r.CurveY)-1]
	r.AUC = policy.Mean(r.CurveY)
	r.Seconds = time.Since(start).Seconds()
	return r, nil
}
