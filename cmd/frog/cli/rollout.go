package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/frognano/frog/actors"
	"github.com/frognano/frog/policy/openai"
	"github.com/frognano/frog/run"
	"github.com/frognano/frog/run/taskenv"
)

// rolloutOptions are the flags of `frog rollout`.
type rolloutOptions struct {
	Policy      string         `json:"policy"`
	LLM         llmOptions     `json:"llm"`
	Tasks       string         `json:"tasks"`
	GroupSize   int            `json:"group_size"`
	Out         string         `json:"out"`
	Concurrency int            `json:"concurrency"`
	MaxRetries  int            `json:"max_retries"`
	Limit       int            `json:"limit"`
	Sample      int            `json:"sample"`
	ShardSize   int            `json:"shard_size"`
	Sandbox     sandboxOptions `json:"sandbox"`
	TaskOpts    taskOptions    `json:"task_options"`
	Remote      remoteOptions  `json:"remote,omitzero"`
	JSON        bool           `json:"-"`
}

func newRolloutCmd(g *globals) *cobra.Command {
	o := &rolloutOptions{}
	c := &cobra.Command{
		Use:   "rollout",
		Short: "Roll a language model out on stored tasks in real sandboxes and export the trajectories for a trainer",
		Long: `rollout plays every task of a store --group-size times with a language model
behind OpenAI-compatible servers (vLLM, SGLang, llama.cpp's server, Ollama, …),
in real sandboxes (process or docker) judged by the tasks' own tests, at most
--concurrency episodes at once and --max-inflight requests per server, and
writes every episode to --out as JSONL shards in the chat-messages format
(messages with tool calls and tool results, reward, group id and the group's
GRPO advantage, tokens, logprobs): trajectories/shard-NNNNN.jsonl, beside
config.json and summary.json. docs/llm.md has the schema and the servers' flags.

An --out that holds the export of a rollout killed or interrupted is
continued: the tasks with a whole group there are not played again, and the
new groups and episodes are numbered after its own. One that holds a
finished rollout, or groups of another --group-size, is refused.

Before any episode starts, every server is asked whether it answers, takes the
key ($OPENAI_API_KEY unless --api-key-env names another) and serves --model;
if not, rollout stops with exit code 2. A server that fails during the run
(unreachable, timeouts, 429, 5xx after retries) fails only the episodes it was
serving, as infrastructure faults (retried in a new sandbox, never a reward of
0); a malformed or missing tool call or a context overflow is the model's own
mistake, shown to it, and the episode goes on.

With --listen, rollout workers (frog worker --join) play episodes too, in
their own sandboxes, each calling the model servers itself (docs/cluster.md);
the export is written here.

The summary: the solve rate with its 95% Wilson interval, the outcomes,
tokens, and each model call's latency and frog's own overhead in it (p50, p99).`,
		Example: `  frog rollout --base-url http://localhost:8000/v1 --model Qwen/Qwen3-8B --tasks tasks/heldout.jsonl --group-size 8 --out runs/qwen-heldout
  frog rollout --base-url http://gpu1:8000/v1 --base-url http://gpu2:8000/v1 --max-inflight 128 --concurrency 64 --sandbox docker --model m --tasks tasks.jsonl --out out
  frog rollout --llm-config model.json --tasks tasks.jsonl --out out --json`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return runRollout(c.Context(), g, o) },
	}
	f := c.Flags()
	f.StringVar(&o.Policy, "policy", "openai", "policy: openai (a model behind OpenAI-compatible servers)")
	o.LLM.flags(f)
	f.StringVar(&o.Tasks, "tasks", "", "task store (.jsonl) written by frog synth (required)")
	f.IntVar(&o.GroupSize, "group-size", 4, "episodes per task (a GRPO group)")
	f.StringVar(&o.Out, "out", "", "directory of the export: config.json, trajectories/, summary.json (required)")
	f.IntVar(&o.Concurrency, "concurrency", 4*runtime.NumCPU(), "episodes running at once (each holds a sandbox)")
	f.IntVar(&o.MaxRetries, "max-retries", 2, "sandboxes an episode may retry after infrastructure faults")
	f.IntVar(&o.Limit, "limit", 0, "roll out only the first N tasks of the store (0: all)")
	f.IntVar(&o.Sample, "sample", 0, "roll out a seeded random sample of N tasks of the store (0: all)")
	f.IntVar(&o.ShardSize, "shard-size", 1000, "records per shard")
	o.Sandbox.flags(f, "process")
	o.TaskOpts.flags(f)
	o.Remote.flags(f)
	f.BoolVar(&o.JSON, "json", false, "print the summary as one JSON object")
	c.PreRunE = func(*cobra.Command, []string) error { return o.validate() }
	return c
}

func (o *rolloutOptions) validate() error {
	if err := checkPolicyName(o.Policy); err != nil {
		return err
	}
	switch {
	case o.Tasks == "":
		return usagef("--tasks: a task store is required")
	case o.Out == "":
		return usagef("--out: a directory for the export is required")
	case o.Limit < 0 || o.Sample < 0:
		return usagef("--limit and --sample: want >= 0")
	case o.ShardSize < 1:
		return usagef("--shard-size %d: want >= 1", o.ShardSize)
	}
	if err := firstErr(inRange("--group-size", o.GroupSize, 1, actors.MaxGroupSize), inRange("--concurrency", o.Concurrency, 1, actors.MaxConcurrency),
		inRange("--max-retries", o.MaxRetries, 0, actors.MaxRetries)); err != nil {
		return err
	}
	if _, err := o.LLM.resolve(); err != nil {
		return err
	}
	return checkSandbox(o.Sandbox.Kind, "docker", "process", "auto")
}

// rolloutReport is what `frog rollout` prints and writes as summary.json.
type rolloutReport struct {
	Solved            actors.Rate        `json:"solved"`
	Outcomes          actors.EvalCounts  `json:"outcomes"`
	Tasks             int                `json:"tasks"`
	EpisodesPerSecond float64            `json:"episodes_per_second"`
	ElapsedSeconds    float64            `json:"elapsed_seconds"`
	LLM               openai.Stats       `json:"llm"`
	TokensPerSecond   float64            `json:"completion_tokens_per_second"`
	Calls             openai.TimingStats `json:"model_calls"`
	Export            exportReport       `json:"export"`
	Quarantined       []string           `json:"quarantined"`
	Harness           *taskenv.Report    `json:"harness"`
	Run               actors.Summary     `json:"run"`
	// Continued is what --out held of an earlier rollout that this one
	// continued (its records are not counted above).
	Continued   *priorRollout  `json:"continued,omitempty"`
	Interrupted bool           `json:"interrupted,omitempty"`
	Config      rolloutOptions `json:"config"`
	Version     string         `json:"frog_version"`
}

type exportReport struct {
	Dir     string `json:"dir"`
	Records int64  `json:"records"`
}

func runRollout(ctx context.Context, g *globals, o *rolloutOptions) error {
	log, err := g.logger()
	if err != nil {
		return err
	}
	runName := "rollout-" + time.Now().UTC().Format("20060102-150405")
	remote, err := o.Remote.realRemote(o.Concurrency, runName, o.Sandbox, o.TaskOpts, log)
	if err != nil {
		return err
	}
	recs, err := taskenv.Load("--tasks", o.Tasks, o.Limit, o.Sample, log)
	if err != nil {
		return err
	}
	// An export there already, of a rollout killed or interrupted, is
	// continued: its groups and episodes keep their numbers, the new ones
	// come after, and its tasks with a whole group are not played again.
	prior, err := readPriorRollout(o.Out, o.GroupSize)
	if err != nil {
		return err
	}
	if prior != nil {
		if recs = prior.rest(recs, o.Out, log); len(recs) == 0 {
			_, err := fmt.Fprintf(g.stdout, "every task of %s has a whole group in %s already: nothing to roll out\n", o.Tasks, o.Out)
			return err
		}
	}
	pol, err := o.LLM.openLLM(ctx)
	if err != nil {
		return err
	}
	defer pol.Close()
	if prior != nil && prior.summary != "" {
		// The interrupted rollout's summary is kept beside the new one.
		if err := os.Rename(prior.summary, filepath.Join(o.Out, fmt.Sprintf("summary.interrupted-%d.json", prior.nextGroup))); err != nil {
			return err
		}
	}
	dir, err := createRunDir(o.Out, struct {
		Version string          `json:"frog_version"`
		Options *rolloutOptions `json:"options"`
	}{version(), o})
	if err != nil {
		return err
	}
	defer dir.Close()
	shards, err := run.NewShards(filepath.Join(o.Out, "trajectories"), o.ShardSize)
	if err != nil {
		return err
	}
	tenv, prov, release, err := openTaskEnv(ctx, o.TaskOpts, sandboxSpec{sandboxOptions: o.Sandbox, Run: runName, Concurrency: o.Concurrency}, log)
	if err != nil {
		return err
	}
	defer release()
	// Checking builds and runs each task's tests: as many at once as the
	// cores allow, whatever the episodes' --concurrency (sized to the
	// model's latency).
	tasks, quarantined, err := tenv.Check(ctx, recs, min(o.Concurrency, runtime.NumCPU()), log)
	if err != nil {
		return err
	}
	if len(tasks) == 0 {
		return taskenv.NoTaskHoldsUp("--tasks", o.Tasks, len(recs), tenv.Quarantine.Quarantined())
	}
	if quarantined == nil {
		quarantined = []string{}
	}
	exp := openai.NewExporter(pol, func(r openai.Record) error { shards.Write(r); return nil })
	var firstGroup, firstEpisode uint64
	if prior != nil {
		firstGroup, firstEpisode = prior.nextGroup, prior.nextEpisode
	}
	var timings openai.Timings
	cfg := o.runConfig(runName, pol.Config().MaxTurns)
	deps := actors.Deps{Provider: prov, Harness: tenv.Harness, Log: log, Counters: new(actors.Counters), Remote: remote,
		OnEpisode: func(r *actors.EpisodeResult) {
			exp.Add(openai.Episode{Episode: firstEpisode + r.Episode, Group: firstGroup + r.Group, GroupSize: r.GroupSize, Task: r.Task.View(),
				Outcome: r.Kind.String(), Trajectory: r.Trajectory, Attempts: r.Attempts})
			if r.Trajectory != nil {
				timings.Add(r.Trajectory)
			}
		}}
	log.Info().Int("tasks", len(tasks)).Int("quarantined", len(quarantined)).Int("group_size", o.GroupSize).
		Strs("servers", pol.Config().BaseURLs).Str("model", pol.Config().Model).Msg("rolling out")
	start := time.Now()
	bar := startBar(g, !o.JSON, int64(len(tasks)*o.GroupSize), "ep", rolloutProgress(deps.Counters, pol, start))
	ev, runErr := actors.Evaluate(ctx, actors.EvalConfig{Run: cfg, Tasks: tasks, Samples: o.GroupSize}, pol, deps)
	bar.stop()
	if err := exp.Close(); err != nil {
		runErr = errors.Join(runErr, fmt.Errorf("export: %w", err))
	}
	if err := shards.Close(); err != nil {
		runErr = errors.Join(runErr, fmt.Errorf("export: %w", err))
	}
	rep := newRolloutReport(o, ev, pol.Stats(), len(tasks))
	rep.Calls, rep.Export, rep.Quarantined, rep.Harness = timings.Summary(), exportReport{Dir: o.Out, Records: exp.Written()}, quarantined, tenv.Report()
	rep.Continued, rep.Interrupted = prior, ctx.Err() != nil
	return finish(g.stdout, dir, rep, o.JSON, rep.Interrupted, runErr)
}

// runConfig is the rollout's actors.Config: an episode a model turn a
// step, up to maxTurns.
func (o *rolloutOptions) runConfig(runName string, maxTurns int) actors.Config {
	cfg := actors.DefaultConfig()
	cfg.Run, cfg.Concurrency, cfg.MaxAttempts = runName, o.Concurrency, o.MaxRetries+1
	cfg.MaxSteps, cfg.MaxTries = maxTurns, 0
	// The model servers batch; frog sends each request as it comes.
	cfg.MaxBatch, cfg.InferenceWorkers = 1, o.Concurrency
	return cfg
}

// newRolloutReport is the report of a rollout of tasks tasks: its
// evaluation ev and the model's stats st.
func newRolloutReport(o *rolloutOptions, ev actors.EvalReport, st openai.Stats, tasks int) rolloutReport {
	rep := rolloutReport{
		Solved: ev.Solved, Outcomes: ev.Outcomes, Tasks: tasks, EpisodesPerSecond: ev.Summary.EpisodesPerSecond,
		ElapsedSeconds: ev.Summary.ElapsedSeconds, LLM: st, Run: ev.Summary, Config: *o, Version: version(),
	}
	if s := ev.Summary.ElapsedSeconds; s > 0 {
		rep.TokensPerSecond = float64(st.CompletionTokens) / s
	}
	return rep
}

// rolloutProgress is the progress bar's line of a rollout started at start.
func rolloutProgress(c *actors.Counters, pol *openai.Policy, start time.Time) func() (string, int64) {
	return func() (string, int64) {
		st := pol.Stats()
		desc := fmt.Sprintf("episodes (%d running, %d infra failed, %.0f tok/s", c.Running.Load(), c.FailedInfra.Load(),
			float64(st.CompletionTokens)/time.Since(start).Seconds())
		if done := c.Completed.Load(); done > 0 {
			desc += fmt.Sprintf(", %.0f%% solved", 100*float64(c.Solved.Load())/float64(done))
		}
		return desc + ")", c.Recorded()
	}
}

func (r rolloutReport) print(w io.Writer, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(w).Encode(r)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	x := r.Solved
	fmt.Fprintf(tw, "solved\t%5.1f%%  [%4.1f, %4.1f]  (%d/%d)\n", 100*x.Rate, 100*x.Lo, 100*x.Hi, x.K, x.N)
	fmt.Fprintf(tw, "outcomes\t%d completed, %d failed (infrastructure), %d cancelled; %d reward hacks suspected (rewarded 0)\n", r.Outcomes.Completed, r.Outcomes.FailedInfra, r.Outcomes.Cancelled, r.Outcomes.RewardHackSuspected)
	fmt.Fprintf(tw, "model calls\t%d (%d mistakes, %d context overflows, %d failed for good)\n", r.LLM.Calls, r.LLM.Mistakes, r.LLM.ContextErrors, r.LLM.InfraFaults)
	fmt.Fprintf(tw, "tokens\t%d prompt, %d completion (%.0f completion tokens/s)\n", r.LLM.PromptTokens, r.LLM.CompletionTokens, r.TokensPerSecond)
	fmt.Fprintf(tw, "latency\tp50 %.1f ms, p99 %.1f ms; frog's overhead p50 %.2f ms, p99 %.2f ms\n", r.Calls.LatencyP50MS, r.Calls.LatencyP99MS, r.Calls.OverheadP50MS, r.Calls.OverheadP99MS)
	fmt.Fprintf(tw, "throughput\t%.2f episodes/s over %.1f s\n", r.EpisodesPerSecond, r.ElapsedSeconds)
	fmt.Fprintf(tw, "export\t%d records in %s\n", r.Export.Records, filepath.Join(r.Export.Dir, "trajectories"))
	if c := r.Continued; c != nil {
		fmt.Fprintf(tw, "continued\tafter %d records of %d groups there; %d tasks with a whole group not rolled out again\n", c.Records, c.Groups, c.TasksDone)
	}
	fmt.Fprintf(tw, "quarantined\t%d\n", len(r.Quarantined))
	return tw.Flush()
}
