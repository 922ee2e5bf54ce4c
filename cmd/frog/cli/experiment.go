package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image/color"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/frognano/frog/actors"
	"github.com/frognano/frog/curriculum"
	"github.com/frognano/frog/env"
	envsim "github.com/frognano/frog/env/sim"
	"github.com/frognano/frog/policy"
	"github.com/frognano/frog/policy/neural"
	policysim "github.com/frognano/frog/policy/sim"
	"github.com/frognano/frog/run"
	"github.com/frognano/frog/run/taskenv"
	"github.com/frognano/frog/synth"
	synthsim "github.com/frognano/frog/synth/sim"
)

func newExperimentCmd(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "experiment",
		Short: "Controlled experiments: curricula compared at one budget",
		Args:  cobra.NoArgs,
	}
	c.AddCommand(newExperimentCurriculumCmd(g))
	return c
}

// experimentOptions are the flags of `frog experiment curriculum`; the
// experiment directory's config.json records them.
type experimentOptions struct {
	Mode         string        `json:"mode"`
	Strategies   []string      `json:"strategies,omitempty"`
	Seeds        int           `json:"seeds,omitempty"`
	FirstSeed    uint64        `json:"first_seed,omitempty"`
	Budget       int64         `json:"budget"`
	Points       int           `json:"points"`
	Concurrency  int           `json:"concurrency"`
	GroupSize    int           `json:"group_size"`
	GroupsPer    int           `json:"groups_per_update"`
	TaskRefill   int           `json:"task_refill"`
	Refill       bool          `json:"refill_zero_variance"`
	LearningRate float64       `json:"learning_rate"`
	InitialSkill float64       `json:"initial_skill"`
	TaskSpread   float64       `json:"task_spread"`
	Noise        float64       `json:"estimate_noise"`
	Heldout      int           `json:"heldout"`
	TargetSolve  float64       `json:"target_solve"`
	Replay       replayOptions `json:"replay_options"`
	Real         *realOptions  `json:"real,omitempty"`

	Dir  string `json:"-"`
	JSON bool   `json:"-"`
}

func newExperimentCurriculumCmd(g *globals) *cobra.Command {
	o := &experimentOptions{Real: &realOptions{Learner: neural.DefaultConfig()}}
	c := &cobra.Command{
		Use:   "curriculum",
		Short: "Compare curricula at one budget of test executions: held-out solve rate per strategy, with intervals",
		Long: `curriculum runs every strategy (--strategies) with every seed (--seeds) at the
same budget, counted in test executions (a strategy whose tasks are cheaper gains
nothing), and evaluates each run on one fixed held-out task set from modules never
trained on. It prints a table per strategy — the final held-out solve rate, the
area under the held-out curve, the zero-variance share of GRPO groups, the test
executions needed to reach --target-solve — with 95% bootstrap intervals over
seeds, and the paired difference of each strategy from uniform on the same seeds
and held-out tasks; and draws the held-out curves (curriculum.png, .svg).

Results are appended to the experiment directory (--dir: config.json,
results.jsonl, table.txt, the plot): a run already there is not run again, so
an interrupted experiment resumes, and strategies or seeds can be run a few at
a time into one directory.

--mode sim uses frog sim's named simulation with binned tasks (sim-bins: an
operator family, k, locality and a module shift a task's difficulty; the stmt
family, a statement deleted, is out of reach), one test execution per episode,
and the held-out solve rate of the simulated agent computed exactly (the mean
of σ(skill − d) over the held-out tasks). It is a model, not evidence about
real agents: see docs/sim-model.md and docs/curriculum.md.

--mode real trains frog's neural repair policy by GRPO, as frog train does, on
real tasks drawn by the curriculum from one training store (--tasks), played in
real sandboxes (--sandbox, process by default) and judged by their own tests.
The budget counts the test executions a run's harness ran: each run has its own
outcome cache, whose answers are free (--no-outcome-cache counts every one);
admission stops at the budget and the episodes then running finish (the
results say by how much they overshot). The held-out tasks (--heldout of
--heldout-tasks, a fixed sample from modules never trained on; the tasks the
first invocation's check kept are recorded in heldout.json and played by every
later one) are played greedily, --eval-tries tries each, by the policy of each
of --points+1 points of the run's budget. Defaults for real mode: strategies
frontier, uniform, easy and hard; --seeds 3; --budget 6000 (about 5 minutes a
run on 2 cores: the whole experiment in about an hour); --points 2; --heldout
40; --concurrency 2×CPUs; --task-refill 2.`,
		Example: `  frog experiment curriculum --mode sim --seeds 5 --budget 40000
  frog experiment curriculum --strategies frontier,uniform --seeds 3 --dir runs/exp-curriculum
  frog experiment curriculum --mode real --seeds 3 --tasks runs/train-tasks.jsonl --dir runs/exp-real`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return runExperiment(c.Context(), g, o) },
	}
	f := c.Flags()
	f.StringVar(&o.Mode, "mode", "sim", "sim (the named simulation) or real (frog's neural policy trained on real tasks)")
	f.StringSliceVar(&o.Strategies, "strategies", append(slices.Clone(curriculum.Strategies), "target"), "curricula to compare (--curriculum values)")
	f.IntVar(&o.Seeds, "seeds", 5, "seeds per strategy")
	f.Uint64Var(&o.FirstSeed, "first-seed", 1, "the first seed; seeds are first-seed, first-seed+1, …")
	f.Int64Var(&o.Budget, "budget", 40000, "test executions per run")
	f.IntVar(&o.Points, "points", 20, "points of the held-out curve")
	f.IntVar(&o.Concurrency, "concurrency", 32, "episodes running at once in each run")
	f.IntVar(&o.GroupSize, "group-size", 8, "GRPO group size")
	f.IntVar(&o.GroupsPer, "groups-per-update", 4, "groups per learner update")
	f.BoolVar(&o.Refill, "refill-zero-variance", true, "drop groups whose rewards are all equal from the batches and plan new ones (as frog train does)")
	f.IntVar(&o.TaskRefill, "task-refill", 4, "fewest tasks asked of the synthesizer at once (small: steering acts sooner)")
	f.Float64Var(&o.LearningRate, "learning-rate", 0.004, "sim: skill gained per unit of learning signal")
	f.Float64Var(&o.InitialSkill, "initial-skill", 0, "sim: the agent's starting skill")
	f.Float64Var(&o.TaskSpread, "task-spread", 0.5, "sim: standard deviation of a task's difficulty around its bin's")
	f.Float64Var(&o.Noise, "estimate-noise", 0.5, "sim: standard deviation of a task's difficulty estimate around its true difficulty")
	f.IntVar(&o.Heldout, "heldout", 500, "held-out tasks (one fixed set for every run)")
	f.Float64Var(&o.TargetSolve, "target-solve", 0.3, "held-out solve rate whose cost in test executions the table reports")
	o.Replay.flags(f)
	o.Real.flags(f)
	f.StringVar(&o.Dir, "dir", "", "experiment directory (default runs/experiment-curriculum-<mode>-<UTC time>)")
	f.BoolVar(&o.JSON, "json", false, "print the table as one JSON object")
	c.PreRunE = func(c *cobra.Command, _ []string) error {
		switch o.Mode {
		case "real":
			o.realDefaults(c)
		case "sim":
			o.Real = nil
		}
		return o.validate()
	}
	return c
}

func (o *experimentOptions) validate() error {
	switch {
	case o.Mode != "sim" && o.Mode != "real":
		return usagef("--mode %q: want sim or real", o.Mode)
	case len(o.Strategies) == 0:
		return usagef("--strategies: want at least one")
	case o.Seeds < 1:
		return usagef("--seeds %d: want >= 1", o.Seeds)
	case o.Budget < int64(o.GroupSize):
		return usagef("--budget %d: want at least one group (%d)", o.Budget, o.GroupSize)
	case o.Points < 1 || o.Heldout < 1:
		return usagef("--points %d, --heldout %d: want >= 1", o.Points, o.Heldout)
	case o.GroupSize < 2 || o.Concurrency < 1 || o.GroupsPer < 1 || o.TaskRefill < 1:
		return usagef("--group-size >= 2, --concurrency, --groups-per-update and --task-refill >= 1")
	}
	if err := firstErr(inRange("--seeds", o.Seeds, 1, 1<<16), inRange("--points", o.Points, 1, 1<<16), inRange("--concurrency", o.Concurrency, 1, actors.MaxConcurrency),
		inRange("--group-size", o.GroupSize, 2, actors.MaxGroupSize), inRange("--groups-per-update", o.GroupsPer, 1, actors.MaxBatch),
		inRange("--task-refill", o.TaskRefill, 1, actors.MaxBatch)); err != nil {
		return err
	}
	for _, s := range o.Strategies {
		if _, err := newCurriculum(curriculumSpec{Name: s, PassRate: defaultPassRate, Rate: defaultTargetRate, Replay: o.Replay, Seed: 1, GroupsPerUpdate: o.GroupsPer}); err != nil {
			return err
		}
	}
	if r := o.Real; r != nil {
		switch {
		case r.Tries < 1 || r.EvalTries < 1 || r.Tries > actors.MaxSteps-12 || r.EvalTries > actors.MaxSteps-12:
			return usagef("--tries %d, --eval-tries %d: want 1 to %d", r.Tries, r.EvalTries, actors.MaxSteps-12)
		case r.Learner.Validate() != nil:
			return &UsageError{Err: r.Learner.Validate()}
		case !(r.TryCost >= 0 && r.TryCost < 1):
			return usagef("--try-cost %v: want a share in [0, 1)", r.TryCost)
		case r.Device != "auto" && r.Device != "cpu" && r.Device != "cuda":
			return usagef("--device %q: want auto, cpu or cuda", r.Device)
		}
		if err := r.Sandbox.checkCounts(); err != nil {
			return err
		}
		if err := checkSandbox(r.Sandbox.Kind, "docker", "process", "auto"); err != nil {
			return err
		}
		for _, p := range []string{r.Tasks, r.Heldout} {
			if _, err := os.Stat(p); err != nil {
				return usagef("%s: %v", p, err)
			}
		}
	}
	return nil
}

// runResult is one line of results.jsonl: one strategy, one seed.
type runResult struct {
	Strategy   string  `json:"strategy"`
	Seed       uint64  `json:"seed"`
	Budget     int64   `json:"budget"`
	Executions int64   `json:"test_executions"`
	Episodes   int64   `json:"episodes"`
	Final      float64 `json:"final_heldout"`
	AUC        float64 `json:"auc"`
	// Reach is the test executions at which the held-out curve first
	// reached the target solve rate; -1 when it did not.
	Reach      int64     `json:"reach"`
	ZeroSignal float64   `json:"zero_signal_share"`
	FinalSkill float64   `json:"final_skill"`
	CurveX     []int64   `json:"curve_executions"`
	CurveY     []float64 `json:"curve_heldout"`
	// Retired, Frontier: the replay curriculum's state at the end.
	Retired      int     `json:"retired,omitempty"`
	Frontier     int     `json:"frontier_size,omitempty"`
	FreshPass    float64 `json:"fresh_pass_rate,omitempty"`
	TrainPass    float64 `json:"train_pass_rate"`
	Seconds      float64 `json:"seconds"`
	FrogVersion  string  `json:"frog_version"`
	TargetSolve  float64 `json:"target_solve"`
	HeldoutTasks int     `json:"heldout_tasks"`
	// Real mode: the learner's updates, the training tasks quarantined,
	// the seconds the training took (the rest is evaluation).
	Updates int64 `json:"updates,omitempty"`
	// Points are the held-out curve's points in more detail (real mode).
	Points       []heldoutPoint `json:"heldout_points,omitempty"`
	Quarantined  int            `json:"quarantined,omitempty"`
	TrainSeconds float64        `json:"train_seconds,omitempty"`
}

func runExperiment(ctx context.Context, g *globals, o *experimentOptions) error {
	log, err := g.logger()
	if err != nil {
		return err
	}
	if o.Dir == "" {
		o.Dir = filepath.Join("runs", "experiment-curriculum-"+o.Mode+"-"+time.Now().UTC().Format("20060102-150405"))
	}
	done, err := openExperimentDir(o)
	if err != nil {
		return err
	}
	// Seed by seed, every strategy in turn: an experiment cut short holds
	// as many seeds of each strategy, give or take one.
	type pendingRun struct {
		strategy string
		seed     uint64
	}
	var pending []pendingRun
	for i := range o.Seeds {
		seed := o.FirstSeed + uint64(i)
		for _, s := range o.Strategies {
			if !done[runKey(s, seed)] {
				pending = append(pending, pendingRun{s, seed})
			}
		}
	}
	var runOne func(strategy string, seed uint64) (runResult, error)
	switch {
	case len(pending) == 0:
		// Nothing to run: the table from the results there (real mode
		// opens no sandbox and checks no task for it).
	case o.Mode == "sim":
		heldout, err := simHeldout(o)
		if err != nil {
			return err
		}
		runOne = func(s string, seed uint64) (runResult, error) { return runSimExperiment(ctx, o, s, seed, heldout, log) }
	default:
		x, closeX, err := openRealExperiment(ctx, o, log)
		if err != nil {
			return err
		}
		defer closeX()
		results, err := readResults(o.Dir)
		if err != nil {
			return err
		}
		for _, r := range results {
			switch {
			case len(r.Points) > 0:
				x.start[r.Seed] = r.Points[0]
			case len(r.CurveY) > 0: // a result from before Points
				x.start[r.Seed] = heldoutPoint{Solved: r.CurveY[0]}
			}
		}
		runOne = func(s string, seed uint64) (runResult, error) { return x.runReal(ctx, s, seed) }
	}
	for _, p := range pending {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r, err := runOne(p.strategy, p.seed)
		if err != nil {
			return fmt.Errorf("strategy %s seed %d: %w", p.strategy, p.seed, err)
		}
		if err := appendResult(o.Dir, r); err != nil {
			return err
		}
		log.Info().Str("strategy", p.strategy).Uint64("seed", p.seed).Float64("final_heldout", r.Final).
			Float64("seconds", r.Seconds).Msg("run finished")
	}
	results, err := readResults(o.Dir)
	if err != nil {
		return err
	}
	tab := summarize(results, o)
	if err := drawExperiment(o.Dir, tab); err != nil {
		return err
	}
	var buf strings.Builder
	if err := tab.print(&buf); err != nil {
		return err
	}
	if err := run.WriteFileAtomic(filepath.Join(o.Dir, "table.txt"), []byte(buf.String())); err != nil {
		return err
	}
	if o.JSON {
		return json.NewEncoder(g.stdout).Encode(tab)
	}
	_, err = io.WriteString(g.stdout, buf.String())
	return err
}

func runKey(strategy string, seed uint64) string { return fmt.Sprintf("%s\x00%d", strategy, seed) }

// openExperimentDir creates the directory and its config.json, or checks
// that an existing one was made with the same settings, and returns the
// runs it already holds.
func openExperimentDir(o *experimentOptions) (map[string]bool, error) {
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("experiment directory: %w", err)
	}
	cfgPath := filepath.Join(o.Dir, "config.json")
	// What must agree for results to be comparable: everything but the
	// strategies and seeds run this time.
	same := *o
	same.Strategies, same.Seeds, same.FirstSeed = nil, 0, 0
	rec := struct {
		Version string            `json:"frog_version"`
		Command string            `json:"command"`
		Config  experimentOptions `json:"config"`
	}{version(), "experiment curriculum", same}
	if data, err := os.ReadFile(cfgPath); err == nil {
		var old struct {
			Config experimentOptions `json:"config"`
		}
		if err := json.Unmarshal(data, &old); err != nil {
			return nil, usagef("--dir %s: config.json: %v", o.Dir, err)
		}
		a, _ := json.Marshal(old.Config)
		b, _ := json.Marshal(same)
		if string(a) != string(b) {
			return nil, usagef("--dir %s holds an experiment with other settings (%s); want %s", o.Dir, a, b)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	} else if err := run.WriteJSONAtomic(cfgPath, rec); err != nil {
		return nil, err
	}
	results, err := readResults(o.Dir)
	if err != nil {
		return nil, err
	}
	done := map[string]bool{}
	for _, r := range results {
		done[runKey(r.Strategy, r.Seed)] = true
	}
	return done, nil
}

func readResults(dir string) ([]runResult, error) {
	f, err := os.Open(filepath.Join(dir, "results.jsonl"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []runResult
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var r runResult
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			// A line cut by a kill: the run is done again.
			continue
		}
		out = append(out, r)
	}
	return out, sc.Err()
}

// appendResult appends one line and syncs it: a run is recorded whole or
// not at all (a torn last line is skipped when read).
func appendResult(dir string, r runResult) error {
	line, err := json.Marshal(r)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(dir, "results.jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	if _, err = f.Write(append(line, '\n')); err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
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

func simHeldout(o *experimentOptions) (heldoutSet, error) {
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

// runSimExperiment runs one strategy with one seed on the simulation until
// the budget of test executions is spent, and measures its held-out curve.
func runSimExperiment(ctx context.Context, o *experimentOptions, strategy string, seed uint64, h heldoutSet, log zerolog.Logger) (runResult, error) {
	start := time.Now()
	scfg := envsim.DefaultConfig()
	scfg.Seed = seed
	sp, err := envsim.New(scfg)
	if err != nil {
		return runResult{}, err
	}
	var execs atomic.Int64
	prov := countingProvider{sp, &execs}
	cur, err := newCurriculum(curriculumSpec{Name: strategy, PassRate: defaultPassRate, Rate: defaultTargetRate, Replay: o.Replay, Seed: seed, GroupsPerUpdate: o.GroupsPer})
	if err != nil {
		return runResult{}, err
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
	cfg.RefillZeroVariance = o.Refill
	deps := actors.Deps{
		Provider: prov, Learner: learner, Source: taskenv.OracleSource(src, oracle, taskenv.FixFor(src)),
		Curriculum: cur, Log: log.Level(zerolog.WarnLevel),
		OnUpdate: func(r actors.UpdateRecord) {
			mu.Lock()
			curve = append(curve, point{execs.Load(), r.Extra["skill"]})
			mu.Unlock()
		},
	}
	sum, err := runWhole(ctx, cfg, deps)
	if err != nil {
		return runResult{}, err
	}
	mu.Lock()
	defer mu.Unlock()
	curve = append(curve, point{execs.Load(), learner.Skill()})
	r := newRunResult(o, strategy, seed, execs.Load(), sum, len(h.d))
	r.FinalSkill = learner.Skill()
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

// runWhole runs the actors; a run cut short by ctx is an error (an
// experiment keeps whole runs only).
func runWhole(ctx context.Context, cfg actors.Config, deps actors.Deps) (actors.Summary, error) {
	sum, err := actors.Run(ctx, cfg, deps)
	if err == nil {
		err = ctx.Err()
	}
	return sum, err
}

// newRunResult is a run's result before its curve is measured.
func newRunResult(o *experimentOptions, strategy string, seed uint64, execs int64, sum actors.Summary, heldout int) runResult {
	r := runResult{Strategy: strategy, Seed: seed, Budget: o.Budget, Executions: execs, Episodes: sum.Episodes.Completed,
		ZeroSignal: sum.Learner.ZeroSignalShare, Reach: -1, FrogVersion: version(), TargetSolve: o.TargetSolve,
		HeldoutTasks: heldout, Updates: sum.Learner.Updates}
	if sum.Episodes.Completed > 0 {
		r.TrainPass = float64(sum.Episodes.Solved) / float64(sum.Episodes.Completed)
	}
	if f := sum.Curriculum.Frontier; f != nil {
		r.Retired, r.Frontier, r.FreshPass = f.Retired, f.Frontier, f.FreshPassRate
	}
	return r
}

// interval is a mean and its 95% bootstrap interval over seeds.
type interval struct {
	Mean float64 `json:"mean"`
	Lo   float64 `json:"lo"`
	Hi   float64 `json:"hi"`
}

func boot(xs []float64, rng *rand.Rand) interval {
	lo, hi := policy.BootstrapMean(xs, 2000, rng)
	return interval{policy.Mean(xs), lo, hi}
}

// strategyRow is one strategy's line of the table.
type strategyRow struct {
	Strategy   string    `json:"strategy"`
	Seeds      int       `json:"seeds"`
	Final      interval  `json:"final_heldout"`
	AUC        interval  `json:"auc"`
	ZeroSignal interval  `json:"zero_signal_share"`
	TrainPass  float64   `json:"train_pass_rate"`
	Reached    int       `json:"reached"`
	Reach      float64   `json:"reach_median"`
	VsUniform  *interval `json:"final_minus_uniform,omitempty"`
	CurveX     []int64   `json:"curve_executions"`
	Curve      []interval
}

type experimentTable struct {
	Mode        string        `json:"mode"`
	Budget      int64         `json:"budget"`
	TargetSolve float64       `json:"target_solve"`
	Heldout     int           `json:"heldout_tasks"`
	Rows        []strategyRow `json:"strategies"`
	Dir         string        `json:"dir"`
}

func summarize(results []runResult, o *experimentOptions) experimentTable {
	rng := rand.New(rand.NewPCG(1, 2))
	by := map[string][]runResult{}
	var order []string
	for _, r := range results {
		if r.Budget != o.Budget {
			continue
		}
		if by[r.Strategy] == nil {
			order = append(order, r.Strategy)
		}
		by[r.Strategy] = append(by[r.Strategy], r)
	}
	uniform := map[uint64]float64{}
	for _, r := range by[curriculum.StrategyUniform] {
		uniform[r.Seed] = r.Final
	}
	tab := experimentTable{Mode: o.Mode, Budget: o.Budget, TargetSolve: o.TargetSolve, Heldout: o.Heldout, Dir: o.Dir}
	for _, r := range results {
		if r.HeldoutTasks > 0 && r.Budget == o.Budget {
			tab.Heldout = r.HeldoutTasks // what was played: the check may have quarantined some
		}
	}
	for _, s := range order {
		rs := by[s]
		sort.Slice(rs, func(i, j int) bool { return rs[i].Seed < rs[j].Seed })
		var final, auc, zero, train, reach, diff []float64
		for _, r := range rs {
			final, auc, zero, train = append(final, r.Final), append(auc, r.AUC), append(zero, r.ZeroSignal), append(train, r.TrainPass)
			if r.Reach >= 0 {
				reach = append(reach, float64(r.Reach))
			}
			if u, ok := uniform[r.Seed]; ok {
				diff = append(diff, r.Final-u)
			}
		}
		row := strategyRow{Strategy: s, Seeds: len(rs), Final: boot(final, rng), AUC: boot(auc, rng), ZeroSignal: boot(zero, rng),
			TrainPass: policy.Mean(train), Reached: len(reach), Reach: -1, CurveX: rs[0].CurveX}
		if len(reach) > 0 {
			slices.Sort(reach)
			row.Reach = reach[len(reach)/2]
		}
		if len(diff) > 0 && s != curriculum.StrategyUniform {
			d := boot(diff, rng)
			row.VsUniform = &d
		}
		for i := range rs[0].CurveY {
			var ys []float64
			for _, r := range rs {
				if i < len(r.CurveY) {
					ys = append(ys, r.CurveY[i])
				}
			}
			row.Curve = append(row.Curve, boot(ys, rng))
		}
		tab.Rows = append(tab.Rows, row)
	}
	return tab
}

func (t experimentTable) print(w io.Writer) error {
	fmt.Fprintf(w, "curriculum experiment (%s): budget %d test executions per run, %d held-out tasks; 95%% bootstrap intervals over seeds\n",
		t.Mode, t.Budget, t.Heldout)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "strategy\tseeds\tfinal held-out\tarea under curve\tzero-variance groups\ttrain pass\texecs to %.2f\tfinal − uniform (paired)\t\n", t.TargetSolve)
	pct := func(v interval) string { return fmt.Sprintf("%.1f%% [%.1f, %.1f]", 100*v.Mean, 100*v.Lo, 100*v.Hi) }
	for _, r := range t.Rows {
		reach := "not reached"
		if r.Reached > 0 {
			reach = fmt.Sprintf("%.0f (%d/%d seeds)", r.Reach, r.Reached, r.Seeds)
		}
		vs := "—"
		if r.VsUniform != nil {
			vs = fmt.Sprintf("%+.1f [%+.1f, %+.1f] pts", 100*r.VsUniform.Mean, 100*r.VsUniform.Lo, 100*r.VsUniform.Hi)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%.1f%%\t%s\t%s\t\n", r.Strategy, r.Seeds, pct(r.Final), pct(r.AUC), pct(r.ZeroSignal), 100*r.TrainPass, reach, vs)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "wrote %s (results.jsonl, table.txt, curriculum.png, curriculum.svg)\n", t.Dir)
	return err
}

// check that the sandbox counter keeps the simulated provider's inline mode.
var _ env.Immediate = countingProvider{}

// strategyColors extends report's palette to the seven curricula.
var strategyColors = append(slices.Clone(palette), color.RGBA{R: 140, G: 86, B: 75, A: 255}, color.RGBA{R: 127, G: 127, B: 127, A: 255})

// drawExperiment draws the held-out curve of every strategy (the mean over
// seeds, its 95% interval as a band) into curriculum.png and .svg.
func drawExperiment(dir string, t experimentTable) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("held-out solve rate at equal budget (%s)", t.Mode)
	p.X.Label.Text, p.Y.Label.Text = "test executions", "held-out solve rate (mean over seeds, 95% interval)"
	p.Legend.Top, p.Legend.Left = true, true
	for i, r := range t.Rows {
		c := strategyColors[i%len(strategyColors)]
		var mid, band plotter.XYs
		for k, v := range r.Curve {
			if k >= len(r.CurveX) {
				break
			}
			mid = append(mid, plotter.XY{X: float64(r.CurveX[k]), Y: v.Mean})
			band = append(band, plotter.XY{X: float64(r.CurveX[k]), Y: v.Hi})
		}
		for k := min(len(r.Curve), len(r.CurveX)) - 1; k >= 0; k-- {
			band = append(band, plotter.XY{X: float64(r.CurveX[k]), Y: r.Curve[k].Lo})
		}
		if poly, err := plotter.NewPolygon(band); err == nil && r.Seeds > 1 {
			rgba := color.NRGBAModel.Convert(c).(color.NRGBA)
			rgba.A = 50
			poly.Color = rgba
			poly.LineStyle.Width = 0
			p.Add(poly)
		}
		if err := line(p, mid, c, false, r.Strategy); err != nil {
			return err
		}
	}
	w, h := 20*vg.Centimeter, 13*vg.Centimeter
	img := vgimg.New(w, h)
	p.Draw(draw.New(img))
	svg := vgsvg.New(w, h)
	p.Draw(draw.New(svg))
	for name, wt := range map[string]io.WriterTo{"curriculum.png": vgimg.PngCanvas{Canvas: img}, "curriculum.svg": svg} {
		var buf bytes.Buffer
		if _, err := wt.WriteTo(&buf); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if err := run.WriteFileAtomic(filepath.Join(dir, name), buf.Bytes()); err != nil {
			return err
		}
	}
	return nil
}
