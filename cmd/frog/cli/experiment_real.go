package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/frognano/frog/actors"
	"github.com/frognano/frog/cuda"
	"github.com/frognano/frog/curriculum"
	"github.com/frognano/frog/env"
	"github.com/frognano/frog/gotask"
	"github.com/frognano/frog/policy"
	"github.com/frognano/frog/policy/neural"
	"github.com/frognano/frog/run"
	"github.com/frognano/frog/run/taskenv"
	"github.com/frognano/frog/synth"
	"github.com/frognano/frog/synth/store"
)

// realOptions are the flags only --mode real reads; config.json records
// them (nil in sim mode, so that sim experiments made before them still
// match).
type realOptions struct {
	Tasks     string         `json:"tasks"`
	Heldout   string         `json:"heldout"`
	Tries     int            `json:"tries"`
	EvalTries int            `json:"eval_tries"`
	Sandbox   sandboxOptions `json:"sandbox"`
	Learner   neural.Config  `json:"learner"`
	// TryCost is frog train's --try-cost (actors.Config.TryCost).
	TryCost  float64     `json:"try_cost"`
	Device   string      `json:"device"`
	TaskOpts taskOptions `json:"task_options"`
}

func (r *realOptions) flags(f *pflag.FlagSet) {
	f.StringVar(&r.Tasks, "tasks", "runs/train-tasks.jsonl", "real: the training task store every run draws from (make run writes this one; or frog synth --n 200 --out FILE)")
	f.StringVar(&r.Heldout, "heldout-tasks", "tasks/heldout.jsonl", "real: the held-out store (modules never trained on); --heldout tasks of it, a fixed seeded sample")
	f.IntVar(&r.Tries, "tries", 5, "real: most candidates a training episode may try")
	f.IntVar(&r.EvalTries, "eval-tries", 10, "real: most candidates a held-out episode may try")
	f.StringVar(&r.Device, "device", "auto", "real: tensor backend of the learners (auto, cpu or cuda)")
	f.Float64Var(&r.Learner.LR, "lr", r.Learner.LR, "real: the learners' Adam learning rate")
	f.Float64Var(&r.TryCost, "try-cost", defaultTryCost, "real: what GRPO takes off a rewarded rollout's return per try beyond the first, as in frog train (0: compare 0/1 rewards, as experiments made before the flag did)")
	f.StringVar(&r.Learner.Credit, "credit", r.Learner.Credit, "real: what each decision is advantaged by, as in frog train: episode or try")
	r.Sandbox.flags(f, "process")
	r.TaskOpts.flags(f)
}

// realDefaults sets the flags whose sim defaults do not fit real tasks,
// unless the command line set them.
func (o *experimentOptions) realDefaults(c *cobra.Command) {
	changed := c.Flags().Changed
	if !changed("budget") {
		o.Budget = 6000
	}
	if !changed("seeds") {
		o.Seeds = 3
	}
	if !changed("points") {
		o.Points = 2
	}
	if !changed("concurrency") {
		o.Concurrency = 2 * runtime.NumCPU()
	}
	if !changed("heldout") {
		o.Heldout = 40
	}
	if !changed("task-refill") {
		o.TaskRefill = 2
	}
	if !changed("target-solve") {
		o.TargetSolve = 0.35
	}
	if !changed("strategies") {
		o.Strategies = []string{curriculum.StrategyFrontier, curriculum.StrategyUniform, "easy", "hard"}
	}
}

// realExperiment is what every run of --mode real shares: the sandboxes,
// the workspaces, the training store, and the held-out tasks (checked
// once) with the harness that plays them.
type realExperiment struct {
	o       *experimentOptions
	ws      *gotask.Workspaces
	prov    env.Provider
	eval    *taskenv.Env
	heldout []actors.EvalTask
	train   []synth.TaskRecord
	backend cuda.Backend
	log     zerolog.Logger
	// start holds the held-out point of each seed's initial policy: the
	// same for every strategy, measured once.
	start map[uint64]heldoutPoint
}

func openRealExperiment(ctx context.Context, o *experimentOptions, log zerolog.Logger) (*realExperiment, func(), error) {
	r := o.Real
	train, err := store.Load(r.Tasks)
	if err != nil {
		return nil, nil, usagef("--tasks %s: %v (make run writes runs/train-tasks.jsonl; or run frog synth --n 200 --out %s)", r.Tasks, err, r.Tasks)
	}
	recs, err := taskenv.Load("--heldout-tasks", r.Heldout, 0, o.Heldout, log)
	if err != nil {
		return nil, nil, err
	}
	backend, why, err := cuda.Open(r.Device)
	if err != nil {
		return nil, nil, &UsageError{Err: err}
	}
	log.Info().Str("backend", backend.Name()).Str("why", why).Msg("tensor backend")
	tenv, prov, release, err := openTaskEnv(ctx, r.TaskOpts, sandboxSpec{sandboxOptions: r.Sandbox, Run: "experiment", Concurrency: o.Concurrency}, log)
	if err != nil {
		backend.Close()
		return nil, nil, err
	}
	closeAll := func() { release(); backend.Close() }
	heldout, quarantined, err := tenv.Check(ctx, recs, o.Concurrency, log)
	if err == nil {
		heldout, err = fixHeldout(o.Dir, recs, heldout, quarantined, log)
	}
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	log.Info().Int("tasks", len(heldout)).Int("quarantined", len(quarantined)).Int("train_tasks", len(train)).Msg("held-out tasks checked")
	x := &realExperiment{o: o, ws: tenv.Workspaces, prov: prov, eval: tenv, heldout: heldout, train: train, backend: backend, log: log,
		start: map[uint64]heldoutPoint{}}
	return x, closeAll, nil
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
		return nil, usagef("%s names %d held-out tasks; --heldout-tasks and --heldout give %d of them (another store or sample?)", path, len(rec.Tasks), len(out))
	}
	if len(checked) != len(out) {
		log.Warn().Int("kept_first", len(out)).Int("kept_now", len(checked)).Msg("this check kept other held-out tasks than the first: playing the first's, as every run before")
	}
	return out, nil
}

// runReal runs one strategy with one seed: the neural policy trained by
// GRPO on the training store, the curriculum choosing its tasks, until
// the budget of test executions is spent; then the policy of each point
// of the curve is evaluated, greedy, on the held-out tasks.
//
// Every run has its own harness and outcome cache, so that no run is
// answered from an earlier run's tests: the budget counts the tests a run
// had to run, and a repeated state its cache answers is free (as it is in
// frog train; --no-outcome-cache makes every one count). The held-out
// evaluations share one harness (a cached answer there is the answer the
// policy would get, and only saves time).
func (x *realExperiment) runReal(ctx context.Context, strategy string, seed uint64) (runResult, error) {
	o, start := x.o, time.Now()
	name := fmt.Sprintf("exp-%s-%d", strategy, seed)
	key, err := gotask.LoadVerdictKey(filepath.Join(filepath.Dir(x.ws.Root()), "verdict.key"))
	if err != nil {
		return runResult{}, err
	}
	h := gotask.NewHarness(x.ws, gotask.HarnessConfig{NoCache: o.Real.TaskOpts.NoCache, BinCache: filepath.Join(x.ws.Root(), "bin"), VerdictKey: key})
	q := gotask.NewQuarantine(x.ws, h, x.prov, name, x.log)
	st, err := store.NewSource(x.train, seed)
	if err != nil {
		return runResult{}, usagef("--tasks %s: %v", o.Real.Tasks, err)
	}
	cur, err := newCurriculum(curriculumSpec{Name: strategy, Difficulty: 4, PassRate: defaultPassRate, Rate: defaultTargetRate, Replay: o.Replay, Seed: seed, GroupsPerUpdate: o.GroupsPer})
	if err != nil {
		return runResult{}, err
	}
	lcfg := o.Real.Learner
	lcfg.Seed = seed
	learner, err := neural.NewLearner(x.backend, lcfg)
	if err != nil {
		return runResult{}, err
	}
	defer learner.Close()

	// The curve's points: the policy applied when the run had spent
	// budget·i/points test executions.
	xs := make([]int64, o.Points+1)
	for i := range xs {
		xs[i] = o.Budget * int64(i) / int64(o.Points)
	}
	snaps := make([]*neural.Policy, len(xs))
	snap := learner.Current // an immutable snapshot
	snaps[0] = snap()
	var (
		mu        sync.Mutex
		last      = snaps[0]
		next      = 1
		execs     atomic.Int64
		drainOnce sync.Once
	)
	drain := make(chan struct{})
	cfg := actors.DefaultConfig()
	cfg.Run = name
	// The drain ends admission at the budget. Cached answers are free, so
	// episodes are bounded too (maxRealEpisodes), in case a run's tasks
	// all come to be answered from its cache.
	cfg.Episodes, cfg.Concurrency, cfg.GroupSize, cfg.GroupsPerUpdate, cfg.TaskRefill = maxRealEpisodes, o.Concurrency, o.GroupSize, o.GroupsPer, o.TaskRefill
	cfg.MaxTries, cfg.MaxSteps, cfg.RefillZeroVariance = o.Real.Tries, env.StepsForTries(o.Real.Tries), o.Refill
	cfg.TryCost = o.Real.TryCost
	deps := actors.Deps{
		Provider: x.prov, Learner: learner, Source: q.Source(st), Curriculum: cur, Harness: h,
		Log: x.log.Level(zerolog.WarnLevel), Drain: drain,
		OnEpisode: func(r *actors.EpisodeResult) {
			if r.Trajectory != nil && execs.Add(int64(r.Trajectory.Executions)) >= o.Budget {
				drainOnce.Do(func() { close(drain) })
			}
		},
		OnUpdate: func(u actors.UpdateRecord) {
			e := execs.Load()
			mu.Lock()
			defer mu.Unlock()
			for next < len(xs) && xs[next] < e {
				snaps[next] = last
				next++
				x.log.Info().Str("strategy", strategy).Uint64("seed", seed).Int64("test_executions", e).Int64("update", u.Update).
					Float64("seconds", time.Since(start).Seconds()).Msgf("point %d of %d reached", next-1, o.Points)
			}
			last = snap()
		},
	}
	sum, err := runWhole(ctx, cfg, deps)
	if err != nil {
		return runResult{}, err
	}
	mu.Lock()
	for ; next < len(xs); next++ {
		snaps[next] = snap()
	}
	mu.Unlock()

	r := newRunResult(o, strategy, seed, execs.Load(), sum, len(x.heldout))
	r.Quarantined = len(q.Quarantined())
	r.TrainSeconds = time.Since(start).Seconds()
	if err := x.curve(ctx, name, seed, &r, snaps, xs); err != nil {
		return runResult{}, err
	}
	r.Final = r.CurveY[len(r.CurveY)-1]
	r.AUC = policy.Mean(r.CurveY)
	r.Seconds = time.Since(start).Seconds()
	return r, nil
}

// curve evaluates on the held-out tasks each of snaps, the policies at
// the test executions xs (the run's start once per seed, a policy unchanged
// since the last point not again), and adds the points, the curve and
// the budget at which it reached --target-solve to r.
func (x *realExperiment) curve(ctx context.Context, name string, seed uint64, r *runResult, snaps []*neural.Policy, xs []int64) error {
	o := x.o
	var err error
	for i, p := range snaps {
		var pt heldoutPoint
		if i == 0 {
			if v, ok := x.start[seed]; ok {
				pt = v
			} else if pt, err = x.evaluate(ctx, name, p); err != nil {
				return err
			}
			x.start[seed] = pt
		} else if snaps[i] == snaps[i-1] {
			pt = r.Points[i-1] // no update between the two points
		} else if pt, err = x.evaluate(ctx, name, p); err != nil {
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

// heldoutPoint is one point of a real run's held-out curve: the solve
// rate, the rate within the first try, and the tries an episode made. The
// last two move when the policy's ranking does, even where the solve rate
// stands still.
type heldoutPoint struct {
	Solved          float64 `json:"solved"`
	SolvedFirstTry  float64 `json:"solved_first_try"`
	TriesPerEpisode float64 `json:"tries_per_episode"`
}

// evaluate plays the held-out tasks with p, greedy.
func (x *realExperiment) evaluate(ctx context.Context, name string, p *neural.Policy) (heldoutPoint, error) {
	g := *p
	g.Greedy = true
	cfg := actors.DefaultConfig()
	cfg.Run, cfg.Concurrency, cfg.MaxTries, cfg.MaxSteps = name+"-eval", x.o.Concurrency, x.o.Real.EvalTries, env.StepsForTries(x.o.Real.EvalTries)
	rep, err := actors.EvaluateWhole(ctx, actors.EvalConfig{Run: cfg, Tasks: x.heldout}, &g,
		actors.Deps{Provider: x.prov, Harness: x.eval.Harness, Log: zerolog.Nop()})
	if err != nil {
		return heldoutPoint{}, fmt.Errorf("held-out evaluation: %w", err)
	}
	pt := heldoutPoint{Solved: rep.Solved.Rate, TriesPerEpisode: rep.Cost.TriesPerEpisode}
	for _, a := range rep.AtTries {
		if a.Tries == 1 {
			pt.SolvedFirstTry = a.Rate.Rate
		}
	}
	return pt, nil
}
