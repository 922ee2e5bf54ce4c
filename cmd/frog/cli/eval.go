package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/frognano/frog/actors"
	"github.com/frognano/frog/cuda"
	"github.com/frognano/frog/env"
	"github.com/frognano/frog/env/replay"
	"github.com/frognano/frog/policy"
	"github.com/frognano/frog/policy/baseline"
	"github.com/frognano/frog/policy/neural"
	"github.com/frognano/frog/run"
	"github.com/frognano/frog/run/taskenv"
)

// evalOptions are the flags of `frog eval`.
type evalOptions struct {
	Policy      string         `json:"policy"`
	Tasks       string         `json:"tasks"`
	Tries       int            `json:"tries"`
	Samples     int            `json:"samples"`
	Limit       int            `json:"limit"`
	Sample      int            `json:"sample"`
	Ceiling     bool           `json:"ceiling"`
	Seed        uint64         `json:"seed"`
	Concurrency int            `json:"concurrency"`
	MaxSteps    int            `json:"max_steps"`
	Trajectory  string         `json:"trajectories,omitempty"`
	Env         string         `json:"env"`
	Table       string         `json:"table,omitempty"`
	Sandbox     sandboxOptions `json:"sandbox"`
	TaskOpts    taskOptions    `json:"task_options"`
	Remote      remoteOptions  `json:"remote,omitzero"`
	JSON        bool           `json:"-"`
	// remotes are the evaluations' Remotes, one a policy (--listen).
	remotes *remoteSeries
}

func newEvalCmd(g *globals) *cobra.Command {
	o := &evalOptions{}
	c := &cobra.Command{
		Use:   "eval",
		Short: "Evaluate a repair policy on a task store: solve rate with its 95% interval",
		Long: `eval plays every task of a store (each --samples times) with one policy, frozen,
in real sandboxes judged by the tasks' own tests, and reports the solve rate
overall and within 1, 3 and 10 tries, each with its 95% Wilson interval, and
the mean reciprocal rank of the first fix (MRR: 1/tries of a solved episode, 0
of an unsolved one) with its 95% percentile bootstrap interval; the same per
module, per operator family of the bug (whose inverse template is the fix)
and per number of injected bugs (k); and the test executions, tries and
sandbox seconds an episode cost.

With several policies (--policy A,B,…), every two are compared on the same
tasks, episode by episode: how many both solved, A only and B only within 1, 3
and 10 tries, and the two-sided p of McNemar's exact test on the pairs where
they differ (with --samples above 1 the pairs of one task are not independent
and the p is marked approximate).

Policies: random (a random candidate per try), fl-greedy (the most suspicious
line first), fl-feedback (fl-greedy that keeps partial fixes and demotes lines
where edits changed nothing). Candidates are template repairs at the lines that
spectrum fault localisation ranks highest; an episode may try --tries of them.

With --ceiling (the default) the candidate-space ceiling is measured on the same
tasks: an exhaustive search that tries every candidate at every line a failing
test runs, keeping partial fixes. It is the share of tasks whose fix lies in the
candidate space at all; no policy of this candidate space can beat it. It
learns nothing from the gold patch: it searches, as the policies do.

Each task is checked before it is played (its bug fails its tests, its gold
patch passes them); a task that does not hold up is quarantined and left out.

Interrupted (SIGINT, SIGTERM), eval stops its episodes, prints what it
scored (a policy or ceiling cut short says how many of its episodes it
scored; its rates are of those alone) and exits with 130.

With --env replay --table FILE (a table frog tabulate made) the policies play
the table's tasks against it instead of sandboxes: each verdict looked up, not
run, and every policy named NAME (replay) in the report. Only policies on the
built-in policy's protocol replay (prior, a trained run, fl-greedy, random);
docs/replay.md says what is replayable.

With --listen, rollout workers (frog worker --join) play episodes too, in
sandboxes of their own: each policy's evaluation is a run, and at its end the
workers are told to join the next one on the same address (docs/cluster.md).`,
		Example: `  frog eval --policy fl-feedback --tasks runs/heldout.jsonl
  frog eval --policy random --tasks runs/heldout.jsonl --tries 10 --json
  frog eval --policy fl-greedy --tasks tasks.jsonl --sandbox docker --limit 50
  frog eval --policy runs/train-1,fl-greedy --tasks tasks/heldout.jsonl --trajectories runs/eval-traj
  frog eval --env replay --table runs/heldout.table.jsonl --policy runs/train-1,prior`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return runEval(c.Context(), g, o) },
	}
	f := c.Flags()
	f.StringVar(&o.Policy, "policy", "fl-feedback", "policy, or several separated by commas (evaluated in turn on the same tasks, one harness and outcome cache): "+strings.Join(baseline.Names[:3], ", ")+
		"; prior (the untrained network frog train --start prior starts from at this --seed: the hand prior); a run directory of frog train (its last checkpoint) or a checkpoint file, greedy")
	f.StringVar(&o.Tasks, "tasks", "", "task store (.jsonl) written by frog synth (required)")
	f.IntVar(&o.Tries, "tries", 10, "most candidates an episode may try")
	f.IntVar(&o.Samples, "samples", 1, "episodes per task")
	f.IntVar(&o.Limit, "limit", 0, "evaluate only the first N tasks of the store (0: all)")
	f.IntVar(&o.Sample, "sample", 0, "evaluate a seeded random sample of N tasks of the store (the same for every run; 0: all)")
	f.BoolVar(&o.Ceiling, "ceiling", true, "also measure the candidate-space ceiling on the same tasks")
	f.Uint64Var(&o.Seed, "seed", 1, "seed of the policy's draws")
	f.IntVar(&o.Concurrency, "concurrency", playConcurrency(), "episodes running at once (each holds a sandbox); the tasks' checks run at most 2 per core")
	f.IntVar(&o.MaxSteps, "max-steps", 0, "most actions per episode (0: --tries + 12)")
	f.StringVar(&o.Trajectory, "trajectories", "", "write every episode (its steps, candidates and decisions) under this directory, a subdirectory a policy: DIR/<policy>/shard-NNNNN.jsonl")
	o.Sandbox.flags(f, "process")
	o.TaskOpts.flags(f)
	o.Remote.flags(f)
	f.BoolVar(&o.JSON, "json", false, "print the report as one JSON object")
	f.StringVar(&o.Env, "env", "real", "real (sandboxes judged by the tasks' tests) or replay (every verdict looked up in --table, made by frog tabulate; named a replay in the report)")
	f.StringVar(&o.Table, "table", "", "with --env replay: the replay table frog tabulate wrote (its tasks are the ones played)")
	c.PreRunE = func(c *cobra.Command, _ []string) error {
		if err := o.validateReplay(c); err != nil {
			return err
		}
		return o.validate()
	}
	return c
}

func (o *evalOptions) validate() error {
	switch {
	case o.Tasks == "" && o.Env != envReplay:
		return usagef("--tasks: a task store is required")
	case o.Limit < 0 || o.Sample < 0:
		return usagef("--limit and --sample: want >= 0")
	}
	if err := firstErr(inRange("--tries", o.Tries, 1, actors.MaxSteps-12), inRange("--samples", o.Samples, 1, actors.MaxGroupSize),
		inRange("--concurrency", o.Concurrency, 1, actors.MaxConcurrency), inRange("--max-steps", o.MaxSteps, 0, actors.MaxSteps)); err != nil {
		return err
	}
	if err := o.Sandbox.checkCounts(); err != nil {
		return err
	}
	if err := checkSandbox(o.Sandbox.Kind, "docker", "process", "auto"); err != nil {
		return err
	}
	for _, name := range strings.Split(o.Policy, ",") {
		if _, err := evalPolicy(name, o.Seed); err != nil {
			return &UsageError{Err: fmt.Errorf("--policy: %w", err)}
		}
	}
	if o.MaxSteps == 0 {
		o.MaxSteps = env.StepsForTries(o.Tries)
	}
	return nil
}

// evalPolicy is the policy --policy names: a baseline, or a trained
// policy — a run directory (its last checkpoint) or a checkpoint file —
// evaluated greedy.
func evalPolicy(name string, seed uint64) (policy.Policy, error) {
	if name == "ceiling" {
		return nil, errors.New(`"ceiling" is measured with --ceiling, not evaluated as a policy`)
	}
	if name == "prior" {
		// The network frog train --start prior starts from, untrained:
		// what a run's learning adds is the trained policy's rate against
		// this one, and what a run from scratch must reach.
		cfg := neural.DefaultConfig()
		cfg.Seed = seed
		l, err := neural.NewLearner(cuda.NewCPU(), cfg)
		if err != nil {
			return nil, err
		}
		return greedy(l), nil
	}
	if _, err := os.Stat(name); err == nil {
		ck, err := run.Load(name)
		if err != nil {
			return nil, err
		}
		if len(ck.Skipped) > 0 {
			// Not another policy than the one asked for without a word.
			return nil, fmt.Errorf("%s: the run's latest checkpoint does not load (%s); its newest that does is %s: name it to evaluate that one",
				name, strings.Join(ck.Skipped, "; "), ck.File)
		}
		p, err := ck.Policy()
		if err != nil {
			return nil, err
		}
		p.Greedy = true
		return p, nil
	}
	p, err := baseline.New(name, seed)
	if err != nil {
		return nil, fmt.Errorf("%w, or a run directory or checkpoint of frog train", err)
	}
	return p, nil
}

// greedy is l's current policy, taking the best option, with l closed.
func greedy(l *neural.Learner) policy.Policy {
	defer l.Close()
	p := *l.Current()
	p.Greedy = true
	return &p
}

// logRate logs a policy's solve rate the moment it is measured, so that a
// long evaluation shows its results as it goes.
func logRate(log zerolog.Logger, policy string, r actors.Rate) {
	log.Info().Str("policy", policy).Int("solved", r.K).Int("tasks", r.N).
		Str("rate", fmt.Sprintf("%.1f%% [%.1f, %.1f]", 100*r.Rate, 100*r.Lo, 100*r.Hi)).Msg("evaluated")
}

// evaluatePolicies plays each policy of --policy in turn on ecfg's tasks,
// reporting each under named(its name). An interruption ends the loop with
// what was measured; any other error is returned.
func (o *evalOptions) evaluatePolicies(ctx context.Context, ecfg actors.EvalConfig, deps actors.Deps, named func(string) string, log zerolog.Logger) ([]actors.EvalReport, error) {
	var out []actors.EvalReport
	for _, name := range strings.Split(o.Policy, ",") {
		if ctx.Err() != nil {
			break
		}
		log.Info().Str("policy", named(name)).Int("tasks", len(ecfg.Tasks)).Msg("evaluating")
		pol, _ := evalPolicy(name, o.Seed)
		pdeps, closeTraj, err := o.recordTrajectories(deps, named(name))
		if err != nil {
			return nil, err
		}
		pdeps.Remote = o.remotes.next()
		e, err := actors.Evaluate(ctx, ecfg, pol, pdeps)
		if cerr := closeTraj(); cerr != nil && err == nil {
			err = fmt.Errorf("--trajectories: %w", cerr)
		}
		if err != nil && ctx.Err() == nil {
			return nil, err
		}
		// Interrupted, e is still reported, marked as cut short: what it
		// scored, and the episodes it cancelled or never started.
		e.Policy = named(name)
		out = append(out, e)
		logRate(log, e.Policy, e.Solved)
	}
	return out, nil
}

// evalReport is what `frog eval` prints.
type evalReport struct {
	Policies []actors.EvalReport `json:"policies"`
	Ceiling  *actors.EvalReport  `json:"ceiling,omitempty"`
	// Pairs compares every two policies on the tasks both played.
	Pairs       []actors.Comparison `json:"pairs,omitempty"`
	Quarantined []string            `json:"quarantined"`
	Tasks       *taskenv.Report     `json:"tasks"`
	Replay      *replay.Report      `json:"replay,omitempty"`
	Config      evalOptions         `json:"config"`
	Version     string              `json:"frog_version"`
}

func runEval(ctx context.Context, g *globals, o *evalOptions) error {
	log, err := g.logger()
	if err != nil {
		return err
	}
	if o.Env == envReplay {
		if o.Remote.Listen != "" {
			return usagef("--listen plays real tasks on workers: not with --env replay")
		}
		return runEvalReplay(ctx, g, o, log)
	}
	run := "eval-" + time.Now().UTC().Format("20060102-150405")
	if err := o.openRemotes(run, log); err != nil {
		return err
	}
	recs, err := taskenv.Load("--tasks", o.Tasks, o.Limit, o.Sample, log)
	if err != nil {
		return err
	}
	tenv, prov, release, err := openTaskEnv(ctx, o.TaskOpts, sandboxSpec{sandboxOptions: o.Sandbox, Run: run, Concurrency: o.Concurrency}, log)
	if err != nil {
		return err
	}
	defer release()
	tasks, quarantined, err := tenv.Check(ctx, recs, o.Concurrency, log)
	if err != nil {
		return err
	}
	if len(tasks) == 0 {
		return taskenv.NoTaskHoldsUp("--tasks", o.Tasks, len(recs), tenv.Quarantine.Quarantined())
	}
	cfg := actors.DefaultConfig()
	cfg.Run, cfg.Concurrency, cfg.MaxSteps, cfg.MaxTries = run, o.Concurrency, o.MaxSteps, o.Tries
	ecfg := actors.EvalConfig{Run: cfg, Tasks: tasks, Samples: o.Samples}
	deps := actors.Deps{Provider: prov, Harness: tenv.Harness, Log: log}
	rep := evalReport{Quarantined: quarantined, Config: *o, Version: version()}
	rep.Policies, err = o.evaluatePolicies(ctx, ecfg, deps, func(name string) string { return name }, log.With().Int("quarantined", len(quarantined)).Logger())
	if err != nil {
		return err
	}
	if o.Ceiling && ctx.Err() == nil {
		ceil, _ := baseline.New("ceiling", o.Seed)
		cc := ecfg
		cc.Run.MaxTries, cc.Run.MaxSteps, cc.Samples = 0, 40, 1
		log.Info().Int("tasks", len(tasks)).Msg("measuring the candidate-space ceiling")
		deps.Remote = o.remotes.next()
		c, err := actors.Evaluate(ctx, cc, ceil, deps)
		if err != nil && ctx.Err() == nil {
			return err
		}
		// Interrupted, the tasks the search finished are still reported,
		// marked as cut short.
		c.Policy = "ceiling"
		rep.Ceiling = &c
		logRate(log, c.Policy, c.Solved)
	}
	rep.Pairs = comparePolicies(rep.Policies)
	rep.Tasks = tenv.Report()
	if err := rep.print(g.stdout, o.JSON); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return ErrInterrupted
	}
	return nil
}

// openRemotes makes the Remotes of the evaluations under --listen: one
// run a policy, and one more for the ceiling.
func (o *evalOptions) openRemotes(run string, log zerolog.Logger) error {
	base, err := o.Remote.realRemote(o.Concurrency, run, o.Sandbox, o.TaskOpts, log)
	if err != nil || base == nil {
		return err
	}
	runs := len(strings.Split(o.Policy, ","))
	if o.Ceiling {
		runs++
	}
	if _, port, _ := net.SplitHostPort(base.Listen); runs > 1 && port == "0" && base.Advertise != "" {
		return usagef("--listen %s with --advertise: name the port, which every policy's evaluation listens on", base.Listen)
	}
	o.remotes = &remoteSeries{base: base, runs: runs}
	return nil
}

// comparePolicies compares every two of reps, in the order --policy named
// them, at each of their marks.
func comparePolicies(reps []actors.EvalReport) []actors.Comparison {
	var out []actors.Comparison
	for i := range reps {
		for j := i + 1; j < len(reps); j++ {
			marks := make([]int, 0, len(reps[i].AtTries))
			for _, a := range reps[i].AtTries {
				marks = append(marks, a.Tries)
			}
			out = append(out, actors.Compare(reps[i], reps[j], marks))
		}
	}
	return out
}

// recordTrajectories returns deps that also write each episode of the
// policy name to DIR/<name>/ (with --trajectories), and the closer of
// those shards.
func (o *evalOptions) recordTrajectories(deps actors.Deps, name string) (actors.Deps, func() error, error) {
	if o.Trajectory == "" {
		return deps, func() error { return nil }, nil
	}
	dir := filepath.Join(o.Trajectory, policyDirName(name))
	s, err := run.NewShards(dir, 5000)
	if err != nil {
		return deps, nil, fmt.Errorf("--trajectories: %w", err)
	}
	also := deps.OnEpisode
	deps.OnEpisode = func(r *actors.EpisodeResult) {
		s.Write(run.EpisodeRecord(r))
		if also != nil {
			also(r)
		}
	}
	return deps, s.Close, nil
}

// policyDirName is a --policy name as one directory name without spaces:
// a run directory or checkpoint path with its separators replaced, and
// the words of a name such as "prior (replay)" joined by dashes
// ("prior-replay").
func policyDirName(name string) string {
	name = strings.Trim(filepath.Clean(name), "./")
	name = strings.NewReplacer("/", "_", "\\", "_", ":", "_").Replace(name)
	return strings.Join(strings.FieldsFunc(name, func(r rune) bool { return unicode.IsSpace(r) || r == '(' || r == ')' }), "-")
}

// playConcurrency is how many episodes of real tasks a frozen policy plays
// at once by default: 6 a core. The episodes of a group wait on each
// other's shared work (its first run of the tests, a schema build: one
// computes, the rest take its answer) and on their commands, so with 2 a
// core a quarter to a third of the CPU stood idle; with 6 the next
// group's episodes run meanwhile (`frog bench tries`, docs/episodes.md).
// Training keeps 2 a core: more gained it nothing measurable there, and
// would play more episodes of older policies.
func playConcurrency() int { return 6 * runtime.NumCPU() }

func (r evalReport) print(w io.Writer, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(w).Encode(r)
	}
	if r.Replay != nil {
		fmt.Fprintf(w, "replay of %s: %d tasks, every verdict looked up in the table, none run\n", r.Replay.Table, r.Replay.Tasks)
	}
	reps := append([]actors.EvalReport(nil), r.Policies...)
	if r.Ceiling != nil {
		reps = append(reps, *r.Ceiling)
	}
	for _, e := range reps {
		if err := printEval(w, e); err != nil {
			return err
		}
	}
	if err := printPairs(w, r.Pairs); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if rp := r.Replay; rp != nil {
		// A replay checks no task: frog tabulate checked the store's.
		fmt.Fprintf(tw, "tasks\t%d from the table, checked when it was made (%d of the store's left out then); none checked here\t\n", rp.Tasks, rp.LeftOut)
	} else {
		fmt.Fprintf(tw, "quarantined\t%d\t\n", len(r.Quarantined))
	}
	if t := r.Tasks; t != nil {
		fmt.Fprintf(tw, "harness\t%d test runs, %d schema builds, %d real tries, outcome cache hits %.1f%%\t\n",
			t.Harness.Executions, t.Harness.Builds, t.Harness.RealTries, 100*t.Harness.HitRate)
	}
	return tw.Flush()
}

// printEval writes one policy's evaluation: its solve rates overall and
// within each mark, its MRR, the same per module, family and k, and what
// its episodes cost.
func printEval(w io.Writer, e actors.EvalReport) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	rate := func(x actors.Rate) string {
		return fmt.Sprintf("%5.1f%%  [%4.1f, %4.1f]  (%d/%d)", 100*x.Rate, 100*x.Lo, 100*x.Hi, x.K, x.N)
	}
	mrr := func(m actors.Mean) string { return fmt.Sprintf("%.3f [%.3f, %.3f]", m.Mean, m.Lo, m.Hi) }
	ceiling := e.Policy == "ceiling" // an exhaustive search: its tries are no ranking
	fmt.Fprintf(tw, "%s\tsolved\t%s\n", e.Policy, rate(e.Solved))
	if e.Interrupted {
		o := e.Outcomes
		fmt.Fprintf(tw, "\tinterrupted\t%d of %d episodes scored (%d cancelled, %d never started): every figure is of those alone\n",
			o.Completed, o.Completed+o.FailedInfra+o.Cancelled+o.Unplayed, o.Cancelled, o.Unplayed)
	}
	if !ceiling {
		for _, a := range e.AtTries {
			fmt.Fprintf(tw, "\twithin %s\t%s\n", triesWord(a.Tries), rate(a.Rate))
		}
		fmt.Fprintf(tw, "\tMRR of the first fix\t%s  (%d episodes; 95%% percentile bootstrap)\n", mrr(e.MRR), e.MRR.N)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	head := "\tby\tsolved\t"
	if !ceiling {
		for _, a := range e.AtTries {
			head += fmt.Sprintf("within %d\t", a.Tries)
		}
		head += "MRR\t"
	}
	fmt.Fprintln(tw, head)
	for _, grp := range []struct {
		name string
		g    []actors.RateOf
	}{{"module", e.ByModule}, {"family", e.ByFamily}, {"k", e.ByK}} {
		for _, x := range grp.g {
			row := fmt.Sprintf("\t%s %s\t%s\t", grp.name, x.Key, rate(x.Rate))
			if !ceiling {
				for _, a := range x.AtTries {
					row += fmt.Sprintf("%d/%d\t", a.K, a.N)
				}
				row += mrr(x.MRR) + "\t"
			}
			fmt.Fprintln(tw, row)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(tw, "\tcost\t%.1f test runs, %.1f tries, %.2f sandbox s per episode; %.0f s in all\n",
		e.Cost.ExecutionsPerEpisode, e.Cost.TriesPerEpisode, e.Cost.SecondsPerEpisode, e.Cost.WallSeconds)
	if o := e.Outcomes; o.FailedInfra+o.Cancelled > 0 {
		fmt.Fprintf(tw, "\tnot scored\t%d failed (infrastructure), %d cancelled\n", o.FailedInfra, o.Cancelled)
	}
	if n := e.Outcomes.RewardHackSuspected; n > 0 {
		fmt.Fprintf(tw, "\treward hack suspected\t%d episodes, rewarded 0 (their trajectories say why)\n", n)
	}
	return tw.Flush()
}

// printPairs writes the paired comparisons of the policies evaluated.
func printPairs(w io.Writer, pairs []actors.Comparison) error {
	if len(pairs) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "paired (A vs B)\twithin\tpairs\tboth solved\tA only\tB only\tp (McNemar exact, two-sided)\t")
	for _, c := range pairs {
		for _, p := range c.AtTries {
			note := ""
			if c.Approximate {
				note = " (pairs of one task are not independent: approximate)"
			}
			fmt.Fprintf(tw, "%s vs %s\t%s\t%d\t%d\t%d\t%d\t%.4g%s\t\n", c.A, c.B, triesWord(p.Tries), p.Pairs, p.Both, p.AOnly, p.BOnly, p.P, note)
		}
	}
	return tw.Flush()
}

// triesWord is "1 try", "3 tries".
func triesWord(n int) string {
	if n == 1 {
		return "1 try"
	}
	return fmt.Sprintf("%d tries", n)
}
