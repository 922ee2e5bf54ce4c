package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"text/tabwriter"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/frognano/frog/actors"
	"github.com/frognano/frog/cuda"
	"github.com/frognano/frog/curriculum"
	"github.com/frognano/frog/env"
	"github.com/frognano/frog/env/replay"
	"github.com/frognano/frog/policy"
	"github.com/frognano/frog/policy/neural"
	"github.com/frognano/frog/run"
	"github.com/frognano/frog/run/taskenv"
	"github.com/frognano/frog/synth"
	"github.com/frognano/frog/synth/source"
	"github.com/frognano/frog/synth/store"
)

// trainOptions are the flags of `frog train`; config.json records them.
type trainOptions struct {
	Run     actors.Config `json:"actors"`
	Learner neural.Config `json:"learner"`
	// Start is where the network starts (--start): neural.StartPrior or
	// neural.StartScratch. The config of a run made before --start has
	// none; its learner's prior says it (neural.Config.Start).
	Start    string         `json:"start,omitempty"`
	Sandbox  sandboxOptions `json:"sandbox"`
	TaskOpts taskOptions    `json:"task_options"`
	Remote   remoteOptions  `json:"remote,omitzero"`
	Device   string         `json:"device"`
	Seed     uint64         `json:"seed"`

	Sources        []string `json:"sources,omitempty"`
	Tasks          string   `json:"tasks,omitempty"`
	SynthWorkers   int      `json:"synth_workers"`
	Heldout        string   `json:"heldout,omitempty"`
	HeldoutN       int      `json:"heldout_n"`
	EvalTries      int      `json:"eval_tries"`
	EvalEvery      int      `json:"eval_every"`
	Baselines      []string `json:"baselines,omitempty"`
	TargetPassRate float64  `json:"target_pass_rate"`
	StartDiff      float64  `json:"start_difficulty"`
	// Curriculum is empty in the config of a run made before --curriculum
	// (the target curriculum was the only one then).
	Curriculum string        `json:"curriculum,omitempty"`
	ReplayOpts replayOptions `json:"replay_options"`

	// Policy is neural (the built-in repair policy, learned here) or openai
	// (a language model whose trainer is elsewhere: the groups are
	// exported, see train_llm.go).
	Policy      string     `json:"policy"`
	LLM         llmOptions `json:"llm"`
	ExportQueue int        `json:"export_queue,omitempty"`

	Name string `json:"name,omitempty"`
	stop bool
	keep bool
	// prior is the deprecated --prior: --start prior (true) or scratch.
	prior  bool
	RunDir string `json:"-"`
	Resume string `json:"-"`
	// RecordBatches is where each update's batch is written
	// (--record-batches).
	RecordBatches string `json:"-"`
	JSON          bool   `json:"-"`

	// Replay is --env replay's: the tables played instead of sandboxes.
	Replay trainReplay `json:"replay,omitempty"`
}

// defaultTryCost is what a rewarded rollout's return loses per try beyond
// the first in frog's GRPO (actors.Config.TryCost): a tenth, so that a fix
// at the fifth try still returns 0.6 and a failure 0.
const defaultTryCost = 0.1

func newTrainCmd(g *globals) *cobra.Command {
	c, _ := trainCmd(g)
	return c
}

// trainCmd is `frog train` and the options its flags set.
func trainCmd(g *globals) (*cobra.Command, *trainOptions) {
	o := &trainOptions{Run: actors.DefaultConfig(), Learner: neural.DefaultConfig()}
	o.Run.Episodes, o.Run.GroupSize, o.Run.GroupsPerUpdate, o.Run.MaxTries = 1600, 8, 4, 5
	o.Run.TryCost = defaultTryCost
	// Real tasks cost seconds each to check and lay out: ask for a few at a
	// time, not a pool of 64.
	o.Run.TaskRefill = 2
	c := &cobra.Command{
		Use:   "train",
		Short: "Train the neural repair policy by GRPO on real tasks (single node)",
		Long: `train is frog's single-node training: tasks are synthesized online from real Go
modules (the pinned list by default, or --source) by the synth actor, or drawn
from a store (--tasks); each is played G times (--group-size) in real sandboxes
(docker when a daemon answers, else process sandboxes with a warning) by the
neural repair policy, judged by the task's own tests; the learner turns each
batch of groups into a GRPO update on the tensor backend (--device); the
frontier curriculum (--curriculum) replays the tasks of highest expected
learnability, retires hopeless and saturated ones and steers synthesis toward
learnable bins.

The policy: the protocol of the baselines (run the tests, measure coverage, rank
lines by spectrum fault localisation, list template repairs at the 60 most
suspicious lines, try them until the tests pass or the tries run out), with the
choice of what to try next made by a small network (an MLP and a linear part)
over each option's features. It learns from test outcomes alone. --start says
where the network starts: prior (the default) puts the linear part at the
fault-localisation prior, the hand-set ranking that learning refines; scratch
puts it at zero, a nearly uniform ranker that learning must take past the
hand-written baselines (--baselines prior draws the prior's level). Each start
has its own defaults of --lr, --wide-lr and --kl; a flag given overrides them.
--keep also applies partial fixes and lists again; --stop offers the network the
choice to stop.

Every --eval-every updates the current policy, greedy, is evaluated on a fixed
held-out task set (--heldout, modules never trained on); the baselines are
evaluated on it once at the start. A run directory holds config.json,
metrics.jsonl (a line per update, evaluation and baseline), trajectories/ (JSONL
shards), checkpoints/ (every --checkpoint-every updates and at the end, atomic)
and summary.json. 'frog report RUN' draws the curves; 'frog train --resume RUN'
continues a run from its last checkpoint (the learner, the curriculum, and
the run's counting: --episodes and --duration are the whole run's);
'frog eval --policy RUN' evaluates one.
`,
		Example: `  frog train
  frog train --episodes 4000 --heldout tasks/heldout.jsonl --eval-every 10
  frog train --tasks runs/tasks.jsonl --sandbox process --device cpu
  frog train --start scratch --baselines fl-greedy,prior
  frog train --resume runs/train-20261201-120000`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return runTrain(c.Context(), g, o) },
	}
	f := c.Flags()
	f.Int64Var(&o.Run.Episodes, "episodes", o.Run.Episodes, "episodes to run (0: until --duration)")
	f.DurationVar(&o.Run.Duration, "duration", 0, "stop admitting episodes after this long (0: no limit)")
	f.IntVar(&o.Run.Concurrency, "concurrency", 2*runtime.NumCPU(), "episodes running at once")
	f.IntVar(&o.Run.GroupSize, "group-size", o.Run.GroupSize, "GRPO group size G: rollouts per task (>= 2)")
	f.IntVar(&o.Run.GroupsPerUpdate, "groups-per-update", o.Run.GroupsPerUpdate, "groups per learner update")
	f.IntVar(&o.Run.MaxStaleness, "max-staleness", o.Run.MaxStaleness, "most policy versions an action may lag the learner")
	f.IntVar(&o.Run.MaxTries, "tries", o.Run.MaxTries, "most candidates a training episode may try: a budget tight enough that the order of tries matters, or every group passes or fails alike and teaches nothing")
	f.IntVar(&o.EvalTries, "eval-tries", 10, "most candidates a held-out episode may try (the baselines' budget too)")
	f.IntVar(&o.Run.MaxSteps, "max-steps", 0, "most actions per episode (0: --tries + 12)")
	f.IntVar(&o.Run.CheckpointEvery, "checkpoint-every", 10, "save a checkpoint every this many updates (and at the end)")
	f.IntVar(&o.Run.MaxUpdateFailures, "max-update-failures", o.Run.MaxUpdateFailures, "end the run after this many failed updates in a row (0: never)")
	f.StringVar(&o.Device, "device", "auto", "tensor backend of the learner: auto (a GPU when one opens, else the CPU), cpu or cuda")
	o.learnerFlags(f)
	f.Float64Var(&o.Run.TryCost, "try-cost", o.Run.TryCost, "what GRPO takes off a rewarded rollout's return for each candidate it tried beyond the first (down to a tenth), so that rollouts that all fix a task still teach what to try first; 0: compare 0/1 rewards (the default with --policy openai)")
	f.BoolVar(&o.Run.RefillZeroVariance, "refill-zero-variance", true, "drop groups whose rewards are all equal before they reach a batch and plan new groups in their place, so that every update has --groups-per-update groups with signal (off by default with --policy openai: its trainer gets every group)")
	f.BoolVar(&o.stop, "stop", false, "offer the policy the option to stop before its tries run out (a try costs nothing in the reward, so stopping early never raises the solve rate)")
	f.BoolVar(&o.keep, "keep", false, "apply a try that fixes some failing tests and breaks none, then list candidates again (the way to 2- and 3-bug tasks; off by default: measured, it solved none of them and cost single-bug tasks, docs/training.md)")
	f.Uint64Var(&o.Seed, "seed", 1, "seed of the policy's draws, the weights' start and the task draws")
	f.StringSliceVar(&o.Sources, "source", nil, "module to synthesize tasks from (repeatable; default the pinned list of frog synth)")
	f.StringVar(&o.Tasks, "tasks", "", "draw tasks from this store instead of synthesizing them online")
	f.IntVar(&o.SynthWorkers, "synth-workers", 1, "validation workers of the online synthesizer")
	f.StringVar(&o.Heldout, "heldout", "tasks/heldout.jsonl", "held-out task store the policy is evaluated on (\"\": none)")
	f.IntVar(&o.HeldoutN, "heldout-n", 40, "held-out tasks to evaluate on (a fixed seeded sample; 0: all)")
	f.IntVar(&o.EvalEvery, "eval-every", 10, "evaluate on the held-out tasks every this many updates (0: only at the start and end)")
	f.StringSliceVar(&o.Baselines, "baselines", []string{"fl-feedback", "random"}, "baselines evaluated on the held-out tasks at the start: random, fl-greedy, fl-feedback, prior (the untrained network of --start prior: the hand prior's level), or an earlier run (its directory or checkpoint)")
	f.Float64Var(&o.TargetPassRate, "target-pass-rate", 0.5, "training pass rate the target curriculum aims at")
	f.Float64Var(&o.StartDiff, "difficulty", 4, "difficulty the curriculum starts at")
	f.StringVar(&o.Curriculum, "curriculum", "frontier", curriculumHelp()+"; target keeps the training pass rate at --target-pass-rate")
	o.ReplayOpts.flags(f)
	o.envFlags(f)
	f.StringVar(&o.Name, "name", "", "run name (default train-<UTC time>)")
	f.StringVar(&o.RunDir, "run-dir", "", "run directory (default runs/<name>)")
	f.StringVar(&o.Resume, "resume", "", "continue the run in this directory from its last checkpoint: its config.json, learner and curriculum, its records cut back to the checkpoint (--episodes and --duration, the whole run's budget, may be given anew)")
	f.BoolVar(&o.JSON, "json", false, "print the summary as one JSON object")
	f.StringVar(&o.RecordBatches, "record-batches", "", "write every batch the learner updates on to this file, a JSON line per update (gzip when it ends in .gz): each group's trajectories cut to their rewards, log-probabilities and decisions, enough to replay the updates on any backend without tasks or sandboxes (neural.ReadBatches; the GPU check's fixture is one)")
	f.StringVar(&o.Policy, "policy", "neural", "neural (frog's repair policy, trained here) or openai (a language model behind OpenAI-compatible servers, trained elsewhere: the groups are exported to trajectories/ for its trainer; docs/llm.md)")
	o.LLM.flags(f)
	f.IntVar(&o.ExportQueue, "export-queue", 4, "with --policy openai: batches of groups buffered for the export before updates wait (and admission pauses)")
	c.PreRunE = func(c *cobra.Command, _ []string) error {
		if c.Flags().Changed("prior") {
			fmt.Fprintln(g.stderr, "frog train: --prior is deprecated: use --start prior or --start scratch")
		}
		return o.validate(c)
	}
	return c, o
}

// learnerFlags are the flags of the network and its learner: where it
// starts, its size and GRPO's settings.
func (o *trainOptions) learnerFlags(f *pflag.FlagSet) {
	f.Float64Var(&o.Learner.LR, "lr", o.Learner.LR, "Adam learning rate (the same default from both starts)")
	f.Float64Var(&o.Learner.WideLR, "wide-lr", o.Learner.WideLR, "Adam learning rate of the network's wide (linear) part, the part that carries across modules (0: --lr; the same default from both starts)")
	f.Float64Var(&o.Learner.Clip, "clip", o.Learner.Clip, "GRPO ratio clip ε")
	f.Float64Var(&o.Learner.Entropy, "entropy", o.Learner.Entropy, "entropy bonus weight")
	f.Float64Var(&o.Learner.KL, "kl", 0, "weight of the KL penalty to the reference policy, the network the run starts from (GRPO's β; it keeps a short run from trading the prior, which carries across modules, for what only its training tasks reward); 0: none (default: the start's, 0.1 from the prior, 0 from scratch, where the penalty would only hold the policy at random)")
	f.Float64Var(&o.Learner.MaxGradNorm, "max-grad-norm", o.Learner.MaxGradNorm, "clip the gradient's global norm to this (0: no clipping)")
	f.IntVar(&o.Learner.Epochs, "epochs", o.Learner.Epochs, "passes over each batch")
	f.Float64Var(&o.Learner.Temperature, "temperature", o.Learner.Temperature, "sampling temperature of the policy in training")
	f.StringVar(&o.Learner.Credit, "credit", neural.CreditEpisode, "what each decision is advantaged by: episode (its rollout's return against the group's, GRPO's) or try (what the tests said of the candidate it tried, against the group's other tries)")
	f.BoolVar(&o.Learner.KeepZeroVariance, "keep-zero-variance", false, "keep groups whose rewards are all equal in the loss (they are dropped by default, and counted); implies --refill-zero-variance=false")
	f.StringVar(&o.Start, "start", neural.StartPrior, "where the network starts: prior (its linear part at the fault-localisation prior) or scratch (at zero: a nearly uniform ranker); sets the defaults of --lr, --wide-lr and --kl")
	f.BoolVar(&o.prior, "prior", true, "deprecated: --start prior (true) or --start scratch (false)")
	// Hidden, and deprecated by a warning of validate's own on stderr:
	// cobra's MarkDeprecated prints its warning on the command's output,
	// which is stdout here, where --json promises one JSON object.
	_ = f.MarkHidden("prior")
	f.IntVar(&o.Learner.Dims.H1, "hidden1", o.Learner.Dims.H1, "units of the first hidden layer")
	f.IntVar(&o.Learner.Dims.H2, "hidden2", o.Learner.Dims.H2, "units of the second hidden layer")
}

// envFlags are the flags of what the run plays in: the sandboxes and the
// tasks' options, or the tables of a replay.
func (o *trainOptions) envFlags(f *pflag.FlagSet) {
	o.Sandbox.flags(f, "auto")
	o.TaskOpts.flags(f)
	o.Remote.flags(f)
	o.Replay.flags(f)
}

// curriculumSpec is the curriculum the flags name.
func (o *trainOptions) curriculumSpec() curriculumSpec {
	return curriculumSpec{Name: o.Curriculum, Difficulty: o.StartDiff, PassRate: o.TargetPassRate, Rate: defaultTargetRate,
		Replay: o.ReplayOpts, Seed: o.Seed, GroupsPerUpdate: o.Run.GroupsPerUpdate, GroupSize: o.Run.GroupSize}
}

func (o *trainOptions) validate(c *cobra.Command) error {
	if err := o.validateReplay(c); err != nil {
		return err
	}
	if o.Resume == "" {
		spec := o.curriculumSpec()
		spec.PassRate = defaultPassRate // checked on its own below, with its flag's name
		if _, err := newCurriculum(spec); err != nil {
			return err
		}
	}
	if o.Policy == "openai" {
		if c.Flags().Changed("start") || c.Flags().Changed("prior") {
			return usagef("--start: where the neural policy's network starts; --policy openai trains a language model elsewhere")
		}
		o.Start = ""
		if !c.Flags().Changed("refill-zero-variance") {
			// The external trainer gets every completed group and decides
			// what to learn from.
			o.Run.RefillZeroVariance = false
		}
		if !c.Flags().Changed("try-cost") {
			o.Run.TryCost = 0 // its trainer gets the rewards
		}
		return o.validateLLM()
	}
	if o.Policy != "neural" {
		return usagef("--policy %q: want neural or openai", o.Policy)
	}
	if o.Resume != "" {
		return o.loadResume(c)
	}
	if err := o.applyStart(c.Flags()); err != nil {
		return err
	}
	// Checked before --max-steps is made from --tries, which a huge value
	// would overflow.
	if err := firstErr(inRange("--tries", o.Run.MaxTries, 1, actors.MaxSteps-12), inRange("--eval-tries", o.EvalTries, 1, actors.MaxSteps-12),
		inRange("--checkpoint-every", o.Run.CheckpointEvery, 1, math.MaxInt32), inRange("--hidden1", o.Learner.Dims.H1, 1, neural.MaxHidden),
		inRange("--hidden2", o.Learner.Dims.H2, 1, neural.MaxHidden), inRange("--synth-workers", o.SynthWorkers, 1, maxSynthWorkers),
		inRange("--epochs", o.Learner.Epochs, 1, 1<<16)); err != nil {
		return err
	}
	if o.Run.MaxSteps == 0 {
		o.Run.MaxSteps = env.StepsForTries(o.Run.MaxTries)
	}
	o.Learner.NoStop = !o.stop
	o.Learner.NoKeep = !o.keep
	if o.Learner.KeepZeroVariance && !c.Flags().Changed("refill-zero-variance") {
		o.Run.RefillZeroVariance = false // kept groups must reach the learner
	}
	if err := validateRun(o.Run); err != nil {
		return err
	}
	if o.Run.GroupSize < 2 {
		return usagef("--group-size %d: GRPO compares a task's rollouts within a group; want >= 2", o.Run.GroupSize)
	}
	if err := o.Learner.Validate(); err != nil {
		return &UsageError{Err: err}
	}
	if err := o.Sandbox.checkCounts(); err != nil {
		return err
	}
	if err := checkSandbox(o.Sandbox.Kind, "docker", "process", "auto"); err != nil {
		return err
	}
	if err := checkRunName(o.Name); err != nil {
		return err
	}
	if err := checkSources(o.Sources); err != nil {
		return err
	}
	switch {
	case o.Device != "auto" && o.Device != "cpu" && o.Device != "cuda":
		return usagef("--device %q: want auto, cpu or cuda", o.Device)
	case o.HeldoutN < 0 || o.EvalEvery < 0:
		return usagef("--heldout-n and --eval-every: want >= 0")
	case !(o.TargetPassRate > 0 && o.TargetPassRate < 1):
		return usagef("--target-pass-rate %v: want in (0, 1)", o.TargetPassRate)
	case o.Tasks != "" && len(o.Sources) > 0:
		return usagef("--tasks and --source: choose one")
	}
	for _, b := range o.Baselines {
		if _, err := evalPolicy(b, 1); err != nil {
			return &UsageError{Err: fmt.Errorf("--baselines: %w", err)}
		}
	}
	if o.Tasks != "" {
		if _, err := os.Stat(o.Tasks); err != nil {
			return usagef("--tasks %s: %v", o.Tasks, err)
		}
	}
	if o.Heldout != "" {
		if _, err := os.Stat(o.Heldout); err != nil {
			return usagef("--heldout %s: %v (the default is frog's own held-out store, relative to the repository's root: run from there, or pass --heldout PATH, or --heldout \"\" for none)", o.Heldout, err)
		}
	}
	o.Learner.Seed = o.Seed
	return nil
}

// applyStart sets the network's start from --start (or the deprecated
// --prior), with the start's defaults of --lr, --wide-lr and --kl where
// those flags are not given.
func (o *trainOptions) applyStart(fs *pflag.FlagSet) error {
	start, err := o.startFlag(fs)
	if err != nil {
		return err
	}
	def, err := neural.StartConfig(start)
	if err != nil {
		return &UsageError{Err: fmt.Errorf("--start: %w", err)}
	}
	o.Start, o.Learner.Prior = start, def.Prior
	if !fs.Changed("lr") {
		o.Learner.LR = def.LR
	}
	if !fs.Changed("wide-lr") {
		o.Learner.WideLR = def.WideLR
	}
	if !fs.Changed("kl") {
		o.Learner.KL = def.KL
	}
	return nil
}

// startFlag is the start the flags name: --start, or the deprecated
// --prior (true: prior, false: scratch). Both given must name the same.
func (o *trainOptions) startFlag(fs *pflag.FlagSet) (string, error) {
	if _, err := neural.StartConfig(o.Start); err != nil {
		return "", &UsageError{Err: fmt.Errorf("--start: %w", err)}
	}
	if !fs.Changed("prior") {
		return o.Start, nil
	}
	old := neural.StartScratch
	if o.prior {
		old = neural.StartPrior
	}
	if fs.Changed("start") && o.Start != old {
		return "", usagef("--start %s and --prior=%t name different starts (--prior is deprecated: give --start alone)", o.Start, o.prior)
	}
	return old, nil
}

// loadResume takes a run's config.json, keeping what the command line set
// anew of the budget. A start given (--start, --prior) must be the run's.
func (o *trainOptions) loadResume(c *cobra.Command) error {
	data, err := os.ReadFile(filepath.Join(o.Resume, "config.json"))
	if err != nil {
		return usagef("--resume %s: %v", o.Resume, err)
	}
	var rec struct {
		Command string       `json:"command"`
		Config  trainOptions `json:"config"`
	}
	if err := json.Unmarshal(data, &rec); err != nil || rec.Command != "train" {
		return usagef("--resume %s: config.json is not a frog train run's", o.Resume)
	}
	start, err := o.startFlag(c.Flags())
	if err != nil {
		return err
	}
	episodes, duration, asJSON := o.Run.Episodes, o.Run.Duration, o.JSON
	resume, curriculum := o.Resume, o.Curriculum
	*o = rec.Config
	if o.Curriculum == "" {
		o.Curriculum = "target" // a run made before --curriculum
	}
	if o.Start == "" {
		o.Start = o.Learner.Start() // a run made before --start
	}
	if (c.Flags().Changed("start") || c.Flags().Changed("prior")) && start != o.Start {
		return usagef("--resume %s --start %s: the run's start is %s (its config.json); resume it with that one, or start a new run", o.Resume, start, o.Start)
	}
	if c.Flags().Changed("curriculum") && curriculum != o.Curriculum {
		// The checkpoint holds the state of the run's own curriculum; it
		// cannot continue another.
		return usagef("--resume %s --curriculum %s: the run's curriculum is %s (its config.json); resume it with that one, or start a new run", o.Resume, curriculum, o.Curriculum)
	}
	o.Resume, o.RunDir, o.JSON = resume, resume, asJSON
	if c.Flags().Changed("episodes") {
		o.Run.Episodes = episodes
	}
	if c.Flags().Changed("duration") {
		o.Run.Duration = duration
	}
	return nil
}

// trainReport is what `frog train` prints and writes to summary.json.
type trainReport struct {
	actors.Summary
	Backend string `json:"backend"`
	// Start is where the network started (--start).
	Start       string          `json:"start,omitempty"`
	Evaluations []run.Event     `json:"evaluations"`
	Tasks       *taskenv.Report `json:"tasks,omitempty"`
	// Replay is --env replay's: the run played its tables, no sandbox.
	Replay *replay.Report `json:"replay,omitempty"`
	RunDir string         `json:"run_dir"`
	// ResumedFrom is the checkpoint this part of the run started from.
	ResumedFrom string `json:"resumed_from,omitempty"`
	Interrupted bool   `json:"interrupted"`
	Version     string `json:"frog_version"`
}

func runTrain(ctx context.Context, g *globals, o *trainOptions) error {
	if o.Policy == "openai" {
		return runTrainLLM(ctx, g, o)
	}
	log, err := g.logger()
	if err != nil {
		return err
	}
	if o.Name == "" {
		o.Name = "train-" + time.Now().UTC().Format("20060102-150405")
	}
	o.Run.Run = o.Name
	o.Run = o.Run.WithDefaults()
	runLog := log // actors.Run adds the run's name itself
	log = log.With().Str("run", o.Name).Logger()
	remote, err := o.trainRemote(log)
	if err != nil {
		return err
	}
	backend, why, err := cuda.Open(o.Device)
	if err != nil {
		return &UsageError{Err: err}
	}
	defer backend.Close()
	log.Info().Str("backend", backend.Name()).Str("why", why).Msg("tensor backend")
	learner, err := neural.NewLearner(backend, o.Learner)
	if err != nil {
		return &UsageError{Err: err}
	}
	defer learner.Close()

	cur, err := newCurriculum(o.curriculumSpec())
	if err != nil {
		return err
	}
	// The run directory, fresh or resumed (the learner and the curriculum
	// put back at the checkpoint).
	dir, start, err := o.openRunDir(learner, cur, log)
	if err != nil {
		return err
	}
	defer dir.Close()
	o.Run.Start = start.Progress

	te, closeEnv, err := o.openEnv(ctx, heldTasks(cur, start.Pool), log)
	if err != nil {
		return err
	}
	defer closeEnv()
	tr := &trainer{ctx: ctx, o: o, dir: dir, harness: te.harness, prov: te.prov, heldout: te.heldout, learner: learner, log: log, start: time.Now(),
		startEpisodes: start.Results, evs: start.Evals}
	shards, err := run.NewShards(filepath.Join(dir.Path(), "trajectories"), 5000)
	if err != nil {
		return err
	}
	tr.shards = shards
	// The baselines and the evaluation of the policy the run starts from,
	// unless its metrics have them already (a resumed run's).
	if !tr.evaluated("baseline") {
		tr.baselines(ctx)
	}
	if tr.evalDue(start.Updates) && !tr.evaluatedAt(start.Updates) {
		tr.evaluate(ctx, start.Updates, learner.Current())
	}
	pl, closeRec, err := o.recording(learner, log)
	if err != nil {
		return err
	}
	defer closeRec()
	deps := actors.Deps{
		Provider: te.prov, Learner: pl, Source: te.src, Curriculum: cur, Harness: te.harness, Log: runLog,
		Counters: new(actors.Counters), OnUpdate: tr.onUpdate, OnEpisode: tr.onEpisode, OnCurriculum: dir.OnCurriculum(log),
		Checkpoints: run.NewCheckpoints(filepath.Join(dir.Path(), "checkpoints"), 3), TaskPool: start.Pool, Remote: remote,
	}
	tr.counters = deps.Counters
	bar := startBar(g, !o.JSON, o.Run.Episodes, "ep", tr.progress)
	sum, runErr := actors.Run(ctx, o.Run, deps)
	bar.stop()
	if errors.Is(runErr, actors.ErrCheckpoint) {
		runErr = errors.Join(runErr, errors.New(savedNote(dir.Path())))
	}
	tr.waitEval()
	if final := sum.Learner.Updates; ctx.Err() == nil && !tr.evaluatedAt(final) {
		tr.evaluate(context.WithoutCancel(ctx), final, learner.Current())
	}
	if err := shards.Close(); err != nil {
		runErr = errors.Join(runErr, fmt.Errorf("trajectories: %w", err))
	}
	rep := trainReport{Summary: sum, Backend: backend.Name(), Start: o.Start, Evaluations: tr.evals(), Tasks: te.tenv.Report(),
		RunDir: dir.Path(), ResumedFrom: start.File, Interrupted: ctx.Err() != nil, Version: version()}
	if te.replay != nil {
		r := te.replay.Report(o.Replay.Table)
		rep.Replay = &r
	}
	return finish(g.stdout, dir, rep, o.JSON, rep.Interrupted, runErr)
}

// trainEnv is what a training run plays in: real tasks in sandboxes
// (tenv), or a replay of tables (replay); the source of its tasks and its
// held-out tasks.
type trainEnv struct {
	tenv    *taskenv.Env
	replay  *replay.Env
	prov    env.Provider
	harness env.Harness
	src     synth.Source
	heldout []actors.EvalTask
}

// openEnv opens the run's environment (held: the tasks the curriculum
// holds, served last) and returns what releases it.
func (o *trainOptions) openEnv(ctx context.Context, held []string, log zerolog.Logger) (trainEnv, func(), error) {
	var te trainEnv
	var err error
	if o.Replay.Env == envReplay {
		te.replay, te.src, te.heldout, err = o.openReplay(held, log)
		te.prov, te.harness = te.replay, te.replay
		return te, func() {}, err
	}
	tenv, prov, release, err := openTaskEnv(ctx, o.TaskOpts, sandboxSpec{sandboxOptions: o.Sandbox, Run: o.Name, Concurrency: o.Run.Concurrency}, log)
	if err != nil {
		return te, nil, err
	}
	te.tenv, te.prov, te.harness = tenv, prov, tenv.Harness
	src, closeSrc, err := o.openSource(ctx, tenv, held, log)
	if err != nil {
		release()
		return te, nil, err
	}
	te.src = src
	if te.heldout, err = o.loadHeldout(ctx, tenv, log); err != nil {
		closeSrc()
		release()
		return te, nil, err
	}
	return te, func() { closeSrc(); release() }, nil
}

// recording is the learner the run trains: learner itself, or, with
// --record-batches, learner recording every update's batch to that file
// (closed by the function it returns).
func (o *trainOptions) recording(learner *neural.Learner, log zerolog.Logger) (policy.Learner, func(), error) {
	if o.RecordBatches == "" {
		return learner, func() {}, nil
	}
	rec, err := neural.NewBatchRecorder(o.RecordBatches)
	if err != nil {
		return nil, nil, &UsageError{Err: err}
	}
	return neural.Recording{Learner: learner, To: rec}, func() {
		if err := rec.Close(); err != nil {
			log.Error().Err(err).Msg("record batches")
		}
	}, nil
}

// resumePoint is where a training run starts: nowhere for a new run; for a
// resumed one, its checkpoint and the held-out evaluations and baselines
// its metrics kept.
type resumePoint struct {
	run.Loaded
	Evals []run.Event
}

// openRunDir makes the run's directory, or reopens a resumed one: it puts
// the learner and the curriculum back at the newest checkpoint that loads
// (a checkpoint without the curriculum's state leaves it fresh, with a
// warning, and returns no pool) and cuts the directory's records back to
// that checkpoint (run.Resume).
func (o *trainOptions) openRunDir(l *neural.Learner, cur curriculum.Curriculum, log zerolog.Logger) (*run.Dir, resumePoint, error) {
	if o.Resume == "" {
		path := o.RunDir
		if path == "" {
			path = filepath.Join("runs", o.Name)
		}
		cfg := struct {
			Version string       `json:"frog_version"`
			Command string       `json:"command"`
			Config  trainOptions `json:"config"`
		}{version(), "train", *o}
		d, err := createRunDir(path, cfg)
		if err != nil {
			return nil, resumePoint{}, err
		}
		log.Info().Str("dir", path).Msg("run directory")
		return d, resumePoint{}, nil
	}
	ck, err := run.Load(o.Resume)
	if err != nil {
		return nil, resumePoint{}, &UsageError{Err: fmt.Errorf("--resume: %w", err)}
	}
	for _, why := range ck.Skipped {
		log.Warn().Str("skipped", why).Str("checkpoint", ck.File).Msg("resuming from the newest checkpoint that loads, not from the one checkpoints/latest names")
	}
	if ck.Format == run.CheckpointFormat1 {
		log.Warn().Str("checkpoint", ck.File).Msg("checkpoint of an older frog: its counters are under no checksum, and it holds no episode accounting: the resumed run's episode budget, trajectories and summary count from it")
		ck.Progress = actors.Progress{Version: ck.Version, Updates: ck.Updates}
	}
	if start, err := ck.Start(); err == nil && start != o.Start {
		// The reference of the KL penalty is recomputed from the config.
		return nil, resumePoint{}, usagef("--resume %s: the checkpoint's network started from %s, the run's config.json says %s", ck.File, start, o.Start)
	}
	if err := l.Restore(ck.Learner); err != nil {
		return nil, resumePoint{}, &UsageError{Err: fmt.Errorf("--resume %s: %w", ck.File, err)}
	}
	if err := restoreCurriculum(cur, &ck.Checkpoint, o.Curriculum, log); err != nil {
		return nil, resumePoint{}, &UsageError{Err: fmt.Errorf("--resume %s: %w", ck.File, err)}
	}
	d, evals, err := run.Resume(o.Resume, ck, log)
	if err != nil {
		return nil, resumePoint{}, err
	}
	log.Info().Str("checkpoint", ck.File).Int64("version", ck.Version).Int64("updates", ck.Updates).Int64("episodes", ck.Results).Msg("resuming")
	if e := o.Run.Episodes; e > 0 && ck.Results >= e {
		log.Warn().Int64("episodes", e).Int64("played", ck.Results).Msg("the run's episode budget is spent: nothing more to play (--episodes sets the whole run's)")
	}
	return d, resumePoint{Loaded: ck, Evals: evals}, nil
}

// savedNote names the checkpoint a run that could not store its last ones
// leaves to be resumed from.
func savedNote(dir string) string {
	ck, err := run.Load(dir)
	if err != nil {
		return fmt.Sprintf("the run has no checkpoint to resume from (%v)", err)
	}
	return fmt.Sprintf("the run's newest checkpoint is %s (update %d, %d episodes): 'frog train --resume %s' continues from it", ck.File, ck.Updates, ck.Results, dir)
}

// restoreCurriculum puts cur (the run's curriculum, kind name) back at the
// checkpoint's state. A checkpoint without one (saved before checkpoints
// held it) leaves cur fresh, with a warning, and its pool is dropped.
func restoreCurriculum(cur curriculum.Curriculum, ck *actors.Checkpoint, name string, log zerolog.Logger) error {
	if len(ck.Curriculum) == 0 {
		log.Warn().Str("curriculum", name).Msg("the checkpoint holds no curriculum state (saved by an older frog): the resumed run's curriculum starts fresh")
		ck.Pool = nil
		return nil
	}
	s, ok := cur.(curriculum.Snapshotter)
	if !ok {
		return fmt.Errorf("the %s curriculum cannot be restored from a checkpoint", name)
	}
	if err := s.Restore(ck.Curriculum); err != nil {
		return fmt.Errorf("curriculum %s: %w", name, err)
	}
	st := cur.Stats()
	ev := log.Info().Str("curriculum", name).Int64("observed", st.Observed).Int("pool", len(ck.Pool))
	if f := st.Frontier; f != nil {
		ev = ev.Int("buffer", f.Buffer).Int("retired", f.Retired)
	}
	ev.Msg("curriculum restored")
	return nil
}

// heldTasks are the ids of the tasks a restored curriculum holds: its
// replay buffer's and the pool's.
func heldTasks(cur curriculum.Curriculum, pool []env.Task) []string {
	var ids []string
	if h, ok := cur.(interface{ Held() []string }); ok {
		ids = h.Held()
	}
	for i := range pool {
		ids = append(ids, pool[i].ID)
	}
	return ids
}

// openSource is where training tasks come from: online synthesis, or a
// store (checked before its tasks are served). A store counts the tasks
// of held (a resumed run's curriculum holds them) as served, so that they
// come after the tasks the run has not played.
func (o *trainOptions) openSource(ctx context.Context, tenv *taskenv.Env, held []string, log zerolog.Logger) (synth.Source, func(), error) {
	if o.Tasks != "" {
		recs, err := taskenv.LoadStore("--tasks", o.Tasks, log)
		if err != nil {
			return nil, nil, err
		}
		if err := tenv.RequireUsable(ctx, "--tasks", o.Tasks, recs, o.Run.Concurrency, log); err != nil {
			return nil, nil, err
		}
		src, err := store.NewSource(recs, o.Seed)
		if err != nil {
			return nil, nil, &UsageError{Err: fmt.Errorf("--tasks %s: %w", o.Tasks, err)}
		}
		if len(held) > 0 {
			log.Info().Int("tasks", src.MarkServed(held)).Int("store", src.Len()).Msg("store: the tasks the curriculum holds come last")
		}
		return tenv.Quarantine.Source(src), func() {}, nil
	}
	specs := o.Sources
	if len(specs) == 0 {
		specs = source.Default
	}
	work, cleanup, err := workDir("", "frog-train-synth-")
	if err != nil {
		return nil, nil, err
	}
	cfg := source.Config{Seed: o.Seed, Workers: o.SynthWorkers}
	s, skipped, closeSynth, err := openSynthesizer(ctx, specs, work, sandboxSpec{sandboxOptions: sandboxOptions{Kind: "process", Unsafe: o.Sandbox.Unsafe}, Workspaces: tenv.Workspaces}, cfg, log)
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	for _, sk := range skipped {
		log.Warn().Str("source", sk.Source).Str("error", sk.Error).Msg("source skipped")
	}
	return s, func() { closeSynth(); cleanup() }, nil
}

// loadHeldout reads the held-out store, samples HeldoutN tasks with a fixed
// seed, and checks them (quarantined ones are left out).
func (o *trainOptions) loadHeldout(ctx context.Context, tenv *taskenv.Env, log zerolog.Logger) ([]actors.EvalTask, error) {
	if o.Heldout == "" {
		log.Warn().Msg("no held-out tasks (--heldout \"\"): the run reports no held-out curve")
		return nil, nil
	}
	recs, err := taskenv.Load("--heldout", o.Heldout, 0, o.HeldoutN, log) // one sample for every run
	if err != nil {
		return nil, err
	}
	tasks, quarantined, err := tenv.Check(ctx, recs, o.Run.Concurrency, log)
	if err != nil {
		return nil, err
	}
	log.Info().Int("tasks", len(tasks)).Int("quarantined", len(quarantined)).Str("store", o.Heldout).Msg("held-out tasks")
	return tasks, nil
}

func (r trainReport) print(w io.Writer, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(w).Encode(r)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if r.Replay != nil {
		fmt.Fprintf(tw, "replay of %s\tevery verdict looked up in the table, none run\t\t\t\t\t\n", r.Replay.Table)
	}
	e := r.Episodes
	fmt.Fprintf(tw, "episodes\tadmitted %d\tcompleted %d\tsolved %d\tfailed_infra %d\tcancelled %d\taccounted %v\n",
		e.Admitted, e.Completed, e.Solved, e.FailedInfra, e.Cancelled, e.Accounted)
	if e.RewardHackSuspected > 0 {
		fmt.Fprintf(tw, "reward hacks\t%d episodes suspected, rewarded 0 (trajectories/ says why)\n", e.RewardHackSuspected)
	}
	l := r.Learner
	fmt.Fprintf(tw, "learner\t%s\t%d updates (%d failed)\tzero-signal groups %.0f%%\tupdate time %.1f s of %.0f s\t\n",
		r.Backend, l.Updates, l.FailedUpdates, 100*l.ZeroSignalShare, l.UpdateSeconds, r.ElapsedSeconds)
	if r.Start != "" {
		fmt.Fprintf(tw, "start\t%s\t\t\t\t\n", r.Start)
	}
	for _, ev := range r.Evaluations {
		fmt.Fprintf(tw, "%s\t%s @%d\tsolved %.1f%% [%.1f, %.1f]\t(%d/%d)\t\t\n", ev.Kind, ev.Policy, ev.AtUpdate,
			100*ev.Solved.Rate, 100*ev.Solved.Lo, 100*ev.Solved.Hi, ev.Solved.K, ev.Solved.N)
	}
	fmt.Fprintf(tw, "run\t%s\t\t\t\t\n", r.RunDir)
	return tw.Flush()
}
