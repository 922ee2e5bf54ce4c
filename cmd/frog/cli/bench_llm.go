package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/frognano/frog/actors"
	envsim "github.com/frognano/frog/env/sim"
	"github.com/frognano/frog/policy/openai"
	"github.com/frognano/frog/policy/openai/openaitest"
	synthsim "github.com/frognano/frog/synth/sim"
)

// benchLLMOptions are the flags of `frog bench llm`.
type benchLLMOptions struct {
	Episodes    int
	Concurrency int
	MaxInflight int
	Latency     time.Duration
	Turns       int
	Tasks       string
	Sample      int
	GroupSize   int
	Out         string
	Sandbox     sandboxOptions
	TaskOpts    taskOptions
	JSON        bool
}

func newBenchLLMCmd(g *globals) *cobra.Command {
	o := &benchLLMOptions{}
	c := &cobra.Command{
		Use:   "llm",
		Short: "Benchmark LLM rollouts against a fake OpenAI-compatible server of fixed latency",
		Long: `bench llm starts a fake OpenAI-compatible server in the process that answers
every chat request after --latency with a scripted tool call (run_tests, then
submit at the --turns-th call), and rolls episodes out against it through the
real policy (policy/openai, the SDK, HTTP), policy server and episode actors.
It reports episodes/s and, per model call, the latency and frog's own
overhead in it (the time not spent waiting for the server), p50 and p99.

Without --tasks the sandboxes are simulated (no waiting), so the figures are
frog's alone; with --tasks it is frog rollout itself, in real sandboxes
(--sandbox process or docker), writing its export to --out.`,
		Example: `  frog bench llm --episodes 640 --concurrency 64 --latency 50ms
  frog bench llm --tasks tasks.jsonl --group-size 1 --concurrency 64 --sandbox docker --out /tmp/bench-llm`,
		Args: cobra.NoArgs,
		PreRunE: func(*cobra.Command, []string) error {
			switch {
			case o.Episodes < 1 || o.Concurrency < 1 || o.MaxInflight < 1 || o.Turns < 1 || o.GroupSize < 1:
				return usagef("--episodes, --concurrency, --max-inflight, --turns and --group-size: want >= 1")
			case o.Latency < 0:
				return usagef("--latency %v: want >= 0", o.Latency)
			}
			return firstErr(inRange("--episodes", o.Episodes, 1, 1<<30), inRange("--concurrency", o.Concurrency, 1, actors.MaxConcurrency),
				inRange("--max-inflight", o.MaxInflight, 1, actors.MaxConcurrency), inRange("--turns", o.Turns, 1, actors.MaxSteps),
				inRange("--group-size", o.GroupSize, 1, actors.MaxGroupSize))
		},
		RunE: func(c *cobra.Command, _ []string) error { return runBenchLLM(c.Context(), g, o) },
	}
	f := c.Flags()
	f.IntVar(&o.Episodes, "episodes", 640, "episodes to play (simulated sandboxes)")
	f.IntVar(&o.Concurrency, "concurrency", 64, "episodes running at once")
	f.IntVar(&o.MaxInflight, "max-inflight", 64, "most requests outstanding on the server")
	f.DurationVar(&o.Latency, "latency", 50*time.Millisecond, "the fake server's time per answer")
	f.IntVar(&o.Turns, "turns", 3, "model calls per episode (the last one submits)")
	f.StringVar(&o.Tasks, "tasks", "", "task store: run frog rollout on it in real sandboxes instead of simulated ones")
	f.IntVar(&o.GroupSize, "group-size", 1, "episodes per task with --tasks")
	f.IntVar(&o.Sample, "sample", 0, "with --tasks, a seeded random sample of N tasks (0: all)")
	f.StringVar(&o.Out, "out", "", "export directory with --tasks (default: a temporary one, removed)")
	o.Sandbox.flags(f, "process")
	o.TaskOpts.flags(f)
	f.BoolVar(&o.JSON, "json", false, "print the result as one JSON object")
	return c
}

// scriptedTurns answers run_tests until the turns-th call, then submit.
func scriptedTurns(turns int) func(openaitest.Request) openaitest.Reply {
	return func(r openaitest.Request) openaitest.Reply {
		n := 0
		for _, m := range r.Messages {
			if m.Role == "assistant" {
				n++
			}
		}
		name := "run_tests"
		if n >= turns-1 {
			name = "submit"
		}
		return openaitest.Reply{Content: "ok", ToolCalls: []openaitest.ToolCall{openaitest.Call(name, "{}")}}
	}
}

// benchLLMReport is what `frog bench llm` prints (simulated sandboxes).
type benchLLMReport struct {
	Episodes          int                `json:"episodes"`
	Concurrency       int                `json:"concurrency"`
	LatencyMS         float64            `json:"server_latency_ms"`
	EpisodesPerSecond float64            `json:"episodes_per_second"`
	Calls             openai.TimingStats `json:"model_calls"`
	PeakInflight      int64              `json:"server_peak_inflight"`
	Outcomes          actors.EvalCounts  `json:"outcomes"`
	Version           string             `json:"frog_version"`
}

func runBenchLLM(ctx context.Context, g *globals, o *benchLLMOptions) error {
	log, err := g.logger()
	if err != nil {
		return err
	}
	srv := openaitest.New(scriptedTurns(o.Turns))
	srv.Latency = o.Latency
	defer srv.Close()
	cfg := openai.DefaultConfig()
	cfg.BaseURLs, cfg.Model, cfg.MaxInflight, cfg.MaxTurns = []string{srv.BaseURL()}, "test-model", o.MaxInflight, o.Turns+2
	if o.Tasks != "" {
		out := o.Out
		if out == "" {
			if out, err = os.MkdirTemp("", "frog-bench-llm-"); err != nil {
				return err
			}
			defer os.RemoveAll(out)
		}
		ro := &rolloutOptions{Policy: "openai", LLM: llmOptions{Config: cfg}, Tasks: o.Tasks, Sample: o.Sample, GroupSize: o.GroupSize, Out: out,
			Concurrency: o.Concurrency, MaxRetries: 2, ShardSize: 1000, Sandbox: o.Sandbox, TaskOpts: o.TaskOpts, JSON: o.JSON}
		if err := ro.validate(); err != nil {
			return err
		}
		return runRollout(ctx, g, ro)
	}
	pol, err := openai.New(cfg)
	if err != nil {
		return &UsageError{Err: err}
	}
	defer pol.Close()
	prov, err := envsim.New(envsim.DefaultConfig())
	if err != nil {
		return err
	}
	simTasks, err := synthsim.New(1, 0.5).Tasks(ctx, o.Episodes, 1)
	if err != nil {
		return err
	}
	tasks := make([]actors.EvalTask, len(simTasks))
	for i := range simTasks {
		tasks[i] = actors.EvalTask{Task: simTasks[i]}
	}
	var timings openai.Timings
	run := actors.DefaultConfig()
	run.Run, run.Concurrency, run.MaxSteps, run.MaxBatch, run.InferenceWorkers = "bench-llm", o.Concurrency, cfg.MaxTurns, 1, o.Concurrency
	deps := actors.Deps{Provider: prov, Log: log, OnEpisode: func(r *actors.EpisodeResult) {
		if r.Trajectory != nil {
			timings.Add(r.Trajectory)
		}
	}}
	ev, err := actors.Evaluate(ctx, actors.EvalConfig{Run: run, Tasks: tasks}, pol, deps)
	if err != nil {
		return err
	}
	rep := benchLLMReport{Episodes: ev.Outcomes.Completed + ev.Outcomes.FailedInfra + ev.Outcomes.Cancelled, Concurrency: o.Concurrency,
		LatencyMS: float64(o.Latency.Microseconds()) / 1000, EpisodesPerSecond: ev.Summary.EpisodesPerSecond, Calls: timings.Summary(),
		PeakInflight: srv.PeakInflight(), Outcomes: ev.Outcomes, Version: version()}
	if ctx.Err() != nil {
		return ErrInterrupted
	}
	return rep.print(g.stdout, o.JSON)
}

func (r benchLLMReport) print(w io.Writer, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(w).Encode(r)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "episodes\t%d at %d concurrent, server latency %.0f ms (peak %d requests in flight)\n", r.Episodes, r.Concurrency, r.LatencyMS, r.PeakInflight)
	fmt.Fprintf(tw, "throughput\t%.1f episodes/s\n", r.EpisodesPerSecond)
	fmt.Fprintf(tw, "model calls\t%d: latency p50 %.1f ms, p99 %.1f ms\n", r.Calls.Calls, r.Calls.LatencyP50MS, r.Calls.LatencyP99MS)
	fmt.Fprintf(tw, "frog's overhead\tp50 %.3f ms, p99 %.3f ms per call\n", r.Calls.OverheadP50MS, r.Calls.OverheadP99MS)
	fmt.Fprintf(tw, "outcomes\t%d completed, %d failed (infrastructure), %d cancelled\n", r.Outcomes.Completed, r.Outcomes.FailedInfra, r.Outcomes.Cancelled)
	return tw.Flush()
}
