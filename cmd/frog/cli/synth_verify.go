package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/run/taskenv"
	"github.com/frognano/frog/synth"
	"github.com/frognano/frog/synth/source"
	"github.com/frognano/frog/synth/store"
)

// verifyOptions are the flags of `frog synth verify`.
type verifyOptions struct {
	Tasks, WorkDir, Sandbox string
	Unsafe                  bool
	Sources                 []string
	Sample                  int
	Seed                    uint64
	Concurrency             int
	JSON                    bool
}

// verifyReport is what `frog synth verify` prints.
type verifyReport struct {
	Tasks    int             `json:"tasks"`
	Checked  int             `json:"checked"`
	Passed   int             `json:"passed"`
	Failures []verifyFailure `json:"failures,omitempty"`
	Seconds  float64         `json:"elapsed_seconds"`
}

type verifyFailure struct {
	ID    string `json:"instance_id"`
	Error string `json:"error"`
}

func newSynthVerifyCmd(g *globals) *cobra.Command {
	o := &verifyOptions{}
	c := &cobra.Command{
		Use:   "verify",
		Short: "Check stored tasks in sandboxes, with the check every run uses",
		Long: `verify takes tasks from a store and checks each one with the task check that
frog train, eval, rollout and sim run before a task is played (one checker,
so they all agree on which tasks hold up and why). The task's workspace is
laid out from its module with the bug applied, then, in a sandbox of its own:
with the bug every FAIL_TO_PASS test must fail (and not pass on a rerun:
flaky tests are caught) and every PASS_TO_PASS test pass; with the stored
gold patch applied every one of them must pass, judged as an episode's
verdict is judged.

Each task's module is found by its repo and version: fetched as
repo@version, or taken from a --source directory whose module path matches
(for tasks made from local modules). A task that does not hold up, names a
file its module lacks, or whose module cannot be found is reported with why
and the others are still checked; verify then exits 1. A store that does not
load (a malformed or incomplete record, a path that leaves its module) exits
2. A fault of the machine (a sandbox that does not open) ends it with the
error.

Workspaces are laid out under --work-dir (by default a temporary directory,
removed at the end), so every verify checks from scratch.`,
		Example: `  frog synth verify --tasks tasks.jsonl --sample 50
  frog synth verify --tasks tasks.jsonl --source ./mymodule --sandbox docker`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return runVerify(c.Context(), g, o) },
	}
	f := c.Flags()
	f.StringVar(&o.Tasks, "tasks", "tasks.jsonl", "the task store")
	f.StringArrayVar(&o.Sources, "source", nil, "module directory (or path@version, git+URL@ref) the tasks were made from, when not fetchable by repo@version (repeatable)")
	f.IntVar(&o.Sample, "sample", 0, "check this many tasks drawn at random (0: all)")
	f.Uint64Var(&o.Seed, "seed", 1, "seed of the sample")
	f.IntVar(&o.Concurrency, "concurrency", 2, "tasks checked at once (each check builds; at most 2 a core)")
	f.StringVar(&o.Sandbox, "sandbox", "process", "where tests run: process, docker or auto")
	unsafeFlag(f, &o.Unsafe)
	f.StringVar(&o.WorkDir, "work-dir", "", "where fetched modules and the tasks' workspaces go (default: a temporary directory)")
	f.BoolVar(&o.JSON, "json", false, "print the report as one JSON object")
	c.PreRunE = func(*cobra.Command, []string) error {
		if o.Sample < 0 {
			return usagef("--sample %d: want >= 0", o.Sample)
		}
		if err := inRange("--concurrency", o.Concurrency, 1, maxSynthWorkers); err != nil {
			return err
		}
		if err := checkSources(o.Sources); err != nil {
			return err
		}
		return checkSandbox(o.Sandbox, "process", "docker", "auto")
	}
	return c
}

func runVerify(ctx context.Context, g *globals, o *verifyOptions) error {
	log, err := g.logger()
	if err != nil {
		return err
	}
	start := time.Now()
	recs, err := store.Load(o.Tasks)
	if err != nil {
		return &UsageError{Err: fmt.Errorf("--tasks: %w", err)}
	}
	rep := verifyReport{Tasks: len(recs)}
	recs = sample(recs, o.Sample, o.Seed)
	work, cleanup, err := workDir(o.WorkDir, "frog-verify-")
	if err != nil {
		return err
	}
	defer cleanup()
	topts := taskOptions{Workspaces: filepath.Join(work, "workspaces")}
	for _, s := range o.Sources {
		m, err := source.Open(ctx, s, work)
		if err != nil {
			return err
		}
		topts.Locals = append(topts.Locals, m.Dir)
	}
	run := fmt.Sprintf("verify-%d", os.Getpid())
	spec := sandboxSpec{sandboxOptions: sandboxOptions{Kind: o.Sandbox, Unsafe: o.Unsafe}, Run: run, Concurrency: o.Concurrency}
	tenv, _, release, err := openTaskEnv(ctx, topts, spec, log)
	if err != nil {
		return err
	}
	defer release()

	var checked atomic.Int64 // read by the bar's goroutine
	bar := startBar(g, !o.JSON, int64(len(recs)), "task", func() (string, int64) {
		return "tasks checked", checked.Load()
	})
	err = verifyAll(ctx, tenv, recs, taskenv.CheckConcurrency(o.Concurrency), &rep, &checked)
	bar.stop()
	if ctx.Err() != nil {
		return ErrInterrupted
	}
	if err != nil {
		return err
	}
	rep.Seconds = time.Since(start).Seconds()
	if err := rep.print(g.stdout, o.JSON); err != nil {
		return err
	}
	if len(rep.Failures) > 0 {
		return fmt.Errorf("%d of %d tasks do not hold up", len(rep.Failures), rep.Checked)
	}
	return nil
}

// sample returns n of recs drawn with seed (all when n is 0 or too big).
func sample(recs []synth.TaskRecord, n int, seed uint64) []synth.TaskRecord {
	if n <= 0 || n >= len(recs) {
		return recs
	}
	rng := rand.New(rand.NewPCG(seed, seed))
	rng.Shuffle(len(recs), func(i, j int) { recs[i], recs[j] = recs[j], recs[i] })
	return recs[:n]
}

// verifyAll checks every task of recs with tenv's quarantine, n at a
// time, counting them into rep and checked. A task that does not hold up
// is a failure of that task, reported with the quarantine's reason; a
// fault of the machine or ctx's end stops it with the error.
func verifyAll(ctx context.Context, tenv *taskenv.Env, recs []synth.TaskRecord, n int, rep *verifyReport, checked *atomic.Int64) error {
	for i := 0; i < len(recs); i += n {
		batch := recs[i:min(i+n, len(recs))]
		ptrs := make([]*env.Task, len(batch))
		for j := range batch {
			ptrs[j] = &batch[j].Task
		}
		errs := tenv.Quarantine.CheckAll(ctx, ptrs, n)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var faults []error
		for j, err := range errs {
			switch {
			case err == nil:
				rep.Passed++
			case errors.Is(err, synth.ErrQuarantined):
				rep.Failures = append(rep.Failures, verifyFailure{batch[j].ID, err.Error()})
			default:
				faults = append(faults, fmt.Errorf("task %s: %w", batch[j].ID, err))
				continue
			}
			rep.Checked++
			checked.Add(1)
		}
		if len(faults) > 0 {
			return errors.Join(faults...)
		}
	}
	return nil
}

func (r verifyReport) print(w io.Writer, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(w).Encode(r)
	}
	for _, f := range r.Failures {
		fmt.Fprintf(w, "FAIL %s\n", f.Error)
	}
	_, err := fmt.Fprintf(w, "%d of %d tasks hold up (%d in the store) in %.1f s\n", r.Passed, r.Checked, r.Tasks, r.Seconds)
	return err
}
