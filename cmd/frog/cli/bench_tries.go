package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/frognano/frog/actors"
	"github.com/frognano/frog/env"
	"github.com/frognano/frog/gotask"
	"github.com/frognano/frog/policy"
	"github.com/frognano/frog/run/taskenv"
	"github.com/frognano/frog/synth/source"
	"github.com/frognano/frog/synth/store"
)

type benchTriesOptions struct {
	tasks       string
	limit       int
	perTask     int
	groupSize   int
	tries       int
	policy      string
	concurrency int
	opens       int
	sandbox     sandboxOptions
	taskOpts    taskOptions
	json        bool
}

func newBenchTriesCmd(g *globals) *cobra.Command {
	o := &benchTriesOptions{}
	c := &cobra.Command{
		Use:   "tries",
		Short: "Benchmark trying repair candidates: schema binaries against a real go test per try",
		Long: `tries measures, in one run on the same tasks:

  tries/s      the same candidates of each task tried through one mutant-schema
               binary (one build for the list, then a test run per try: served
               by one test process, as episodes in process sandboxes try them,
               and a process a try) and by a real build per try (go test with
               the edited file laid over), with no outcome cache; the ratio, and
               whether the paths judged alike;
  episodes/s   episodes of up to --tries tries each (--policy, G = --group-size
               per task) in the run's sandboxes with the outcome cache and shared
               schema binaries on, as training runs them: a first pass over the
               tasks (every task new to the harness), a second (warm: every
               answer cached), and the first pass of a later run on the same
               store (a new harness: no answer cached, the binaries the first
               pass built still on disk, the policy's other seeds; its tasks
               checked again first, timed apart), each with its CPU time
               (frog's and its test processes', builds'), its try runs and
               how many a try server answered;
  open         sandbox open time for a task with its workspace template made
               (the task cache) against laying the workspace out from the module
               each time (no task cache), p50;
  check        the tasks' check (quarantine: the bug's tests, the gold patch's)
               before the passes, timed, and the first pass's rate counting
               its tasks' share of it: every new task of a run pays it once;
               with its CPU time and builds;
  a new task   what a task new to a run costs, its check and its first group:
               builds and CPU seconds, and the episodes/s that CPU alone
               allows a run over new tasks (cores × G / CPU-s), against the
               CPU seconds of an episode of a task whose binaries are built
               (the later run and its check) and the rate they allow.

--per-task 0 skips the tries/s comparison (which also warms the Go build
cache with the tasks' packages, making the first pass less cold).

With --cpuprofile, frog's samples carry a label phase=check, first, second,
later-check or later-run: go tool pprof -tagfocus=phase=first reads one.`,
		Example: `  frog bench tries --tasks runs/tasks.jsonl
  frog bench tries --tasks runs/tasks.jsonl --limit 8 --json`,
		Args: cobra.NoArgs,
		PreRunE: func(*cobra.Command, []string) error {
			switch {
			case o.tasks == "":
				return usagef("--tasks: a task store is required")
			case o.limit < 1 || o.perTask < 0 || o.groupSize < 1 || o.tries < 1 || o.concurrency < 1 || o.opens < 1:
				return usagef("--limit, --group-size, --tries, --concurrency and --opens want >= 1, --per-task >= 0")
			}
			if err := firstErr(inRange("--limit", o.limit, 1, 1<<20), inRange("--per-task", o.perTask, 0, 1<<20), inRange("--group-size", o.groupSize, 1, actors.MaxGroupSize),
				inRange("--tries", o.tries, 1, actors.MaxSteps-12), inRange("--concurrency", o.concurrency, 1, actors.MaxConcurrency), inRange("--opens", o.opens, 1, 1<<20)); err != nil {
				return err
			}
			if _, err := evalPolicy(o.policy, 1); err != nil {
				return &UsageError{Err: fmt.Errorf("--policy: %w", err)}
			}
			return checkSandbox(o.sandbox.Kind, "docker", "process", "auto")
		},
		RunE: func(c *cobra.Command, _ []string) error { return runBenchTries(c.Context(), g, o) },
	}
	f := c.Flags()
	f.StringVar(&o.tasks, "tasks", "", "task store (.jsonl) (required)")
	f.IntVar(&o.limit, "limit", 8, "tasks to use, from the start of the store")
	f.IntVar(&o.perTask, "per-task", 40, "candidates of each task tried both ways (40: a GRPO group's tries of one task, 8 episodes of 5; 0: skip the comparison, which warms the Go build cache for the episodes' passes)")
	f.IntVar(&o.groupSize, "group-size", 8, "episodes per task in the episodes/s passes")
	f.IntVar(&o.tries, "tries", 10, "most tries per episode in the episodes/s passes")
	f.StringVar(&o.policy, "policy", "random", "policy of the episodes/s passes")
	f.IntVar(&o.concurrency, "concurrency", playConcurrency(), "episodes at once in the episodes/s passes (as frog eval plays them)")
	f.IntVar(&o.opens, "opens", 10, "sandbox opens timed each way")
	o.sandbox.flags(f, "process")
	o.taskOpts.flags(f)
	f.BoolVar(&o.json, "json", false, "print the report as one JSON object")
	return c
}

type benchTriesReport struct {
	Tries gotask.TryBench `json:"tries"`
	// Check is the tasks' check (quarantine) before the passes: a cost
	// every new task pays once in a run, part of what its first episodes
	// would cost.
	Check    checkBench          `json:"check"`
	Episodes []episodePass       `json:"episodes"`
	NewTask  newTaskCost         `json:"new_task"`
	Open     openBench           `json:"open"`
	Harness  gotask.HarnessStats `json:"harness"`
}

type episodePass struct {
	Pass       string  `json:"pass"`
	Episodes   int     `json:"episodes"`
	Seconds    float64 `json:"seconds"`
	PerSecond  float64 `json:"episodes_per_second"`
	TriesPerEp float64 `json:"tries_per_episode"`
	SolveRate  float64 `json:"solve_rate"`
	Executions float64 `json:"test_executions_per_episode"`
	CacheHit   float64 `json:"outcome_cache_hit_rate"`
	Builds     int64   `json:"schema_builds"`
	// RealBuilds are the real builds (of verdicts and test runs) this pass
	// made; the trees found built already are not counted.
	RealBuilds int64 `json:"real_builds"`
	// Tries are the tries this pass computed (the outcome cache's misses),
	// TryRuns their runs of a schema binary, Verdicts the verdicts it
	// computed.
	Tries    int64 `json:"tries_computed"`
	TryRuns  int64 `json:"try_runs"`
	Verdicts int64 `json:"verdicts_computed"`
	// Served are the try runs a try server answered, ServerStarts the
	// servers started (gotask.HarnessStats).
	Served       int64 `json:"try_runs_served"`
	ServerStarts int64 `json:"try_servers_started"`
	Confirmed    int64 `json:"served_runs_confirmed"`
	ServedEnded  int64 `json:"served_runs_ended"`
	// CPUSeconds is the CPU time (user and system) of frog and of the
	// processes it waited for (test binaries, builds, servers) during the
	// pass: steadier than the wall time on a machine with other load, and
	// what two cores bound (episodes/s <= 2 * Episodes / CPUSeconds).
	CPUSeconds float64 `json:"cpu_seconds"`
	// CoverBuilds are the coverage binaries this pass built (of states an
	// episode changed and asked the coverage of).
	CoverBuilds int64 `json:"cover_builds"`
	// GoTests are its go test runs (a build each, where no binary could
	// be shared).
	GoTests int64 `json:"go_test_runs"`
	// Seconds is the harness's time per kind of call in this pass
	// (gotask.HarnessStats.Seconds).
	HarnessSeconds map[string]float64 `json:"harness_seconds,omitempty"`
}

type checkBench struct {
	Tasks   int     `json:"tasks"`
	Seconds float64 `json:"seconds"`
	// FirstPassPerSecond counts the check of the tasks played in the first
	// pass (their share of Seconds) as part of its time.
	FirstPassPerSecond float64 `json:"first_pass_with_check_episodes_per_second"`
	// LaterSeconds is the later run's check of the tasks played (its
	// binaries built by the first run's); LaterPerSecond counts it as part
	// of the later run's pass; LaterCPU is its CPU time.
	LaterSeconds   float64 `json:"later_run_seconds"`
	LaterPerSecond float64 `json:"later_run_with_check_episodes_per_second"`
	LaterCPU       float64 `json:"later_run_cpu_seconds"`
	// CPUSeconds is the first check's CPU time (as episodePass's), and
	// CoverBuilds, RealBuilds and GoTests its builds: a coverage binary of
	// each task with its bug, the gold trees not found built, and go test
	// runs where no binary could be shared.
	CPUSeconds  float64 `json:"cpu_seconds"`
	CoverBuilds int64   `json:"cover_builds"`
	RealBuilds  int64   `json:"real_builds"`
	GoTests     int64   `json:"go_test_runs"`
}

// newTaskCost is what a task new to a run costs (its check and its first
// pass's group) against an episode of a task whose binaries a run built
// before (the later run and its check), in CPU time: on a machine of
// Cores cores, CPU alone caps a run over new tasks, G episodes each, at
// Cores·G/CPUSeconds episodes a second.
type newTaskCost struct {
	Builds             float64 `json:"builds"`
	CPUSeconds         float64 `json:"cpu_seconds"`
	Group              int     `json:"group"`
	Cores              int     `json:"cores"`
	CeilingPerSecond   float64 `json:"ceiling_episodes_per_second"`
	KnownEpisodeCPU    float64 `json:"known_task_episode_cpu_seconds"`
	KnownCeilingPerSec float64 `json:"known_task_ceiling_episodes_per_second"`
}

// builds is every build the check made.
func (c checkBench) builds() int64 { return c.CoverBuilds + c.RealBuilds + c.GoTests }

// builds is every build the pass made: schema, real and coverage
// binaries, and go test runs.
func (p episodePass) builds() int64 { return p.Builds + p.RealBuilds + p.CoverBuilds + p.GoTests }

type openBench struct {
	CachedMillisP50   float64 `json:"with_task_cache_ms_p50"`
	UncachedMillisP50 float64 `json:"without_task_cache_ms_p50"`
	Ratio             float64 `json:"ratio"`
}

func runBenchTries(ctx context.Context, g *globals, o *benchTriesOptions) error {
	log, err := g.logger()
	if err != nil {
		return err
	}
	recs, err := store.Load(o.tasks)
	if err != nil {
		return &UsageError{Err: fmt.Errorf("--tasks %s: %w", o.tasks, err)}
	}
	tenv, prov, release, err := openTaskEnv(ctx, o.taskOpts, sandboxSpec{sandboxOptions: o.sandbox, Run: "bench-tries", Concurrency: o.concurrency}, log)
	if err != nil {
		return err
	}
	defer release()
	checkStart, checkCPU, beforeCheck := time.Now(), cpuSeconds(), tenv.Harness.Stats()
	considered := recs[:min(len(recs), 4*o.limit)]
	var checked []actors.EvalTask
	var quarantined []string
	pprof.Do(ctx, pprof.Labels("phase", "check"), func(ctx context.Context) {
		checked, quarantined, err = tenv.Check(ctx, considered, o.concurrency, log)
	})
	if err != nil {
		return err
	}
	if len(checked) == 0 {
		return fmt.Errorf("no task of the %d considered holds up (all quarantined: %s)", len(considered), strings.Join(quarantined, ", "))
	}
	var rep benchTriesReport
	afterCheck := tenv.Harness.Stats()
	rep.Check = checkBench{Tasks: len(considered), Seconds: time.Since(checkStart).Seconds(), CPUSeconds: cpuSeconds() - checkCPU,
		CoverBuilds: afterCheck.CoverBuilds - beforeCheck.CoverBuilds, RealBuilds: afterCheck.RealBuilds - beforeCheck.RealBuilds,
		GoTests: afterCheck.GoTests - beforeCheck.GoTests}
	checked = checked[:min(len(checked), o.limit)]
	tasks := make([]*env.Task, len(checked))
	for i := range checked {
		tasks[i] = &checked[i].Task
	}
	if o.perTask > 0 {
		log.Info().Int("tasks", len(tasks)).Msg("tries: schema binaries against real builds")
		if rep.Tries, err = gotask.BenchTries(ctx, prov, tenv.Workspaces, tasks, o.perTask); err != nil {
			return err
		}
	}
	pol, _ := evalPolicy(o.policy, 1)
	cfg := actors.DefaultConfig()
	cfg.Run, cfg.Concurrency, cfg.MaxTries, cfg.MaxSteps = "bench-tries", o.concurrency, o.tries, env.StepsForTries(o.tries)
	// The third pass is the first pass of a later run on the same store: a
	// new harness (its outcome cache empty, as a new process's is) over the
	// binaries the earlier passes left in the binary cache, and a policy
	// with other seeds.
	later := gotask.NewHarness(tenv.Workspaces, tenv.HarnessConfig)
	laterPol, _ := evalPolicy(o.policy, 2)
	// A later run checks its tasks as every run does (what the tries'
	// time limits learn from): timed apart, as the first run's check is.
	laterCheck, laterCPU := time.Now(), cpuSeconds()
	pprof.Do(ctx, pprof.Labels("phase", "later-check"), func(ctx context.Context) {
		gotask.NewQuarantine(tenv.Workspaces, later, prov, "bench-tries", log).CheckAll(ctx, tasks, taskenv.CheckConcurrency(o.concurrency))
	})
	rep.Check.LaterSeconds, rep.Check.LaterCPU = time.Since(laterCheck).Seconds(), cpuSeconds()-laterCPU
	for _, pass := range []struct {
		name string
		h    *gotask.Harness
		pol  policy.Policy
	}{{"first", tenv.Harness, pol}, {"second", tenv.Harness, pol}, {"later-run", later, laterPol}} {
		log.Info().Str("pass", pass.name).Msg("episodes")
		before, cpu0 := pass.h.Stats(), cpuSeconds()
		var e actors.EvalReport
		pprof.Do(ctx, pprof.Labels("phase", pass.name), func(ctx context.Context) {
			e, err = actors.Evaluate(ctx, actors.EvalConfig{Run: cfg, Tasks: checked, Samples: o.groupSize}, pass.pol,
				actors.Deps{Provider: prov, Harness: pass.h, Log: log})
		})
		if err != nil {
			return err
		}
		p := newEpisodePass(pass.name, e, before, pass.h.Stats(), cpuSeconds()-cpu0)
		rep.Episodes = append(rep.Episodes, p)
		switch {
		case pass.name == "first" && rep.Check.Tasks > 0:
			share := rep.Check.Seconds * float64(len(checked)) / float64(rep.Check.Tasks)
			rep.Check.FirstPassPerSecond = float64(p.Episodes) / (p.Seconds + share)
		case pass.name == "later-run":
			rep.Check.LaterPerSecond = float64(p.Episodes) / (p.Seconds + rep.Check.LaterSeconds)
		}
	}
	rep.NewTask = costOfNewTask(rep, len(checked))
	rep.Harness = tenv.Harness.Stats()
	if rep.Open, err = benchOpen(ctx, o, tenv, tasks, log); err != nil {
		return err
	}
	return rep.print(g.stdout, o.json)
}

// newEpisodePass is the figures of one pass of episodes: e's, and what
// the harness counted between before and after.
func newEpisodePass(name string, e actors.EvalReport, before, after gotask.HarnessStats, cpu float64) episodePass {
	p := episodePass{Pass: name, Episodes: e.Episodes, Seconds: e.Cost.WallSeconds, TriesPerEp: e.Cost.TriesPerEpisode,
		SolveRate: e.Solved.Rate, Executions: e.Cost.ExecutionsPerEpisode, Builds: after.Builds - before.Builds,
		RealBuilds: after.RealBuilds - before.RealBuilds, Tries: after.Tries - before.Tries, TryRuns: after.TryRuns - before.TryRuns,
		Verdicts: after.Verdicts - before.Verdicts, Served: after.Served - before.Served, ServerStarts: after.ServerStarts - before.ServerStarts,
		Confirmed: after.Confirmed - before.Confirmed, ServedEnded: after.ServedEnded - before.ServedEnded, CPUSeconds: cpu,
		CoverBuilds: after.CoverBuilds - before.CoverBuilds, GoTests: after.GoTests - before.GoTests}
	if p.Seconds > 0 {
		p.PerSecond = float64(p.Episodes) / p.Seconds
	}
	if c := after.Calls - before.Calls; c > 0 {
		p.CacheHit = float64(after.Hits-before.Hits) / float64(c)
	}
	for k, v := range after.Seconds {
		if d := v - before.Seconds[k]; d > 0 {
			if p.HarnessSeconds == nil {
				p.HarnessSeconds = map[string]float64{}
			}
			p.HarnessSeconds[k] = d
		}
	}
	return p
}

// costOfNewTask works out newTaskCost from the check and the passes of
// rep, n of whose checked tasks the passes played.
func costOfNewTask(rep benchTriesReport, n int) newTaskCost {
	c := newTaskCost{Cores: runtime.GOMAXPROCS(0)}
	var first, later *episodePass
	for i, p := range rep.Episodes {
		switch p.Pass {
		case "first":
			first = &rep.Episodes[i]
		case "later-run":
			later = &rep.Episodes[i]
		}
	}
	if first == nil || n == 0 || rep.Check.Tasks == 0 {
		return c
	}
	share := float64(n) / float64(rep.Check.Tasks) // of the check, the played tasks'
	c.Group = first.Episodes / n
	c.Builds = (share*float64(rep.Check.builds()) + float64(first.builds())) / float64(n)
	c.CPUSeconds = (share*rep.Check.CPUSeconds + first.CPUSeconds) / float64(n)
	if c.CPUSeconds > 0 {
		c.CeilingPerSecond = float64(c.Cores*c.Group) / c.CPUSeconds
	}
	if later != nil && later.Episodes > 0 {
		c.KnownEpisodeCPU = (later.CPUSeconds + rep.Check.LaterCPU) / float64(later.Episodes)
		if c.KnownEpisodeCPU > 0 {
			c.KnownCeilingPerSec = float64(c.Cores) / c.KnownEpisodeCPU
		}
	}
	return c
}

// benchOpen times sandbox opens of the tasks with their templates made
// against with a fresh template root each time (laid out from the module).
func benchOpen(ctx context.Context, o *benchTriesOptions, tenv *taskenv.Env, tasks []*env.Task, log zerolog.Logger) (openBench, error) {
	var with, without []time.Duration
	for i := range o.opens {
		t := tasks[i%len(tasks)]
		for _, cached := range []bool{true, false} {
			ws := tenv.Workspaces
			if !cached {
				root, err := os.MkdirTemp("", "frog-bench-open-")
				if err != nil {
					return openBench{}, err
				}
				defer os.RemoveAll(root)
				if ws, err = gotask.NewWorkspaces(root, log); err != nil {
					return openBench{}, err
				}
				for _, dir := range o.taskOpts.Locals {
					if m, err := source.Local(dir); err == nil {
						ws.AddLocal(m)
					}
				}
			}
			prov, release, err := openSandboxes(ctx, sandboxSpec{sandboxOptions: o.sandbox, Run: "bench-open", Concurrency: 1, Workspaces: ws}, log)
			if err != nil {
				return openBench{}, err
			}
			t0 := time.Now()
			sb, err := prov.Open(ctx, env.OpenOptions{Run: "bench-open", Task: t})
			d := time.Since(t0)
			if err != nil {
				release()
				return openBench{}, err
			}
			sb.Close(context.WithoutCancel(ctx))
			release()
			if cached {
				with = append(with, d)
			} else {
				without = append(without, d)
			}
		}
	}
	b := openBench{CachedMillisP50: medianMs(with), UncachedMillisP50: medianMs(without)}
	if b.CachedMillisP50 > 0 {
		b.Ratio = b.UncachedMillisP50 / b.CachedMillisP50
	}
	return b, nil
}

func medianMs(ds []time.Duration) float64 {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return float64(s[len(s)/2].Microseconds()) / 1000
}

// cpuSeconds is the CPU time of this process and of the children it has
// waited for, user and system.
func cpuSeconds() float64 {
	var total float64
	for _, who := range []int{syscall.RUSAGE_SELF, syscall.RUSAGE_CHILDREN} {
		var ru syscall.Rusage
		if syscall.Getrusage(who, &ru) == nil {
			total += time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
		}
	}
	return total
}

func (r benchTriesReport) print(w io.Writer, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(w).Encode(r)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if t := r.Tries; t.Tasks > 0 {
		fmt.Fprintf(tw, "tries\t%d candidates of %d tasks\tagree %d/%d\t\n", t.Candidates, t.Tasks, t.Agree, t.Candidates)
		fmt.Fprintf(tw, "  schema\t%.1f tries/s\trun p50 %.1f ms\tbuilds %.1f s in all\n", t.Schema.TriesPerSec, t.Schema.RunMillisP50, t.Schema.BuildSeconds)
		fmt.Fprintf(tw, "  schema, a process a try\t%.1f tries/s\trun p50 %.1f ms\tserved and alone agree %d/%d\n", t.Alone.TriesPerSec, t.Alone.RunMillisP50, t.AgreeServed, t.Candidates)
		fmt.Fprintf(tw, "  real build\t%.2f tries/s\trun p50 %.0f ms\t\n", t.Real.TriesPerSec, t.Real.RunMillisP50)
		fmt.Fprintf(tw, "  ratio\t%.1f×\t\t\n", t.Ratio)
	}
	fmt.Fprintf(tw, "check\t%d tasks in %.1f s (%.1f CPU-s, %d builds)\tfirst pass with its tasks' share: %.2f episodes/s\tlater run's check %.1f s, with it: %.2f episodes/s\n",
		r.Check.Tasks, r.Check.Seconds, r.Check.CPUSeconds, r.Check.builds(), r.Check.FirstPassPerSecond, r.Check.LaterSeconds, r.Check.LaterPerSecond)
	for _, p := range r.Episodes {
		fmt.Fprintf(tw, "episodes (%s pass)\t%.2f episodes/s\t%d in %.1f s (%.1f CPU-s)\t%.1f tries, %.1f test runs each; solved %.0f%%; cache hits %.0f%%; %d schema and %d real builds\n",
			p.Pass, p.PerSecond, p.Episodes, p.Seconds, p.CPUSeconds, p.TriesPerEp, p.Executions, 100*p.SolveRate, 100*p.CacheHit, p.Builds, p.RealBuilds)
	}
	if n := r.NewTask; n.CPUSeconds > 0 {
		fmt.Fprintf(tw, "a new task\t%.1f builds, %.1f CPU-s (its check and its group of %d)\tCPU caps new tasks at %.1f episodes/s on %d cores\tan episode of a built task: %.3f CPU-s (cap %.0f episodes/s)\n",
			n.Builds, n.CPUSeconds, n.Group, n.CeilingPerSecond, n.Cores, n.KnownEpisodeCPU, n.KnownCeilingPerSec)
	}
	fmt.Fprintf(tw, "open\twith task cache %.1f ms p50\twithout %.1f ms p50\tratio %.1f×\n", r.Open.CachedMillisP50, r.Open.UncachedMillisP50, r.Open.Ratio)
	for _, p := range r.Episodes {
		if len(p.HarnessSeconds) == 0 {
			continue
		}
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(p.HarnessSeconds)) {
			parts = append(parts, fmt.Sprintf("%s %.1f s", k, p.HarnessSeconds[k]))
		}
		fmt.Fprintf(tw, "harness time (%s pass)\t%s\t(calls that ran, summed over concurrent episodes)\t\n", p.Pass, strings.Join(parts, ", "))
	}
	return tw.Flush()
}
