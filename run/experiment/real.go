package experiment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/frognano/frog/actors"
	"github.com/frognano/frog/cuda"
	"github.com/frognano/frog/env"
	"github.com/frognano/frog/gotask"
	"github.com/frognano/frog/policy"
	"github.com/frognano/frog/policy/neural"
	"github.com/frognano/frog/run"
	"github.com/frognano/frog/run/taskenv"
	"github.com/frognano/frog/synth"
	"github.com/frognano/frog/synth/store"
)

// Real runs the strategies of Mode "real": it is what every run shares:
// the sandboxes, the workspaces, the training store, and the held-out
// tasks (checked once) with the harness that plays them.
type Real struct {
	o       Options
	deps    Deps
	ws      *gotask.Workspaces
	prov    env.Provider
	eval    *taskenv.Env
	heldout []actors.EvalTask
	train   []synth.TaskRecord
	backend cuda.Backend
	log     zerolog.Logger
	release func()
	// start holds the held-out point of each seed's initial policy: the
	// same for every strategy, measured once.
	start map[uint64]HeldoutPoint
}

var _ Runner = (*Real)(nil)

// OpenReal loads the training store and the held-out tasks, opens the
// tensor backend and the sandboxes (deps.Tensor, deps.Sandboxes), checks
// the held-out tasks and fixes them for the whole experiment
// (heldout.json), and takes each seed's starting point from the results
// o.Dir holds. Close releases what it opened.
func OpenReal(ctx context.Context, o Options, deps Deps) (*Real, error) {
	r, log := o.Real, deps.Log
	train, err := store.Load(r.Tasks)
	if err != nil {
		return nil, run.Usagef("--tasks %s: %v (make run writes runs/train-tasks.jsonl; or run frog synth --n 200 --out %s)", r.Tasks, err, r.Tasks)
	}
	recs, err := taskenv.Load("--heldout-tasks", r.Heldout, 0, o.Heldout, log)
	if err != nil {
		return nil, err
	}
	backend, why, err := deps.Tensor(r.Device)
	if err != nil {
		return nil, &run.UsageError{Err: err}
	}
	log.Info().Str("backend", backend.Name()).Str("why", why).Msg("tensor backend")
	sb := taskenv.Sandboxes{SandboxOptions: r.Sandbox, Run: "experiment", Concurrency: o.Concurrency}
	tenv, prov, release, err := taskenv.Open(ctx, r.TaskOpts, sb, deps.Sandboxes, log)
	if err != nil {
		backend.Close()
		return nil, err
	}
	x := &Real{o: o, deps: deps, ws: tenv.Workspaces, prov: prov, eval: tenv, train: train, backend: backend, log: log,
		release: release, start: map[uint64]HeldoutPoint{}}
	heldout, quarantined, err := tenv.Check(ctx, recs, o.Concurrency, log)
	if err == nil {
		heldout, err = fixHeldout(o.Dir, recs, heldout, quarantined, log)
	}
	if err != nil {
		x.Close()
		return nil, err
	}
	x.heldout = heldout
	log.Info().Int("tasks", len(heldout)).Int("quarantined", len(quarantined)).Int("train_tasks", len(train)).Msg("held-out tasks checked")
	results, err := ReadResults(o.Dir)
	if err != nil {
		x.Close()
		return nil, err
	}
	for _, r := range results {
		switch {
		case len(r.Points) > 0:
			x.start[r.Seed] = r.Points[0]
		case len(r.CurveY) > 0: // a result from before Points
			x.start[r.Seed] = HeldoutPoint{Solved: r.CurveY[0]}
		}
	}
	return x, nil
}

// Close releases the sandboxes and the tensor backend.
func (x *Real) Close() {
	x.release()
	x.backend.Close()
}

// heldoutRecord is heldout.json in an experiment directory: the held-out
// tasks its first invocation checked and kept.
type heldoutRecord struct {
	Tasks       []string `json:"tasks"`
	Quarantined []string `json:"quarantined"`
}

// fixHeldout keeps the held-out set one for the whole experiment: the
// first invocation records the tasks its check kept; a later one plays
// those same tasks, whatever its own check said (a flaky test may pass the
// check once and fail it the next time), and says where the two differ.
func fixHeldout(dir string, recs []synth.TaskRecord, checked []actors.EvalTask, quarantined []string, log zerolog.Logger) ([]actors.EvalTask, error) {
	path := filepath.Join(dir, "heldout.json")
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		rec := heldoutRecord{Quarantined: quarantined}
		for _, t := range checked {
			rec.Tasks = append(rec.Tasks, t.Task.ID)
		}
		// Run makes the directory only once the runner has opened.
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("experiment directory: %w", err)
		}
		return checked, run.WriteJSONAtomic(path, rec)
	}
	if err != nil {
		return nil, err
	}
	var rec heldoutRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	keep := map[string]bool{}
	for _, id := range rec.Tasks {
		keep[id] = true
	}
	var out []actors.EvalTask
	for _, r := range recs {
		if keep[r.ID] {
			out = append(out, taskenv.EvalTask(r))
		}
	}
	if len(out) != len(rec.Tasks) {
		return nil, run.Usagef("%s names %d held-out tasks; --heldout-tasks and --heldout give %d of them (another store or sample?)", path, len(rec.Tasks), len(out))
	}
	if len(checked) != len(out) {
		log.Warn().Int("kept_first", len(out)).Int("kept_now", len(checked)).Msg("this check kept other held-out tasks than the first: playing the first's, as every run before")
	}
	return out, nil
}

// Run runs one strategy with one seed: the neural policy trained by GRPO
// on the training store, the curriculum choosing its tasks, until the
// budget of test executions (or of episodes, RealOptions.BudgetEpisodes)
// is spent; then the policy of each point of the curve is evaluated,
// greedy, on the held-out tasks.
//
// Every run has its own harness and outcome cache, so that no run is
// answered from an earlier run's tests: the budget counts the tests a run
// had to run, and a repeated state its cache answers is free (as it is in
// frog train; --no-outcome-cache makes every one count). The held-out
// evaluations share one harness (a cached answer there is the answer the
// policy would get, and only saves time).
func (x *Real) Run(ctx context.Context, a Arm, seed uint64) (Result, error) {
	o, start := x.o, time.Now()
	strategy := a.Name
	name := fmt.Sprintf("exp-%s-%d", strategy, seed)
	key, err := gotask.LoadVerdictKey(filepath.Join(filepath.Dir(x.ws.Root()), "verdict.key"))
	if err != nil {
		return Result{}, err
	}
	h := gotask.NewHarness(x.ws, gotask.HarnessConfig{NoCache: o.Real.TaskOpts.NoCache, RestoreList: o.Real.TaskOpts.RestoreList, BinCache: filepath.Join(x.ws.Root(), "bin"), VerdictKey: key})
	q := gotask.NewQuarantine(x.ws, h, x.prov, name, x.log)
	st, err := store.NewSource(x.train, seed)
	if err != nil {
		return Result{}, run.Usagef("--tasks %s: %v", o.Real.Tasks, err)
	}
	cur, err := x.deps.Curriculum(a, seed, 4)
	if err != nil {
		return Result{}, err
	}
	lcfg := o.Real.Learner
	lcfg.Seed = seed
	learner, err := neural.NewLearner(x.backend, lcfg)
	if err != nil {
		return Result{}, err
	}
	defer learner.Close()

	// The curve's points: the policy applied when the run had spent
	// budget·i/points test executions (or episodes).
	pts := newPoints(o.Budget, o.Points, learner.Current)
	var (
		execs, episodes atomic.Int64
		drainOnce       sync.Once
		tasks           = newDistinct()
	)
	spent := &execs
	drain := make(chan struct{})
	cfg := actors.DefaultConfig()
	cfg.Run = name
	// The drain ends admission at a budget of test executions. Cached
	// answers are free, so episodes are bounded too (maxRealEpisodes), in
	// case a run's tasks all come to be answered from its cache. A budget
	// of episodes is the run's episodes, every one charged.
	cfg.Episodes, cfg.Concurrency, cfg.GroupSize, cfg.GroupsPerUpdate, cfg.TaskRefill = maxRealEpisodes, o.Concurrency, o.GroupSize, o.GroupsPer, o.TaskRefill
	if o.Real.BudgetEpisodes {
		cfg.Episodes, spent = o.Budget, &episodes
	}
	cfg.MaxTries, cfg.MaxSteps, cfg.RefillZeroVariance = o.Real.Tries, env.StepsForTries(o.Real.Tries), o.refill(a)
	cfg.TryCost = o.Real.TryCost
	deps := actors.Deps{
		Provider: x.prov, Learner: learner, Source: q.Source(st), Curriculum: cur, Harness: h,
		Log: x.log.Level(zerolog.WarnLevel), Drain: drain,
		OnEpisode: func(r *actors.EpisodeResult) {
			tasks.add(r)
			episodes.Add(1)
			if r.Trajectory != nil && execs.Add(int64(r.Trajectory.Executions)) >= o.Budget && !o.Real.BudgetEpisodes {
				drainOnce.Do(func() { close(drain) })
			}
		},
		OnUpdate: func(u actors.UpdateRecord) {
			e := spent.Load()
			pts.reach(e, func(i int) {
				x.log.Info().Str("strategy", strategy).Uint64("seed", seed).Int64("test_executions", execs.Load()).Int64("episodes", episodes.Load()).
					Int64("update", u.Update).Float64("seconds", time.Since(start).Seconds()).Msgf("point %d of %d reached", i, o.Points)
			})
		},
	}
	sum, err := runWhole(ctx, cfg, deps)
	if err != nil {
		return Result{}, err
	}
	xs, snaps := pts.rest()
	r := newResult(o, x.deps.Version, strategy, seed, spent.Load(), sum, len(x.heldout))
	r.Quarantined = len(q.Quarantined())
	r.Distinct = tasks.n()
	r.TrainSeconds = time.Since(start).Seconds()
	if err := x.curve(ctx, name, seed, &r, snaps, xs); err != nil {
		return Result{}, err
	}
	r.Final = r.CurveY[len(r.CurveY)-1]
	r.AUC = policy.Mean(r.CurveY)
	r.Seconds = time.Since(start).Seconds()
	return r, nil
}

// curve evaluates on the held-out tasks each of snaps, the policies at
// the test executions xs (the run's start once per seed, a policy unchanged
// since the last point not again), and adds the points, the curve and
// the budget at which it reached the target solve rate to r.
func (x *Real) curve(ctx context.Context, name string, seed uint64, r *Result, snaps []*neural.Policy, xs []int64) error {
	return measureCurve(x.o, x.start, seed, r, snaps, xs, func(p *neural.Policy) (HeldoutPoint, error) { return x.evaluate(ctx, name, p) })
}

// measureCurve evaluates each of snaps, the policies at the budgets xs,
// with evaluate: the first (the run's start) once per seed, kept in
// start; a policy unchanged since the last point not again. It adds the
// points, the curve and the budget at which it reached o's target solve
// rate to r.
func measureCurve(o Options, start map[uint64]HeldoutPoint, seed uint64, r *Result, snaps []*neural.Policy, xs []int64, evaluate func(*neural.Policy) (HeldoutPoint, error)) error {
	var err error
	for i, p := range snaps {
		var pt HeldoutPoint
		if i == 0 {
			if v, ok := start[seed]; ok {
				pt = v
			} else if pt, err = evaluate(p); err != nil {
				return err
			}
			start[seed] = pt
		} else if snaps[i] == snaps[i-1] {
			pt = r.Points[i-1] // no update between the two points
		} else if pt, err = evaluate(p); err != nil {
			return err
		}
		y := pt.Solved
		r.Points = append(r.Points, pt)
		r.CurveX, r.CurveY = append(r.CurveX, xs[i]), append(r.CurveY, y)
		if r.Reach < 0 && y >= o.TargetSolve {
			r.Reach = xs[i]
		}
	}
	return nil
}

// maxRealEpisodes bounds a real run's episodes whatever its budget.
const maxRealEpisodes = 100000

// evaluate plays the held-out tasks with p, greedy.
func (x *Real) evaluate(ctx context.Context, name string, p *neural.Policy) (HeldoutPoint, error) {
	g := *p
	g.Greedy = true
	cfg := actors.DefaultConfig()
	cfg.Run, cfg.Concurrency, cfg.MaxTries, cfg.MaxSteps = name+"-eval", x.o.Concurrency, x.o.Real.EvalTries, env.StepsForTries(x.o.Real.EvalTries)
	rep, err := actors.EvaluateWhole(ctx, actors.EvalConfig{Run: cfg, Tasks: x.heldout}, &g,
		actors.Deps{Provider: x.prov, Harness: x.eval.Harness, Log: zerolog.Nop()})
	if err != nil {
		return HeldoutPoint{}, fmt.Errorf("held-out evaluation: %w", err)
	}
	return heldoutPoint(rep), nil
}

// heldoutPoint is what a held-out evaluation measured, as a point of the
// curve.
func heldoutPoint(rep actors.EvalReport) HeldoutPoint {
	pt := HeldoutPoint{Solved: rep.Solved.Rate, TriesPerEpisode: rep.Cost.TriesPerEpisode, AtTries: rep.AtTries, MRR: &rep.MRR, ByFamily: rep.ByFamily}
	for _, a := range rep.AtTries {
		if a.Tries == 1 {
			pt.SolvedFirstTry = a.Rate.Rate
		}
	}
	return pt
}
