package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"runtime"
	"text/tabwriter"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/frognano/frog/actors"
	"github.com/frognano/frog/env"
	"github.com/frognano/frog/env/replay"
	policysim "github.com/frognano/frog/policy/sim"
	"github.com/frognano/frog/run/taskenv"
	"github.com/frognano/frog/synth"
	synthsim "github.com/frognano/frog/synth/sim"
	"github.com/frognano/frog/synth/source"
	"github.com/frognano/frog/synth/store"
)

// simOptions are the flags of `frog sim`; they are also what config.json
// records.
type simOptions struct {
	Run     actors.Config  `json:"actors"`
	Seed    uint64         `json:"seed"`
	Sandbox sandboxOptions `json:"sandbox"`

	TimeScale      float64 `json:"time_scale"`
	FaultRate      float64 `json:"fault_rate"`
	Curriculum     string  `json:"curriculum"`
	Difficulty     float64 `json:"difficulty"`
	TargetPassRate float64 `json:"target_pass_rate"`
	CurriculumRate float64 `json:"curriculum_rate"`
	TaskSpread     float64 `json:"task_spread"`
	EstimateNoise  float64 `json:"estimate_noise,omitempty"`
	Tasks          string  `json:"tasks"`
	InitialSkill   float64 `json:"initial_skill"`
	LearningRate   float64 `json:"learning_rate"`

	TaskOpts   taskOptions   `json:"task_options"`
	ReplayOpts replayOptions `json:"replay_options"`
	// ReplayEnv is --env replay's: the table played instead of the
	// simulation (absent from a simulated run's config).
	ReplayEnv simReplay `json:"replay,omitzero"`
	// Remote opens the run to rollout workers (--listen).
	Remote remoteOptions `json:"remote,omitzero"`

	JSON   bool   `json:"-"`
	RunDir string `json:"-"`
	NoDir  bool   `json:"-"`
	Name   string `json:"name,omitempty"`
}

func newSimCmd(g *globals) *cobra.Command {
	o := &simOptions{Run: actors.DefaultConfig()}
	c := &cobra.Command{
		Use:   "sim",
		Short: "Simulate rollouts: the real actors on simulated sandboxes and a simulated policy",
		Long: `sim runs frog's actor system (scheduler, one actor per episode, policy server,
learner, curriculum, synthesizer) against simulated sandboxes and a simulated
agent, to plan capacity and to study curricula cheaply. With --sandbox docker
(or process) every step runs real commands in real sandboxes instead.

The simulated agent solves a task with probability σ(skill − difficulty); each
learner update raises its skill in proportion to the learning signal of the
batch (the within-group reward variance). It is a model, not evidence: see
docs/sim-model.md.

With --concurrency 1 (one worker) a run is exactly reproducible from its seed:
two runs print the same summary, timings aside.

A run directory (config.json, metrics.jsonl with one line per learner update,
summary.json) is written unless --no-run-dir is given.

With --env replay --table FILE (a table frog tabulate made) the run is a
replay instead: frog's built-in repair policy, its learner (GRPO on
--device) and the curriculum play the table's tasks against their recorded
verdicts, as frog train --env replay does, at full speed and with no
held-out evaluation or checkpoint: frog's fastest honest rollout
simulation, where the learner's throughput shows. Its summary, JSON and
logs name it a replay (docs/replay.md).`,
		Example: `  frog sim
  frog sim --episodes 200000 --concurrency 10000 --time-scale 0 --seed 1 --json
  frog sim --fault-rate 0.2 --max-retries 2
  frog sim --curriculum fixed --difficulty 6
  frog sim --tasks sim-bins --curriculum uniform
  frog sim --time-scale 1 --duration 30s --concurrency 256
  frog sim --sandbox docker --episodes 500 --concurrency 32
  frog sim --env replay --table runs/tasks.table.jsonl --episodes 20000`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return runSim(c.Context(), g, o) },
	}
	f := c.Flags()
	f.Int64Var(&o.Run.Episodes, "episodes", o.Run.Episodes, "episodes to run (0: until --duration)")
	f.DurationVar(&o.Run.Duration, "duration", 0, "stop admitting episodes after this long, e.g. 30s (0: no limit)")
	f.IntVar(&o.Run.Concurrency, "concurrency", o.Run.Concurrency, "episodes running at once (alias --workers); 1 makes a seeded run reproducible")
	f.IntVar(&o.Run.GroupSize, "group-size", o.Run.GroupSize, "GRPO group size G: rollouts per task")
	f.IntVar(&o.Run.GroupsPerUpdate, "groups-per-update", 0, "groups per learner update (0: the smallest batch that lets --concurrency run within --max-staleness)")
	f.IntVar(&o.Run.MaxStaleness, "max-staleness", o.Run.MaxStaleness, "most policy versions an action may lag the learner")
	retries := f.Int("max-retries", o.Run.MaxAttempts-1, "retries of an episode after infrastructure faults")
	f.IntVar(&o.Run.MaxUpdateFailures, "max-update-failures", o.Run.MaxUpdateFailures, "end the run (exit 1) after this many learner updates in a row fail (0: never)")
	f.IntVar(&o.Run.MaxSteps, "max-steps", o.Run.MaxSteps, "most actions per episode")
	f.IntVar(&o.Run.MaxBatch, "max-batch", o.Run.MaxBatch, "most act requests per inference batch")
	f.DurationVar(&o.Run.MaxWait, "max-wait", 0, "longest a request waits for its batch to fill (0: natural batching)")
	f.IntVar(&o.Run.InferenceWorkers, "inference-workers", o.Run.InferenceWorkers, "inference batches run at once")
	f.BoolVar(&o.Run.RefillZeroVariance, "refill-zero-variance", false, "drop groups whose rewards are all equal from the learner's batches and plan new groups in their place (counted in learner.refilled_groups)")
	f.IntVar(&o.Run.TaskRefill, "task-refill", o.Run.TaskRefill, "fewest tasks asked of the synthesizer at once (small: a steering curriculum acts sooner)")
	f.Uint64Var(&o.Seed, "seed", 1, "seed of every random choice")
	o.Sandbox.flags(f, "sim")
	f.Float64Var(&o.TimeScale, "time-scale", 0, "multiplier of simulated latencies (0: no waiting, 1: real time)")
	f.Float64Var(&o.FaultRate, "fault-rate", 0, "probability that a sandbox suffers an infrastructure fault (crash, hang, slow start)")
	f.StringVar(&o.Curriculum, "curriculum", "frontier", curriculumHelp()+"; target keeps the pass rate at --target-pass-rate, fixed always asks for --difficulty")
	f.Float64Var(&o.Difficulty, "difficulty", 0, "starting difficulty (target, frontier), the difficulty (fixed), or what the other replay curricula ask a source that takes only a difficulty for")
	f.Float64Var(&o.TargetPassRate, "target-pass-rate", 0.5, "pass rate the target curriculum aims at")
	f.Float64Var(&o.CurriculumRate, "curriculum-rate", 0.01, "step of the target curriculum's ability estimate per outcome")
	f.Float64Var(&o.TaskSpread, "task-spread", 0.5, "standard deviation of a task's difficulty around the one asked for (--tasks sim)")
	o.ReplayOpts.flags(f)
	f.Float64Var(&o.EstimateNoise, "estimate-noise", 0.5, "standard deviation of a task's difficulty estimate around its true difficulty (--tasks sim-bins)")
	f.StringVar(&o.Tasks, "tasks", "sim", "where tasks come from: sim (simulated), sim-bins (simulated, in bins of family, k, locality and module, one family out of reach: what frontier steers), synth (validated live from the default modules by frog synth's machinery), or a task store (.jsonl) written by frog synth, drawn from by difficulty")
	f.Float64Var(&o.InitialSkill, "initial-skill", 0, "simulated agent's starting skill")
	f.Float64Var(&o.LearningRate, "learning-rate", 0.001, "skill gained per unit of learning signal (summed group reward variance)")
	o.TaskOpts.flags(f)
	o.ReplayEnv.flags(f)
	o.Remote.flags(f)
	f.BoolVar(&o.JSON, "json", false, "print the summary as one JSON object (no progress bar)")
	f.StringVar(&o.Name, "name", "", "run name (default sim-<UTC time>)")
	f.StringVar(&o.RunDir, "run-dir", "", "run directory (default runs/<name>)")
	f.BoolVar(&o.NoDir, "no-run-dir", false, "write no run directory")
	c.PreRunE = func(c *cobra.Command, _ []string) error {
		o.Run.MaxAttempts = *retries + 1
		if o.real() && !c.Flags().Changed("concurrency") {
			// Real tests want a core each, not a thousand episodes at once.
			o.Run.Concurrency = 2 * runtime.NumCPU()
		}
		if err := o.validateReplay(c); err != nil {
			return err
		}
		if err := o.validate(); err != nil {
			return err
		}
		if o.ReplayEnv.Env == envReplay {
			o.Tasks, o.Sandbox = "", sandboxOptions{} // the table's, not the simulation's
		}
		return nil
	}
	return c
}

// real says the run plays stored tasks in real sandboxes.
func (o *simOptions) real() bool {
	return o.Tasks != "sim" && o.Tasks != "sim-bins" && o.Tasks != "synth" && o.Sandbox.Kind != "sim"
}

func (o *simOptions) validate() error {
	if err := validateRun(o.Run); err != nil {
		return err
	}
	if err := o.Sandbox.validate(); err != nil {
		return err
	}
	if o.Tasks == "" {
		return usagef("--tasks: want sim, synth or a .jsonl task store")
	}
	if o.Run.GroupSize < 2 {
		return usagef("--group-size %d: GRPO compares the rollouts of a task within its group, and a group of one carries no signal; want >= 2", o.Run.GroupSize)
	}
	if err := checkRunName(o.Name); err != nil {
		return err
	}
	if _, err := newCurriculum(curriculumSpec{Name: o.Curriculum, Difficulty: o.Difficulty, PassRate: o.TargetPassRate, Rate: o.CurriculumRate, Replay: o.ReplayOpts, Seed: o.Seed, GroupsPerUpdate: 4, GroupSize: o.Run.GroupSize}); err != nil {
		return err
	}
	for name, v := range map[string]float64{"--time-scale": o.TimeScale, "--difficulty": o.Difficulty,
		"--task-spread": o.TaskSpread, "--initial-skill": o.InitialSkill, "--learning-rate": o.LearningRate} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return usagef("%s %v: want a finite number", name, v)
		}
	}
	switch {
	case o.TimeScale < 0:
		return usagef("--time-scale %v: want >= 0", o.TimeScale)
	case o.FaultRate < 0 || o.FaultRate > 1 || math.IsNaN(o.FaultRate):
		return usagef("--fault-rate %v: want a probability in [0, 1]", o.FaultRate)
	case !(o.TargetPassRate > 0 && o.TargetPassRate < 1):
		return usagef("--target-pass-rate %v: want a number strictly between 0 and 1", o.TargetPassRate)
	case !(o.CurriculumRate > 0):
		return usagef("--curriculum-rate %v: want > 0", o.CurriculumRate)
	case o.TaskSpread < 0:
		return usagef("--task-spread %v: want >= 0", o.TaskSpread)
	case o.LearningRate < 0:
		return usagef("--learning-rate %v: want >= 0", o.LearningRate)
	}
	return nil
}

// simReport is the summary `frog sim` prints.
type simReport struct {
	actors.Summary
	// Sim is the simulated agent's; a replay has none, and says what it
	// replayed (Replay) and the learner's backend instead.
	Sim          *simStats       `json:"sim,omitempty"`
	Replay       *replay.Report  `json:"replay,omitempty"`
	Backend      string          `json:"backend,omitempty"`
	Tasks        *taskenv.Report `json:"tasks,omitempty"`
	PeakRSSBytes int64           `json:"peak_rss_bytes"`
	Interrupted  bool            `json:"interrupted"`
	Config       simOptions      `json:"config"`
	Version      string          `json:"frog_version"`
}

type simStats struct {
	InitialSkill float64 `json:"initial_skill"`
	FinalSkill   float64 `json:"final_skill"`
}

func runSim(ctx context.Context, g *globals, o *simOptions) error {
	log, err := g.logger()
	if err != nil {
		return err
	}
	o.Run = o.Run.WithDefaults()
	if o.ReplayEnv.Env == envReplay {
		if o.Remote.Listen != "" {
			return usagef("--listen works with simulated sandboxes only so far: not with --env replay")
		}
		return runSimReplay(ctx, g, o, log)
	}
	if o.Remote.Listen != "" && (o.Sandbox.Kind != "sim" || o.real()) {
		return usagef("--listen works with simulated sandboxes only so far (--sandbox sim); real tasks on workers are not built yet")
	}
	if o.Name == "" {
		o.Name = "sim-" + time.Now().UTC().Format("20060102-150405")
	}
	o.Run.Run = o.Name
	runLog := log // actors.Run adds the run's name itself
	log = log.With().Str("run", o.Name).Logger()

	spec := sandboxSpec{
		sandboxOptions: o.Sandbox, Run: o.Name, Concurrency: o.Run.Concurrency,
		Seed: o.Seed, TimeScale: o.TimeScale, FaultRate: o.FaultRate,
	}
	// Stored tasks in real sandboxes are played for real: laid out, their
	// tests run by the harness, each checked before it is served.
	var tenv *taskenv.Env
	var prov env.Provider
	var release func()
	if o.real() {
		tenv, prov, release, err = openTaskEnv(ctx, o.TaskOpts, spec, log)
	} else {
		prov, release, err = openSandboxes(ctx, spec, log)
		if err != nil {
			err = fmt.Errorf("sandbox %s: %w", o.Sandbox.Kind, err)
		}
	}
	if err != nil {
		return err
	}
	defer release()
	cur, err := newCurriculum(curriculumSpec{Name: o.Curriculum, Difficulty: o.Difficulty, PassRate: o.TargetPassRate, Rate: o.CurriculumRate, Replay: o.ReplayOpts, Seed: o.Seed, GroupsPerUpdate: o.Run.GroupsPerUpdate, GroupSize: o.Run.GroupSize})
	if err != nil {
		return err
	}
	oracle := policysim.NewOracle()
	learner := policysim.NewLearner(o.InitialSkill, o.LearningRate, o.Seed, oracle)
	src, closeSrc, err := openTasks(ctx, o, tenv, log)
	if err != nil {
		return err
	}
	defer closeSrc()
	deps := actors.Deps{
		Provider: prov, Learner: learner, Source: taskenv.OracleSource(src, oracle, taskenv.FixFor(src)),
		Curriculum: cur, Log: runLog, Counters: new(actors.Counters),
	}
	if tenv != nil {
		deps.Source = taskenv.OracleSource(tenv.Quarantine.Source(src), oracle, tenv.OracleFix)
		deps.Harness = tenv.Harness
	}
	if deps.Remote, err = o.simRemote(oracle, log); err != nil {
		return err
	}

	dir, err := o.openSimDir(log)
	if err != nil {
		return err
	}
	if dir != nil {
		defer dir.Close()
		deps.OnUpdate = dir.OnUpdate(log)
		deps.OnCurriculum = dir.OnCurriculum(log)
	}

	bar := startProgress(g, !o.JSON, o.Run.Episodes, deps.Counters)
	sum, runErr := actors.Run(ctx, o.Run, deps)
	bar.stop()

	rep := simReport{
		Summary: sum, Sim: &simStats{InitialSkill: o.InitialSkill, FinalSkill: learner.Skill()}, Tasks: tenv.Report(),
		PeakRSSBytes: peakRSS(), Interrupted: ctx.Err() != nil, Config: *o, Version: version(),
	}
	// The run's name is a label (config.json keeps it); leaving it out of the
	// summary lets two runs of one seed compare equal.
	rep.Config.Name, rep.Config.Run.Run = "", ""
	return finish(g.stdout, dir, rep, o.JSON, rep.Interrupted, runErr)
}

// simRemote is the run's actors.Remote under --listen: its workers play
// the simulated sandboxes with this run's latencies and faults.
func (o *simOptions) simRemote(oracle *policysim.Oracle, log zerolog.Logger) (*actors.Remote, error) {
	return o.Remote.remote(o.Run.Concurrency, "sim", simWorkerEnv{Seed: o.Seed, TimeScale: o.TimeScale, FaultRate: o.FaultRate},
		policysim.Codec{Oracle: oracle}, listening(log))
}

func (r simReport) configRecord() any {
	return struct {
		Version string     `json:"frog_version"`
		Command string     `json:"command"`
		Config  simOptions `json:"config"`
	}{r.Version, "sim", r.Config}
}

func (r simReport) print(w io.Writer, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		return enc.Encode(r)
	}
	e := r.Episodes
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if rp := r.Replay; rp != nil {
		fmt.Fprintf(tw, "replay of %s\t%d tasks\tevery verdict looked up in the table, none run\t\t\n", rp.Table, rp.Tasks)
	}
	fmt.Fprintf(tw, "episodes\tadmitted %d\tcompleted %d\tfailed_infra %d\tcancelled %d\taccounted %v\n",
		e.Admitted, e.Completed, e.FailedInfra, e.Cancelled, e.Accounted)
	solved := 0.0
	if e.Completed > 0 {
		solved = float64(e.Solved) / float64(e.Completed)
	}
	fmt.Fprintf(tw, "outcomes\tsolved %d (%.1f%%)\tretries %d\t\t\n", e.Solved, 100*solved, e.Retries)
	fmt.Fprintf(tw, "throughput\t%.0f episodes/s\t%.2f s\tpeak %d running\tpeak RSS %s\n",
		r.EpisodesPerSecond, r.ElapsedSeconds, r.Scheduler.PeakConcurrency, bytesString(r.PeakRSSBytes))
	l := r.Learner
	fmt.Fprintf(tw, "learner\t%d updates (%d failed)\tmax staleness %d/%d\tstale dropped %d\tzero-signal groups %.1f%%\n",
		l.Updates, l.FailedUpdates, l.MaxStalenessSeen, l.MaxStaleness, l.StaleDropped, 100*l.ZeroSignalShare)
	fmt.Fprintf(tw, "policy server\t%d requests\t%d batches\tmean batch %.1f\tmax batch %d\n",
		r.PolicyServer.Requests, r.PolicyServer.Batches, r.PolicyServer.MeanBatch, r.PolicyServer.MaxBatch)
	fmt.Fprintf(tw, "curriculum\t%s\tfinal difficulty %.2f\tpass rate %.3f\t\n",
		r.Curriculum.Kind, r.Curriculum.Difficulty, r.Curriculum.PassRate)
	if rs := r.Curriculum.Rounds; rs != nil {
		fmt.Fprintf(tw, "rounds\tround %d (%s)\tcalibration %d episodes\t%d candidates: %d admitted, %d refined, %d dropped\t\n",
			rs.Round, rs.Phase, rs.CalibrationEpisodes, rs.Candidates, rs.Admitted, rs.Refined, rs.Dropped)
	}
	if r.Sim != nil {
		fmt.Fprintf(tw, "sim\tskill %.3f → %.3f\t\t\t\n", r.Sim.InitialSkill, r.Sim.FinalSkill)
	}
	printRemote(tw, r.Scheduler.Remote)
	if r.Replay != nil {
		fmt.Fprintf(tw, "backend\t%s\tupdate time %.1f s of %.1f s\t%d calls answered\tnot replayable %d\n",
			r.Backend, r.Learner.UpdateSeconds, r.ElapsedSeconds, r.Replay.Answered, r.Replay.Unanswered())
	}
	if t := r.Tasks; t != nil {
		h := t.Harness
		fmt.Fprintf(tw, "tasks\t%d quarantined\t%d test runs\toutcome cache hits %.1f%%\t%d schema builds\n",
			len(t.Quarantined), h.Executions, 100*h.HitRate, h.Builds)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if r.Interrupted {
		_, err := fmt.Fprintln(w, "interrupted: running episodes were cancelled and recorded")
		return err
	}
	return nil
}

func bytesString(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d KiB", n>>10)
}

// openTasks makes the run's task source (--tasks) and what releases it. A
// store played for real (tenv set) must have a task that holds up.
func openTasks(ctx context.Context, o *simOptions, tenv *taskenv.Env, log zerolog.Logger) (synth.Source, func(), error) {
	switch o.Tasks {
	case "sim":
		return synthsim.New(o.Seed, o.TaskSpread), func() {}, nil
	case "sim-bins":
		return synthsim.NewBinned(o.Seed, o.TaskSpread, o.EstimateNoise), func() {}, nil
	case "synth":
		work, cleanup, err := workDir("", "frog-sim-synth-")
		if err != nil {
			return nil, nil, err
		}
		s, _, closeSynth, err := openSynthesizer(ctx, source.Default, work,
			sandboxSpec{sandboxOptions: sandboxOptions{Kind: "process", Unsafe: o.Sandbox.Unsafe}}, source.Config{Seed: o.Seed}, log)
		if err != nil {
			cleanup()
			return nil, nil, err
		}
		return s, func() {
			closeSynth()
			cleanup()
		}, nil
	}
	recs, err := taskenv.LoadStore("--tasks", o.Tasks, log)
	if err != nil {
		return nil, nil, err
	}
	if tenv != nil {
		if err := tenv.RequireUsable(ctx, "--tasks", o.Tasks, recs, o.Run.Concurrency, log); err != nil {
			return nil, nil, err
		}
	}
	src, err := store.NewSource(recs, o.Seed)
	if err != nil {
		return nil, nil, &UsageError{Err: fmt.Errorf("--tasks %s: %w", o.Tasks, err)}
	}
	log.Info().Int("tasks", src.Len()).Str("store", o.Tasks).Msg("task store")
	return src, func() {}, nil
}
