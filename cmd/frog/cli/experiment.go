package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/frognano/frog/actors"
	"github.com/frognano/frog/cuda"
	"github.com/frognano/frog/curriculum"
	"github.com/frognano/frog/policy/neural"
	"github.com/frognano/frog/run/experiment"
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

// experimentCurriculumLong is frog experiment curriculum's --help.
const experimentCurriculumLong = `curriculum runs every strategy (--strategies) with every seed (--seeds) at the
same budget, counted in test executions (a strategy whose tasks are cheaper gains
nothing), and evaluates each run on one fixed held-out task set from modules never
trained on. It prints a table per strategy — the final held-out solve rate, the
area under the held-out curve, the zero-variance share of GRPO groups, the test
executions needed to reach --target-solve — with 95% bootstrap intervals over
seeds, and the paired difference of each strategy from uniform on the same seeds
and held-out tasks; and draws the held-out curves (curriculum.png, .svg). In
real mode it adds the final held-out point's solve rates within 1, 3 and 10
tries and its mean reciprocal rank of the first fix (MRR), overall and per
operator family of the bug, as means over seeds with bootstrap intervals.

Each --strategies entry is an arm, STRATEGY[:OPTION...], so that one setting
can be compared as an arm of its own: uniform:refill drops groups whose rewards
are all equal and plans new ones (frontier by rejection), frontier:norefill keeps
them; frontier:t=0.25 sets the replay sampler's temperature; frontier:return has
the curriculum judge tasks by the return GRPO compares (the try cost included),
so a task solved by every rollout, but not in the first try, still teaches. The
table adds the distinct tasks each arm trained on and, per arm, the paired
difference from uniform in the final solve rate, the area under the curve and
(real and replay) the final solve rate within 1 try.

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
results say by how much they overshot). With --budget-episodes it counts
episodes instead, every one charged, as a replay's does: the unit in which a
real run is compared with its replay. The held-out tasks (--heldout of
--heldout-tasks, a fixed sample from modules never trained on; the tasks the
first invocation's check kept are recorded in heldout.json and played by every
later one) are played greedily, --eval-tries tries each, by the policy of each
of --points+1 points of the run's budget. Defaults for real mode: strategies
frontier, uniform, easy and hard; --seeds 3; --budget 6000 (about 5 minutes a
run on 2 cores: the whole experiment in about an hour); --points 2; --heldout
40; --concurrency 2×CPUs; --task-refill 2; no refill of zero-variance groups
(an arm's :refill asks for it); --start prior (--start scratch: an untrained
network, as frog train --start scratch).

--mode replay trains the same policy as real mode against a replay table of
real verdicts (--table, made by frog tabulate) instead of sandboxes, and
evaluates it on another (--heldout-table, tasks never trained on): fast, and
named a replay in the table and logs. Its budget counts episodes, since a
replayed verdict runs no test: every episode is charged, the ones of groups
dropped for want of signal and the rounds curriculum's calibration included.
Defaults for replay mode: rounds, frontier, uniform, easy, hard and offline;
--seeds 3; --budget 4000 episodes; --points 10; --heldout every task of the
held-out table; --concurrency 64; --start prior; no refill. docs/replay.md says what a
replay is and is not.`

func newExperimentCurriculumCmd(g *globals) *cobra.Command {
	o := &experiment.Options{Real: &experiment.RealOptions{Learner: neural.DefaultConfig()}}
	var asJSON bool
	var tables experiment.TableOptions
	c := &cobra.Command{
		Use:   "curriculum",
		Short: "Compare curricula at one budget of test executions: held-out solve rate per strategy, with intervals",
		Long:  experimentCurriculumLong,
		Example: `  frog experiment curriculum --mode sim --seeds 5 --budget 40000
  frog experiment curriculum --strategies frontier,uniform --seeds 3 --dir runs/exp-curriculum
  frog experiment curriculum --mode real --seeds 3 --tasks runs/train-tasks.jsonl --dir runs/exp-real
  frog experiment curriculum --mode replay --table runs/train.table.jsonl --heldout-table runs/heldout.table.jsonl`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return runExperiment(c.Context(), g, o, asJSON) },
	}
	f := c.Flags()
	f.StringVar(&o.Mode, "mode", "sim", "sim (the named simulation), real (frog's neural policy trained on real tasks) or replay (that policy against replay tables of real verdicts)")
	f.StringSliceVar(&o.Strategies, "strategies", append(slices.Clone(curriculum.Strategies), "target"), "curricula to compare (--curriculum values)")
	f.IntVar(&o.Seeds, "seeds", 5, "seeds per strategy")
	f.Uint64Var(&o.FirstSeed, "first-seed", 1, "the first seed; seeds are first-seed, first-seed+1, …")
	f.Int64Var(&o.Budget, "budget", 40000, "test executions per run")
	f.IntVar(&o.Points, "points", 20, "points of the held-out curve")
	f.IntVar(&o.Concurrency, "concurrency", 32, "episodes running at once in each run")
	f.IntVar(&o.GroupSize, "group-size", 8, "GRPO group size")
	f.IntVar(&o.GroupsPer, "groups-per-update", 4, "groups per learner update")
	f.BoolVar(&o.Refill, "refill-zero-variance", true, "drop groups whose rewards are all equal from the batches and plan new ones, for every arm (as frog train does; real and replay: default false, refill an arm instead with STRATEGY:refill)")
	f.IntVar(&o.TaskRefill, "task-refill", 4, "fewest tasks asked of the synthesizer at once (small: steering acts sooner)")
	f.Float64Var(&o.LearningRate, "learning-rate", 0.004, "sim: skill gained per unit of learning signal")
	f.Float64Var(&o.InitialSkill, "initial-skill", 0, "sim: the agent's starting skill")
	f.Float64Var(&o.TaskSpread, "task-spread", 0.5, "sim: standard deviation of a task's difficulty around its bin's")
	f.Float64Var(&o.Noise, "estimate-noise", 0.5, "sim: standard deviation of a task's difficulty estimate around its true difficulty")
	f.IntVar(&o.Heldout, "heldout", 500, "held-out tasks (one fixed set for every run)")
	f.Float64Var(&o.TargetSolve, "target-solve", 0.3, "held-out solve rate whose cost in test executions the table reports")
	(*replayOptions)(&o.Replay).flags(f)
	realFlags(f, o.Real)
	f.StringVar(&tables.Table, "table", "", "replay: the replay table every run trains on (frog tabulate)")
	f.StringVar(&tables.HeldoutTable, "heldout-table", "", "replay: the replay table of the held-out tasks (modules never trained on); --heldout tasks of it, its first")
	f.StringVar(&o.Dir, "dir", "", "experiment directory (default runs/experiment-curriculum-<mode>-<UTC time>)")
	f.BoolVar(&asJSON, "json", false, "print the table as one JSON object")
	c.PreRunE = func(c *cobra.Command, _ []string) error { return prepareExperiment(c, o, tables) }
	return c
}

// prepareExperiment sets the defaults of o's mode where the command line
// did not set them (tables: --mode replay's) and checks the flags.
func prepareExperiment(c *cobra.Command, o *experiment.Options, tables experiment.TableOptions) error {
	switch o.Mode {
	case "real":
		realDefaults(c, o)
	case "sim":
		o.Real = nil
	case envReplay:
		realDefaults(c, o)
		if err := replayDefaults(c, o, tables); err != nil {
			return err
		}
	}
	if o.Mode != envReplay && (tables.Table != "" || tables.HeldoutTable != "") {
		return usagef("--table and --heldout-table: only with --mode replay")
	}
	if o.Mode != "real" && c.Flags().Changed("budget-episodes") {
		return usagef("--budget-episodes: only with --mode real (a replay's budget always counts episodes; a simulation's counts test executions)")
	}
	return validateExperiment(o)
}

// validateExperiment checks the flags of frog experiment curriculum.
func validateExperiment(o *experiment.Options) error {
	switch {
	case o.Mode != "sim" && o.Mode != "real" && o.Mode != envReplay:
		return usagef("--mode %q: want sim, real or replay", o.Mode)
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
	if o.Mode != "sim" && !slices.Contains(neural.Starts, o.Start) {
		return usagef("--start %q: want %s", o.Start, strings.Join(neural.Starts, " or "))
	}
	for _, s := range o.Strategies {
		a, err := experiment.ParseArm(s)
		if err != nil {
			return &UsageError{Err: fmt.Errorf("--strategies: %w", err)}
		}
		if _, err := newCurriculum(experimentCurriculum(o, a, 1, 0)); err != nil {
			return err
		}
	}
	if t := o.Tables; t != nil {
		switch {
		case t.Tries < 1 || t.EvalTries < 1 || t.Tries > actors.MaxSteps-12 || t.EvalTries > actors.MaxSteps-12:
			return usagef("--tries %d, --eval-tries %d: want 1 to %d", t.Tries, t.EvalTries, actors.MaxSteps-12)
		case t.Learner.Validate() != nil:
			return &UsageError{Err: t.Learner.Validate()}
		case !(t.TryCost >= 0 && t.TryCost < 1):
			return usagef("--try-cost %v: want a share in [0, 1)", t.TryCost)
		case t.Device != "auto" && t.Device != "cpu" && t.Device != "cuda":
			return usagef("--device %q: want auto, cpu or cuda", t.Device)
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
		if err := (*sandboxOptions)(&r.Sandbox).checkCounts(); err != nil {
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

// realFlags adds the flags only --mode real reads.
func realFlags(f *pflag.FlagSet, r *experiment.RealOptions) {
	f.StringVar(&r.Tasks, "tasks", "runs/train-tasks.jsonl", "real: the training task store every run draws from (make run writes this one; or frog synth --n 200 --out FILE)")
	f.StringVar(&r.Heldout, "heldout-tasks", "tasks/heldout.jsonl", "real: the held-out store (modules never trained on); --heldout tasks of it, a fixed seeded sample")
	f.IntVar(&r.Tries, "tries", 5, "real: most candidates a training episode may try")
	f.IntVar(&r.EvalTries, "eval-tries", 10, "real: most candidates a held-out episode may try")
	f.StringVar(&r.Device, "device", "auto", "real: tensor backend of the learners (auto, cpu or cuda)")
	f.Float64Var(&r.Learner.LR, "lr", r.Learner.LR, "real: the learners' Adam learning rate")
	f.Float64Var(&r.TryCost, "try-cost", defaultTryCost, "real: what GRPO takes off a rewarded rollout's return per try beyond the first, as in frog train (0: compare 0/1 rewards, as experiments made before the flag did)")
	f.StringVar(&r.Start, "start", neural.StartPrior, "real, replay: where every run's network starts, prior or scratch (as frog train --start; --lr and --credit still apply)")
	f.StringVar(&r.Learner.Credit, "credit", r.Learner.Credit, "real: what each decision is advantaged by, as in frog train: episode or try")
	f.BoolVar(&r.BudgetEpisodes, "budget-episodes", false, "real: count --budget in episodes, every one charged (those of groups dropped for want of signal included), as replay mode does, rather than in test executions: how a real run is compared with its replay")
	(*sandboxOptions)(&r.Sandbox).flags(f, "process")
	(*taskOptions)(&r.TaskOpts).flags(f)
}

// realDefaults sets the flags whose sim defaults do not fit real tasks,
// unless the command line set them.
func realDefaults(c *cobra.Command, o *experiment.Options) {
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
	if !changed("refill-zero-variance") {
		o.Refill = false
	}
	r := o.Real
	o.Start = r.Start
	if l, err := neural.StartConfig(r.Start); err == nil {
		l.LR, l.Credit = r.Learner.LR, r.Learner.Credit
		r.Learner = l
	}
}

// replayDefaults makes o a replay experiment on tables: real mode's
// policy settings (realDefaults set them) against the tables, with the
// defaults of a replay where the command line did not set them. It reads
// both tables, so that a table that does not load, or was made for
// another protocol than the learner's, is refused before anything runs.
func replayDefaults(c *cobra.Command, o *experiment.Options, tables experiment.TableOptions) error {
	changed := c.Flags().Changed
	for _, name := range []string{"tasks", "heldout-tasks", "sandbox"} {
		if changed(name) {
			return usagef("--mode replay: --%s: the tables hold the tasks and their verdicts", name)
		}
	}
	if tables.Table == "" || tables.HeldoutTable == "" {
		return usagef("--mode replay: --table and --heldout-table are required (frog tabulate makes them)")
	}
	train, err := readTable("--table", tables.Table)
	if err != nil {
		return err
	}
	if err := checkTrainReplayable(train, o.Real.Learner); err != nil {
		return &UsageError{Err: fmt.Errorf("--table %s: %w", tables.Table, err)}
	}
	held, err := readTable("--heldout-table", tables.HeldoutTable)
	if err != nil {
		return err
	}
	r := o.Real
	tables.Tries, tables.EvalTries, tables.Learner, tables.TryCost, tables.Device = r.Tries, r.EvalTries, r.Learner, r.TryCost, r.Device
	o.Tables, o.Real = &tables, nil
	if !changed("strategies") {
		o.Strategies = []string{curriculum.StrategyRounds, curriculum.StrategyFrontier, curriculum.StrategyUniform,
			curriculum.StrategyEasy, curriculum.StrategyHard, curriculum.StrategyOffline}
	}
	if !changed("budget") {
		o.Budget = 4000
	}
	if !changed("points") {
		o.Points = 10
	}
	if !changed("concurrency") {
		o.Concurrency = 64
	}
	if !changed("heldout") || o.Heldout > len(held.Records) {
		o.Heldout = len(held.Records)
	}
	return nil
}

// experimentCurriculum is the curriculum spec of arm a in one run of an
// experiment: the experiment's replay settings, with the arm's
// temperature and signal where it sets them.
func experimentCurriculum(o *experiment.Options, a experiment.Arm, seed uint64, difficulty float64) curriculumSpec {
	r := replayOptions(o.Replay)
	if a.Temperature > 0 {
		r.Temperature = a.Temperature
	}
	r.Return = r.Return || a.Return
	return curriculumSpec{Name: a.Strategy, Difficulty: difficulty, PassRate: defaultPassRate, Rate: defaultTargetRate,
		Replay: r, Seed: seed, GroupsPerUpdate: o.GroupsPer, GroupSize: o.GroupSize}
}

// runExperiment runs the experiment (experiment.Run) and prints its table.
func runExperiment(ctx context.Context, g *globals, o *experiment.Options, asJSON bool) error {
	log, err := g.logger()
	if err != nil {
		return err
	}
	if o.Dir == "" {
		o.Dir = filepath.Join("runs", "experiment-curriculum-"+o.Mode+"-"+time.Now().UTC().Format("20060102-150405"))
	}
	if o.Mode == envReplay {
		log = log.With().Str("env", envReplay).Logger() // every line names it a replay
	}
	deps := experiment.Deps{
		Version: version(), Log: log, Sandboxes: sandboxOpener(sandboxSpec{}, log), Tensor: cuda.Open,
		Curriculum: func(a experiment.Arm, seed uint64, difficulty float64) (curriculum.Curriculum, error) {
			return newCurriculum(experimentCurriculum(o, a, seed, difficulty))
		},
	}
	tab, err := experiment.Run(ctx, *o, deps)
	if err != nil {
		return err
	}
	if asJSON {
		return json.NewEncoder(g.stdout).Encode(tab)
	}
	return tab.Print(g.stdout)
}
