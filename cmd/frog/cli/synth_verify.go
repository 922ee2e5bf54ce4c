package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/synth"
	"github.com/frognano/frog/synth/source"
	"github.com/frognano/frog/synth/store"
	"github.com/frognano/frog/synth/validate"
)

// verifyOptions are the flags of `frog synth verify`.
type verifyOptions struct {
	Tasks, WorkDir, Sandbox string
	Unsafe                  bool
	Sources                 []string
	Sample                  int
	Seed                    uint64
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
		Short: "Re-validate stored tasks in a sandbox, as an episode would see them",
		Long: `verify takes tasks from a store and re-validates them in a sandbox without
frog synth's machinery: the mutant file is written in place and the task's
tests run with go test (every FAIL_TO_PASS must fail, every PASS_TO_PASS
pass), then the stored gold patch is applied to the mutant and every one of
them must pass.

Each task's module is found by its repo and version: fetched as
repo@version, or taken from a --source directory whose module path matches
(for tasks made from local modules). A task that does not hold up, names a
file outside its module or one the module lacks, or whose module cannot be
found is reported and the others are still checked; verify then exits 1.
A store that does not load (a malformed or incomplete record) exits 2.`,
		Example: `  frog synth verify --tasks tasks.jsonl --sample 50
  frog synth verify --tasks tasks.jsonl --source ./mymodule --sandbox docker`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return runVerify(c.Context(), g, o) },
	}
	f := c.Flags()
	f.StringVar(&o.Tasks, "tasks", "tasks.jsonl", "the task store")
	f.StringArrayVar(&o.Sources, "source", nil, "module directory (or path@version, git+URL@ref) the tasks were made from, when not fetchable by repo@version (repeatable)")
	f.IntVar(&o.Sample, "sample", 0, "re-validate this many tasks drawn at random (0: all)")
	f.Uint64Var(&o.Seed, "seed", 1, "seed of the sample")
	f.StringVar(&o.Sandbox, "sandbox", "process", "where tests run: process, docker or auto")
	unsafeFlag(f, &o.Unsafe)
	f.StringVar(&o.WorkDir, "work-dir", "", "where fetched modules are copied (default: a temporary directory)")
	f.BoolVar(&o.JSON, "json", false, "print the report as one JSON object")
	c.PreRunE = func(*cobra.Command, []string) error {
		if o.Sample < 0 {
			return usagef("--sample %d: want >= 0", o.Sample)
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
	var local []source.Module
	for _, s := range o.Sources {
		m, err := source.Open(ctx, s, work)
		if err != nil {
			return err
		}
		local = append(local, m)
	}
	run := fmt.Sprintf("verify-%d", os.Getpid())
	prov, release, err := openSandboxes(ctx, sandboxSpec{sandboxOptions: sandboxOptions{Kind: o.Sandbox, Unsafe: o.Unsafe}, Run: run, Concurrency: 1}, log)
	if err != nil {
		return fmt.Errorf("sandboxes: %w", err)
	}
	defer release()
	sb, err := prov.Open(ctx, env.OpenOptions{Run: run})
	if err != nil {
		return err
	}
	defer func() {
		if err := sb.Close(context.WithoutCancel(ctx)); err != nil {
			log.Warn().Err(err).Msg("close the verify sandbox")
		}
	}()

	var checked atomic.Int64 // read by the bar's goroutine
	bar := startBar(g, !o.JSON, int64(len(recs)), "task", func() (string, int64) {
		return "tasks re-validated", checked.Load()
	})
	err = recheck(ctx, source.NewRechecker(sb, local, work, log), recs, &rep, &checked)
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
		return fmt.Errorf("%d of %d tasks do not re-validate", len(rep.Failures), rep.Checked)
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

// recheck re-validates every task of recs with rc, counting them into rep
// and checked. A task that does not hold up is a failure of that task; it
// stops only at a fault of the sandbox or ctx's end.
func recheck(ctx context.Context, rc *source.Rechecker, recs []synth.TaskRecord, rep *verifyReport, checked *atomic.Int64) error {
	for _, r := range recs {
		err := rc.Check(ctx, r)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		switch {
		case err == nil:
			rep.Passed++
		case errors.Is(err, validate.ErrRecheck):
			rep.Failures = append(rep.Failures, verifyFailure{r.ID, err.Error()})
		default:
			return fmt.Errorf("task %s: %w", r.ID, err)
		}
		rep.Checked++
		checked.Add(1)
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
	_, err := fmt.Fprintf(w, "%d of %d tasks re-validate (%d in the store) in %.1f s\n", r.Passed, r.Checked, r.Tasks, r.Seconds)
	return err
}
