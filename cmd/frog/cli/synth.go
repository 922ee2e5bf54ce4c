package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/frognano/frog/synth"
	"github.com/frognano/frog/synth/source"
	"github.com/frognano/frog/synth/store"
	"github.com/frognano/frog/synth/validate"
)

// synthOptions are the flags of `frog synth`.
type synthOptions struct {
	Sources    []string      `json:"sources"`
	Packages   []string      `json:"packages,omitempty"`
	N          int           `json:"n"`
	Out        string        `json:"out"`
	Seed       uint64        `json:"seed"`
	WorkDir    string        `json:"work_dir,omitempty"`
	MinTimeout time.Duration `json:"min_timeout"`
	MaxTest    time.Duration `json:"max_test_time"`
	Workers    int           `json:"workers"`
	MaxMutants int           `json:"max_mutants"`
	Combos     float64       `json:"combos"`
	Sandbox    string        `json:"sandbox"`
	Unsafe     bool          `json:"unsafe_process_sandbox,omitempty"`
	Image      string        `json:"image,omitempty"`
	JSON       bool          `json:"-"`
}

func newSynthCmd(g *globals) *cobra.Command {
	o := &synthOptions{}
	c := &cobra.Command{
		Use:   "synth",
		Short: "Synthesize validated bug-fix tasks from real Go modules",
		Long: `synth injects bugs into real Go modules by AST mutation and keeps those the
module's own tests catch: the baseline passes twice, the mutant builds and vets,
at least one test fails (FAIL_TO_PASS) and one still passes (PASS_TO_PASS), the
verdict repeats, and the gold patch undoes it. Each valid task is appended to
--out (JSONL, SWE-bench instance fields plus frog's) as soon as it is validated,
so an interrupted run loses nothing. A store that exists is continued: the
tasks it holds are not made again, and a last line torn by a crash is set
aside in a file beside it (with a warning) before anything is appended.

Work is spread across the modules from the first task, in proportion to the
candidate mutants each offers, so that a small store already holds tasks of
most modules.

A source is a local module directory, a module path@version (fetched with
the go command into the module cache and copied to a work directory), or a
git repository, git+URL[@ref] (cloned at ref, a branch or tag, into the work
directory). Without --source, the pinned default list is used. A source that
cannot be fetched, does not build or has no stable tests is reported and
skipped.

Validation runs in sandboxes (--sandbox process or docker), one per worker,
each holding copies of the modules. Per package, the baseline runs twice
(flaky tests are excluded), a per-test coverage map is computed once, and
mutants are compiled in batches into one test binary (a mutant schema: every
mutated function gets a copy, chosen at run time), vetted once per batch,
and run with only the tests that cover them. Single mutants come first;
then combinations of k = 2 or 3 of those the tests caught, in one function,
one file or one package (--combos per caught mutant). Tests slower than
--max-test-time in the baseline are left out.

At the end synth prints the yield per operator family and per module: mutants
tried, non-viable, equivalent, timed out, duplicate and valid, then the
packages skipped and the tests left out (failing at baseline, flaky, slow).
It exits 1, saying why, when it made no task.`,
		Example: `  frog synth --n 200 --out tasks.jsonl
  frog synth --source ./mymodule --source github.com/google/btree@v1.1.3 --n 50
  frog synth --source git+https://example.com/you/mod.git@v1.2.0 --n 50
  frog synth --n 1500 --sandbox docker --workers 2
  frog synth --n 10 --json`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return runSynth(c.Context(), g, o) },
	}
	c.AddCommand(newSynthVerifyCmd(g))
	f := c.Flags()
	f.StringArrayVar(&o.Sources, "source", nil, "module directory or path@version (repeatable; default: the pinned list)")
	f.StringArrayVar(&o.Packages, "package", nil, "only this package directory of each module, e.g. ./trees/avltree (repeatable)")
	f.IntVar(&o.N, "n", 100, "valid tasks to make (0: every mutant of every source)")
	f.StringVar(&o.Out, "out", "tasks.jsonl", "JSONL task store to append to (an existing one is continued)")
	f.Uint64Var(&o.Seed, "seed", 1, "seed of the order mutants are tried in")
	f.StringVar(&o.WorkDir, "work-dir", "", "where fetched modules are copied (default: a temporary directory, removed at the end)")
	f.DurationVar(&o.MinTimeout, "min-timeout", 500*time.Millisecond, "floor under a mutant's test timeout (3× the baseline run of the same tests)")
	f.DurationVar(&o.MaxTest, "max-test-time", time.Second, "leave out tests slower than this in the baseline (0: keep all)")
	f.IntVar(&o.Workers, "workers", runtime.GOMAXPROCS(0), "packages validated at once, each in its own sandbox")
	f.IntVar(&o.MaxMutants, "max-mutants", 400, "single mutants tried per package, sampled (0: all)")
	f.Float64Var(&o.Combos, "combos", 0.5, "combined mutants (k = 2, 3) tried per single mutant the tests caught (0: none)")
	f.StringVar(&o.Sandbox, "sandbox", "process", "where validation runs: process (this machine, each command in a bubblewrap sandbox of its own), docker, or auto")
	unsafeFlag(f, &o.Unsafe)
	f.StringVar(&o.Image, "image", "", "sandbox image for --sandbox docker (default frog-sandbox:<version>, built if missing)")
	f.BoolVar(&o.JSON, "json", false, "print the report as one JSON object (no progress bar)")
	c.PreRunE = func(*cobra.Command, []string) error {
		switch {
		case o.N < 0:
			return usagef("--n %d: want >= 0", o.N)
		case o.Out == "":
			return usagef("--out: want a file")
		case o.MinTimeout <= 0:
			return usagef("--min-timeout %v: want > 0", o.MinTimeout)
		case o.MaxTest < 0:
			return usagef("--max-test-time %v: want >= 0", o.MaxTest)
		case o.Workers < 1 || o.Workers > maxSynthWorkers:
			// The flag is --concurrency; --workers is its other name.
			return usagef("--concurrency %d: want 1 to %d", o.Workers, maxSynthWorkers)
		case o.MaxMutants < 0:
			return usagef("--max-mutants %d: want >= 0", o.MaxMutants)
		case o.Combos < 0:
			return usagef("--combos %v: want >= 0", o.Combos)
		}
		if err := checkSources(o.Sources); err != nil {
			return err
		}
		return checkSandbox(o.Sandbox, "process", "docker", "auto")
	}
	return c
}

// maxSynthWorkers bounds frog synth's --concurrency: each worker holds a
// sandbox with copies of the modules.
const maxSynthWorkers = 1024

// synthReport is what `frog synth` prints.
type synthReport struct {
	source.Stats
	Written int    `json:"written"`
	Out     string `json:"out"`
	// Existing is how many tasks --out held before: the run continued it.
	Existing int `json:"existing"`
	// Torn names the file a torn last line of --out was set aside in.
	Torn           string          `json:"torn,omitempty"`
	ElapsedSeconds float64         `json:"elapsed_seconds"`
	SkippedSources []skippedSource `json:"skipped_sources,omitempty"`
	Exhausted      bool            `json:"exhausted"`
	Interrupted    bool            `json:"interrupted"`
	Config         synthOptions    `json:"config"`
	Version        string          `json:"frog_version"`
}

func runSynth(ctx context.Context, g *globals, o *synthOptions) error {
	log, err := g.logger()
	if err != nil {
		return err
	}
	start := time.Now()
	specs := o.Sources
	if len(specs) == 0 {
		specs = source.Default
	}
	work, cleanup, err := workDir(o.WorkDir, "frog-synth-")
	if err != nil {
		return err
	}
	defer cleanup()
	rep := synthReport{Out: o.Out, Config: *o, Version: version()}
	existing, torn, err := openStore(o.Out)
	if err != nil {
		return err
	}
	if torn != "" {
		log.Warn().Str("store", o.Out).Str("moved_to", torn).Msg("the store's last line was torn (a write cut short): set aside, every complete line kept")
	}
	rep.Existing, rep.Torn = len(existing), torn
	cfg := source.Config{
		Validate: validate.Config{MinTimeout: o.MinTimeout, MaxTestTime: o.MaxTest}, Seed: o.Seed,
		Workers: o.Workers, MaxMutants: o.MaxMutants, Combos: o.Combos, Packages: o.Packages,
		Existing: existing,
	}
	if o.MaxMutants == 0 {
		cfg.MaxMutants = -1
	}
	if o.MaxTest == 0 {
		cfg.Validate.MaxTestTime = -1
	}
	if o.Combos == 0 {
		cfg.Combos = -1
	}
	s, skipped, closeSynth, err := openSynthesizer(ctx, specs, work, sandboxSpec{
		sandboxOptions: sandboxOptions{Kind: o.Sandbox, Image: o.Image, Unsafe: o.Unsafe},
		Run:            fmt.Sprintf("synth-%d", os.Getpid()), Concurrency: o.Workers,
	}, cfg, log)
	if err != nil {
		return err
	}
	defer closeSynth()
	rep.SkippedSources = skipped

	bar := startSynthProgress(g, !o.JSON, o.N, s)
	genErr := s.Generate(ctx, o.N, func(rec synth.TaskRecord) error {
		if err := store.Append(o.Out, rec); err != nil {
			return err
		}
		rep.Written++
		return nil
	})
	bar.stop()

	rep.Stats = s.Stats()
	rep.ElapsedSeconds = time.Since(start).Seconds()
	switch {
	case genErr == nil:
	case errors.Is(genErr, source.ErrExhausted):
		rep.Exhausted, genErr = true, nil
	case ctx.Err() != nil:
		rep.Interrupted, genErr = true, nil
	}
	if err := rep.print(g.stdout, o.JSON); err != nil {
		return err
	}
	if genErr != nil {
		return genErr
	}
	if rep.Interrupted {
		return ErrInterrupted
	}
	if rep.Written == 0 {
		return rep.noTask()
	}
	return nil
}

// openStore sets a torn last line of the store at path aside (store.Repair)
// and loads the tasks it holds, so that the run continues it; a store that
// does not exist yet holds none. A store that does not load is a usage
// error.
func openStore(path string) (recs []synth.TaskRecord, torn string, err error) {
	if torn, err = store.Repair(path); err != nil {
		return nil, "", err
	}
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil, torn, nil
	}
	if recs, err = store.Load(path); err != nil {
		return nil, torn, &UsageError{Err: fmt.Errorf("--out: %w", err)}
	}
	return recs, torn, nil
}

// noTask is the error of a run that made no task, saying why.
func (r synthReport) noTask() error {
	c := r.Total
	switch {
	case c.Tried == 0:
		return errors.New("no task made: no mutant was tried (every package was skipped: see above)")
	case r.Existing > 0 && c.Duplicate > 0:
		return fmt.Errorf("no task made: %d mutants tried, none valid and new (%d duplicates, among them the %d tasks --out holds)", c.Tried, c.Duplicate, r.Existing)
	}
	return fmt.Errorf("no task made: %d mutants tried, none valid (%d non-viable, %d equivalent, %d timed out, %d duplicates)",
		c.Tried, c.NonViable, c.Equivalent, c.TimedOut, c.Duplicate)
}

func (r synthReport) print(w io.Writer, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(w).Encode(r)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	row := func(name string, c validate.Counters, extra string) {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t\n", name, c.Tried, c.NonViable, c.Equivalent, c.TimedOut, c.Duplicate, c.Valid, extra)
	}
	fmt.Fprintf(tw, "family\ttried\tnon-viable\tequivalent\ttimed-out\tduplicate\tvalid\t\t\n")
	fams := make([]string, 0, len(r.Families))
	for f := range r.Families {
		fams = append(fams, f)
	}
	slices.Sort(fams)
	for _, f := range fams {
		row(f, r.Families[f], "")
	}
	row("total", r.Total, "")
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	fmt.Fprintf(tw, "module\ttried\tnon-viable\tequivalent\ttimed-out\tduplicate\tvalid\tpackages\t\n")
	for _, m := range r.Modules {
		row(m.Module, m.Counters, fmt.Sprintf("%d/%d", m.Prepared, m.Packages))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, m := range r.Modules {
		for _, s := range m.Skipped {
			fmt.Fprintf(w, "skipped in %s: %s\n", m.Module, s)
		}
		for _, s := range m.LeftOut {
			fmt.Fprintf(w, "tests left out in %s %s\n", m.Module, s)
		}
	}
	if r.Torn != "" {
		fmt.Fprintf(w, "the torn last line of %s was set aside in %s\n", r.Out, r.Torn)
	}
	for _, s := range r.SkippedSources {
		fmt.Fprintf(w, "skipped source %s: %s\n", s.Source, s.Error)
	}
	fmt.Fprintf(w, "%d tasks appended to %s", r.Written, r.Out)
	if r.Existing > 0 {
		fmt.Fprintf(w, " after its %d", r.Existing)
	}
	fmt.Fprintf(w, " in %.1f s", r.ElapsedSeconds)
	switch {
	case r.Interrupted:
		fmt.Fprint(w, " (interrupted)")
	case r.Exhausted:
		fmt.Fprint(w, " (sources exhausted)")
	}
	_, err := fmt.Fprintln(w)
	return err
}

// startSynthProgress draws a bar of valid tasks on stderr while synth runs,
// from the synthesizer's counters; nothing unless stdout and stderr are
// terminals. Its goroutine ends when stop is called.
func startSynthProgress(g *globals, want bool, n int, s *source.Synthesizer) *progress {
	return startBar(g, want, int64(n), "task", func() (string, int64) {
		c := s.Stats().Total
		return fmt.Sprintf("tasks (%d mutants tried)", c.Tried), int64(c.Valid)
	})
}
