package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	var (
		tasks, work, sandbox string
		sources              []string
		sample               int
		seed                 uint64
		asJSON               bool
	)
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
(for tasks made from local modules). It exits 1 when a task does not hold up.`,
		Example: `  frog synth verify --tasks tasks.jsonl --sample 50
  frog synth verify --tasks tasks.jsonl --source ./mymodule --sandbox docker`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			ctx := c.Context()
			log, err := g.logger()
			if err != nil {
				return err
			}
			start := time.Now()
			recs, err := store.Load(tasks)
			if err != nil {
				return &UsageError{Err: fmt.Errorf("--tasks: %w", err)}
			}
			rep := verifyReport{Tasks: len(recs)}
			if sample > 0 && sample < len(recs) {
				rng := rand.New(rand.NewPCG(seed, seed))
				rng.Shuffle(len(recs), func(i, j int) { recs[i], recs[j] = recs[j], recs[i] })
				recs = recs[:sample]
			}
			work, cleanup, err := workDir(work, "frog-verify-")
			if err != nil {
				return err
			}
			defer cleanup()
			local := map[string]source.Module{}
			for _, s := range sources {
				m, err := source.Open(ctx, s, work)
				if err != nil {
					return err
				}
				local[m.Path] = m
			}
			run := fmt.Sprintf("verify-%d", os.Getpid())
			prov, release, err := openSandboxes(ctx, sandboxSpec{sandboxOptions: sandboxOptions{Kind: sandbox}, Run: run, Concurrency: 1}, log)
			if err != nil {
				return fmt.Errorf("sandboxes: %w", err)
			}
			defer release()
			sb, err := prov.Open(ctx, env.OpenOptions{Run: run})
			if err != nil {
				return err
			}
			defer sb.Close(context.WithoutCancel(ctx))

			checkers := map[string]*validate.Checker{}
			checker := func(r synth.TaskRecord) (*validate.Checker, error) {
				key := r.Repo + "@" + r.Version
				if ch := checkers[key]; ch != nil {
					return ch, nil
				}
				m, ok := local[r.Repo]
				if !ok {
					if r.Version == "" {
						return nil, fmt.Errorf("module %s has no version: pass its directory with --source", r.Repo)
					}
					if m, err = source.Open(ctx, key, work); err != nil {
						return nil, err
					}
				}
				ch, err := validate.NewChecker(m.Dir, sb, fmt.Sprintf("m%d", len(checkers)), log)
				if err != nil {
					return nil, err
				}
				checkers[key] = ch
				return ch, nil
			}
			var checked atomic.Int64 // read by the bar's goroutine
			bar := startBar(g, !asJSON, int64(len(recs)), "task", func() (string, int64) {
				return "tasks re-validated", checked.Load()
			})
			for _, r := range recs {
				ch, err := checker(r)
				if err == nil {
					err = ch.Check(ctx, r)
				}
				if ctx.Err() != nil {
					bar.stop()
					return ErrInterrupted
				}
				rep.Checked++
				checked.Add(1)
				switch {
				case err == nil:
					rep.Passed++
				case errors.Is(err, validate.ErrRecheck):
					rep.Failures = append(rep.Failures, verifyFailure{r.ID, err.Error()})
				default:
					bar.stop()
					return err
				}
			}
			bar.stop()
			rep.Seconds = time.Since(start).Seconds()
			if asJSON {
				if err := json.NewEncoder(g.stdout).Encode(rep); err != nil {
					return err
				}
			} else {
				for _, f := range rep.Failures {
					fmt.Fprintf(g.stdout, "FAIL %s\n", f.Error)
				}
				fmt.Fprintf(g.stdout, "%d of %d tasks re-validate (%d in the store) in %.1f s\n", rep.Passed, rep.Checked, rep.Tasks, rep.Seconds)
			}
			if len(rep.Failures) > 0 {
				return fmt.Errorf("%d of %d tasks do not re-validate", len(rep.Failures), rep.Checked)
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&tasks, "tasks", "tasks.jsonl", "the task store")
	f.StringArrayVar(&sources, "source", nil, "module directory (or path@version, git+URL@ref) the tasks were made from, when not fetchable by repo@version (repeatable)")
	f.IntVar(&sample, "sample", 0, "re-validate this many tasks drawn at random (0: all)")
	f.Uint64Var(&seed, "seed", 1, "seed of the sample")
	f.StringVar(&sandbox, "sandbox", "process", "where tests run: process, docker or auto")
	f.StringVar(&work, "work-dir", "", "where fetched modules are copied (default: a temporary directory)")
	f.BoolVar(&asJSON, "json", false, "print the report as one JSON object")
	c.PreRunE = func(*cobra.Command, []string) error {
		if sample < 0 {
			return usagef("--sample %d: want >= 0", sample)
		}
		return checkSandbox(sandbox, "process", "docker", "auto")
	}
	return c
}
