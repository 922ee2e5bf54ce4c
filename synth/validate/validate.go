package validate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/gotask/gotest"
	"github.com/frognano/frog/synth"
	"github.com/frognano/frog/synth/mutate"
)

// Outcome is the verdict on one mutant.
type Outcome string

// The verdicts.
const (
	Valid      Outcome = "valid"
	NonViable  Outcome = "non-viable" // does not build or vet, no PASS_TO_PASS, or verdict does not repeat
	Equivalent Outcome = "equivalent" // no test fails (or none covers the mutated lines)
	TimedOut   Outcome = "timed-out"
	Duplicate  Outcome = "duplicate"
)

// ErrNoTests says that a package has no test that passes reliably.
var ErrNoTests = errors.New("no stable passing tests")

// Config tunes validation.
type Config struct {
	// TimeoutFactor times the baseline run of the tests bounds a mutant's
	// run; 3 when zero.
	TimeoutFactor float64
	// MinTimeout is a floor under that bound, since runs on a loaded
	// machine vary; 500ms when zero.
	MinTimeout time.Duration
	// BuildTimeout bounds each go command (baseline runs, builds, vet);
	// 10 minutes when zero.
	BuildTimeout time.Duration
	// MaxTestTime leaves out of the stable set a test slower than this in
	// either baseline run: every mutant pays for its tests twice, and a
	// task's reward should come quickly; 1s when zero, no limit when
	// negative.
	MaxTestTime time.Duration
	// NoCoverage skips the per-test coverage map: every stable test runs
	// on every mutant.
	NoCoverage bool
	// BatchSize is the most mutants compiled into one test binary; 300
	// when zero.
	BatchSize int
	// Dedup is shared by the validators of one module so that a mutant
	// found by two of them counts once; nil gives the validator its own.
	Dedup *Dedup
	// Workdir is the module's directory in the sandbox's workspace, so
	// that one sandbox can hold several modules; "" is the workspace root.
	Workdir string
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Dedup remembers the normalized-diff hashes and the (function,
// FAIL_TO_PASS) pairs seen. It is safe for concurrent use.
type Dedup struct {
	mu   sync.Mutex
	seen map[string]bool
}

// NewDedup returns an empty Dedup.
func NewDedup() *Dedup { return &Dedup{seen: map[string]bool{}} }

// Seed remembers what a task already made (in a store being continued)
// is deduplicated by, so that the same mutant is a duplicate when it comes
// again: its normalized-diff hash, and its function and FAIL_TO_PASS set.
func (d *Dedup) Seed(rec synth.TaskRecord) {
	d.first(diffKey(rec.Validation.DiffHash))
	if len(rec.Mutations) > 0 {
		d.first(f2pKey(rec.Mutations[0].Func, rec.FailToPass))
	}
}

func diffKey(hash string) string { return "diff\x00" + hash }

func f2pKey(fn string, failToPass []string) string {
	return "f2p\x00" + fn + "\x00" + strings.Join(failToPass, "\x00")
}

// first reports whether key is new, and remembers it.
func (d *Dedup) first(key string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.seen[key] {
		return false
	}
	d.seen[key] = true
	return true
}

// Counters tally verdicts.
type Counters struct {
	Tried      int `json:"tried"`
	NonViable  int `json:"non_viable"`
	Equivalent int `json:"equivalent"`
	TimedOut   int `json:"timed_out"`
	Duplicate  int `json:"duplicate"`
	Valid      int `json:"valid"`
}

// Add counts one verdict.
func (c *Counters) Add(o Outcome) {
	c.Tried++
	switch o {
	case NonViable:
		c.NonViable++
	case Equivalent:
		c.Equivalent++
	case TimedOut:
		c.TimedOut++
	case Duplicate:
		c.Duplicate++
	case Valid:
		c.Valid++
	}
}

// Merge adds b's counts to c.
func (c *Counters) Merge(b Counters) {
	c.Tried += b.Tried
	c.NonViable += b.NonViable
	c.Equivalent += b.Equivalent
	c.TimedOut += b.TimedOut
	c.Duplicate += b.Duplicate
	c.Valid += b.Valid
}

// Validator validates mutants of the packages of one module inside one
// sandbox, which holds a copy of the module. Every go command and every test
// runs in the sandbox; the module's directory on this machine is only read.
// A Validator is used by one goroutine at a time (its sandbox's rule); run
// several, each with its own sandbox, to validate concurrently.
type Validator struct {
	dir string
	sb  env.Sandbox
	cfg Config
	log zerolog.Logger

	copied bool
	// root is the module's directory in the sandbox as the go command sees
	// it, with a trailing slash: the prefix of the file paths in test
	// output ("" until known, or when it could not be).
	root string
}

// New returns a Validator for the module rooted at dir that runs in sb.
// The module is copied into sb's workspace when first needed.
func New(dir string, sb env.Sandbox, cfg Config, log zerolog.Logger) (*Validator, error) {
	abs, err := absDir(dir)
	if err != nil {
		return nil, err
	}
	if sb == nil {
		return nil, errors.New("validate: no sandbox")
	}
	if cfg.TimeoutFactor == 0 {
		cfg.TimeoutFactor = 3
	}
	if cfg.MinTimeout == 0 {
		cfg.MinTimeout = 500 * time.Millisecond
	}
	if cfg.MaxTestTime == 0 {
		cfg.MaxTestTime = time.Second
	}
	if cfg.BuildTimeout == 0 {
		cfg.BuildTimeout = 10 * time.Minute
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 300
	}
	if cfg.Dedup == nil {
		cfg.Dedup = NewDedup()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Validator{dir: abs, sb: sb, cfg: cfg, log: log.With().Str("component", "validate").Logger()}, nil
}

func (v *Validator) now() time.Time { return v.cfg.Now() }

// Package is a package measured by Prepare.
type Package struct {
	// Rel is the package's directory relative to the module root, in the
	// form go commands take ("./calc", or "." for the root).
	Rel string
	// Stable lists, sorted, the top-level tests that passed in both
	// baseline runs within Config.MaxTestTime; Flaky those that passed in
	// only one; Slow those that passed in both but took longer; Failing
	// those that failed at baseline and passed in neither run. Only the
	// stable tests judge mutants.
	Stable, Flaky, Slow, Failing []string
	// Baseline is the slowest baseline `go test` run, build included.
	Baseline time.Duration
	// VetClean says whether go vet passed on the original; if not, mutants
	// are not vetted.
	VetClean bool
	// Coverage is the per-test coverage map; nil when not computed.
	Coverage *gotest.CoverageMap

	src *gotest.Package
}

// Prepare runs a package's tests twice, excludes flaky ones and computes
// the coverage map. rel is the package directory relative to the module
// root.
func (v *Validator) Prepare(ctx context.Context, rel string) (*Package, error) {
	rel = "./" + strings.TrimPrefix(path.Clean(strings.ReplaceAll(rel, "\\", "/")), "./")
	if rel == "./." {
		rel = "."
	}
	if err := v.copyModule(ctx); err != nil {
		return nil, err
	}
	v.findRoot(ctx)
	src, err := gotest.ParsePackage(v.dir, rel)
	if err != nil {
		return nil, fmt.Errorf("package %s: %w", rel, err)
	}
	p := &Package{Rel: rel, src: src}
	t0 := v.now()
	var runs [2]gotest.Run
	for i := range runs {
		r, err := v.goCmd(ctx, "test", "-json", "-count=1", "-vet=off", rel)
		if err != nil {
			return nil, fmt.Errorf("baseline %s: %w", rel, err)
		}
		runs[i] = gotest.ParseJSON(r)
		if !runs[i].Built {
			return nil, fmt.Errorf("baseline %s does not build or run: %s", rel, strings.ReplaceAll(gotest.FirstLines(runs[i].Text, 4), "\n", "; "))
		}
		p.Baseline = max(p.Baseline, r.Wall)
	}
	for _, t := range runs[0].Passed {
		slow := v.cfg.MaxTestTime > 0 && max(runs[0].Elapsed[t], runs[1].Elapsed[t]) > v.cfg.MaxTestTime
		switch {
		case slices.Contains(runs[1].Passed, t) && slow:
			p.Slow = append(p.Slow, t)
		case slices.Contains(runs[1].Passed, t):
			p.Stable = append(p.Stable, t)
		default:
			p.Flaky = append(p.Flaky, t)
		}
	}
	for _, t := range runs[1].Passed {
		if !slices.Contains(runs[0].Passed, t) {
			p.Flaky = append(p.Flaky, t)
		}
	}
	for _, t := range slices.Concat(runs[0].Failed, runs[1].Failed) {
		if !slices.Contains(runs[0].Passed, t) && !slices.Contains(runs[1].Passed, t) && !slices.Contains(p.Failing, t) {
			p.Failing = append(p.Failing, t)
		}
	}
	slices.Sort(p.Failing)
	if len(p.Stable) == 0 {
		if len(p.Failing) > 0 {
			return nil, fmt.Errorf("package %s: %w (failing at baseline: %s)", rel, ErrNoTests, strings.Join(p.Failing, " "))
		}
		return nil, fmt.Errorf("package %s: %w", rel, ErrNoTests)
	}
	t1 := v.now()
	vet, err := v.goCmd(ctx, "vet", rel)
	if err != nil {
		return nil, fmt.Errorf("vet %s: %w", rel, err)
	}
	p.VetClean = vet.Exit == 0
	t2 := v.now()
	if !v.cfg.NoCoverage {
		if p.Coverage, err = v.coverage(ctx, p); err != nil {
			return nil, err
		}
	}
	v.log.Debug().Str("pkg", rel).Int("stable", len(p.Stable)).Int("flaky", len(p.Flaky)).Int("slow", len(p.Slow)).Int("failing", len(p.Failing)).
		Dur("baseline", p.Baseline).Dur("baselines_took", t1.Sub(t0)).Dur("vet_took", t2.Sub(t1)).
		Dur("coverage_took", v.now().Sub(t2)).Msg("package prepared")
	return p, nil
}

func (v *Validator) coverage(ctx context.Context, p *Package) (*gotest.CoverageMap, error) {
	bin := ".frog/cover.test"
	write := func(rel string, data []byte) error { return v.sb.WriteFile(ctx, v.path(rel), data) }
	goCmd := func(args ...string) (gotest.Result, error) { return v.goCmd(ctx, args...) }
	r, err := gotest.BuildCoverBinary(write, goCmd, p.Rel, p.src.Name, bin)
	if err != nil {
		return nil, fmt.Errorf("coverage build of %s: %w", p.Rel, err)
	}
	if r.Exit != 0 {
		return nil, fmt.Errorf("coverage build of %s: %s", p.Rel, truncate(string(r.Out), 2000))
	}
	cov := &gotest.CoverageMap{Tests: map[string][]gotest.Block{}}
	runs, err := gotest.CoverTests(ctx, v.sb, v.path(p.Rel), gotest.UpTo(p.Rel)+bin, v.path(".frog/cov"), gotest.UpTo(p.Rel)+".frog/cov", p.Stable, v.cfg.BuildTimeout)
	if err != nil {
		return nil, fmt.Errorf("coverage of %s: %w", p.Rel, err)
	}
	for i, t := range p.Stable {
		if !runs[i].Ran || runs[i].Exit != 0 {
			continue // flaky after all; it covers nothing we trust
		}
		if !runs[i].Profiled {
			return nil, fmt.Errorf("coverage of %s %s: the test passed and wrote no profile", p.Rel, t)
		}
		cov.Tests[t] = runs[i].Blocks
	}
	return cov, nil
}

// Mutant is one candidate bug: one or more mutations of a package, in one
// function, one file, or several files.
type Mutant struct {
	// File is the (first) mutated file's path relative to the module root.
	File string
	// Patch is the gold fix (a unified diff of every mutated file), hashed
	// for deduplication.
	Patch string
	// Func is the mutated function (the first mutation's); Line and EndLine
	// bound the first mutation's lines in the original file.
	Func          string
	Line, EndLine int
	// Complexity is the mutated function's cyclomatic complexity, a
	// difficulty feature.
	Complexity int
	// Mutations are the injected changes, in their original files' offsets.
	Mutations []synth.Mutation

	origs map[string][]byte // the original files, by path
}

// Edits returns the edits of every mutation of file.
func (m Mutant) Edits(file string) []synth.Edit {
	var es []synth.Edit
	for _, mu := range m.Mutations {
		if mu.File == file {
			es = append(es, mu.Edits...)
		}
	}
	return es
}

// Files returns the mutated files, sorted.
func (m Mutant) Files() []string {
	var fs []string
	for _, mu := range m.Mutations {
		if !slices.Contains(fs, mu.File) {
			fs = append(fs, mu.File)
		}
	}
	slices.Sort(fs)
	return fs
}

// Combine makes one mutant of several mutants of one package whose edits
// do not overlap, with a patch that undoes them all.
func Combine(ms ...Mutant) (Mutant, error) {
	if len(ms) == 0 {
		return Mutant{}, errors.New("combine: no mutant")
	}
	c := ms[0]
	c.Mutations = slices.Clone(c.Mutations)
	c.origs = maps.Clone(c.origs)
	for _, m := range ms[1:] {
		c.Mutations = append(c.Mutations, m.Mutations...)
		for f, src := range m.origs {
			c.origs[f] = src
		}
		if m.File == c.File {
			c.Complexity = max(c.Complexity, m.Complexity)
		}
	}
	if err := c.patch(); err != nil {
		return Mutant{}, fmt.Errorf("combine: %w", err)
	}
	return c, nil
}

// patch sets m.Patch, the gold fix, from its origs and mutations.
func (m *Mutant) patch() error {
	var patch strings.Builder
	for _, f := range m.Files() {
		_, p, err := mutate.Patch(f, m.origs[f], m.Edits(f))
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		patch.WriteString(p)
	}
	m.Patch = patch.String()
	return nil
}

// MutantOf rebuilds the mutant that muts (a task record's mutations, in
// p's original files' offsets) make of p, so that it can be combined with
// more: a compound task. It fails when a mutation names a file that is not
// p's or its edits no longer apply to it.
func (p *Package) MutantOf(muts []synth.Mutation) (Mutant, error) {
	if len(muts) == 0 {
		return Mutant{}, errors.New("no mutation")
	}
	m := Mutant{File: muts[0].File, Func: muts[0].Func, Line: muts[0].Line, EndLine: muts[0].EndLine,
		Mutations: slices.Clone(muts), origs: map[string][]byte{}}
	for _, mu := range muts {
		sf := p.src.Files[mu.File]
		if sf == nil {
			return Mutant{}, fmt.Errorf("mutation of %s: not a file of package %s", mu.File, p.Rel)
		}
		m.origs[mu.File] = sf.Src
	}
	if err := m.patch(); err != nil {
		return Mutant{}, err
	}
	return m, nil
}

// Result is the verdict on one mutant.
type Result struct {
	Outcome Outcome
	// Reason explains a verdict other than Valid.
	Reason string
	// FailToPass and PassToPass are set for Valid mutants.
	FailToPass, PassToPass []string
	// Covering lists the tests that cover the mutated lines (nil without
	// a coverage map).
	Covering []string
	// FailureOutput is the failing tests' output, for the problem
	// statement, as the mutant file compiled alone would print it.
	FailureOutput map[string]string
	// Runs counts the test runs of the mutant.
	Runs int
	// DiffHash is the normalized-diff hash.
	DiffHash string
	// Timeout is the limit each run had, a multiple of the same tests' run
	// on the original.
	Timeout time.Duration
}

// Validate judges one mutant of a prepared package: Batch of one.
func (v *Validator) Validate(ctx context.Context, p *Package, m Mutant) (Result, error) {
	var res Result
	err := v.Batch(ctx, p, []Mutant{m}, func(_ int, r Result) { res = r })
	return res, err
}

// Batch judges mutants of a prepared package, calling emit with each
// verdict (by index into ms) as it is reached. The error is reserved for
// faults of the validator or its sandbox (a go command that cannot start, a
// cancelled ctx); the mutants' own failures are verdicts. Mutants are
// checked for duplicates and coverage first, then compiled in batches of
// Config.BatchSize into one test binary (see schema.go), vetted, and run.
func (v *Validator) Batch(ctx context.Context, p *Package, ms []Mutant, emit func(int, Result)) error {
	if err := v.copyModule(ctx); err != nil {
		return err
	}
	b := &batch{v: v, p: p, ms: ms, res: make([]Result, len(ms)), emit: emit}
	var todo []int
	for i, m := range ms {
		r := &b.res[i]
		r.DiffHash = DiffHash(m.Patch)
		if !v.cfg.Dedup.first(diffKey(r.DiffHash)) {
			b.finish(i, Duplicate, "same normalized diff")
			continue
		}
		if why := p.src.Check(m.Files(), m.Edits); why != "" {
			b.finish(i, NonViable, why)
			continue
		}
		if p.Coverage != nil {
			for _, mu := range m.Mutations { // the map holds only stable tests
				r.Covering = append(r.Covering, p.Coverage.Covering(path.Base(mu.File), mu.Line, mu.EndLine)...)
			}
			slices.Sort(r.Covering)
			r.Covering = slices.Compact(r.Covering)
			if len(r.Covering) == 0 {
				b.finish(i, Equivalent, "no test covers the mutated lines")
				continue
			}
		}
		todo = append(todo, i)
	}
	for len(todo) > 0 {
		n := min(len(todo), v.cfg.BatchSize)
		if err := b.run(ctx, todo[:n]); err != nil {
			return err
		}
		todo = todo[n:]
	}
	return nil
}

// batch is the state of one Batch call.
type batch struct {
	v    *Validator
	p    *Package
	ms   []Mutant
	res  []Result
	emit func(int, Result)
}

func (b *batch) finish(i int, o Outcome, why string) {
	r := &b.res[i]
	r.Outcome, r.Reason = o, why
	m := b.ms[i]
	b.v.log.Debug().Str("file", m.File).Int("line", m.Line).Str("outcome", string(o)).
		Str("reason", why).Msg("mutant validated")
	if b.emit != nil {
		b.emit(i, *r)
	}
}

// run validates the mutants idx (indexes into b.ms) in one schema. A
// schema that fails in a way no single mutant explains is split in two.
func (b *batch) run(ctx context.Context, idx []int) error {
	v, p := b.v, b.p
	live := slices.Clone(idx)
	t0 := v.now()
	var sc *gotest.Schema
	var ov string // the overlay of sc
	bin := ".frog/schema.test"
	for attempt := 0; ; attempt++ {
		var muts []gotest.Mutant
		for _, i := range live {
			for _, f := range b.ms[i].Files() {
				muts = append(muts, gotest.Mutant{ID: i + 1, File: f, Edits: b.ms[i].Edits(f)})
			}
		}
		var bad map[int]string
		sc, bad = p.src.Build(muts)
		live = b.drop(live, bad, "")
		if len(live) == 0 {
			return nil
		}
		if len(bad) > 0 {
			continue // rebuild without them
		}
		var err error
		if ov, err = v.writeOverlay(ctx, sc); err != nil {
			return err
		}
		r, err := v.goCmd(ctx, "test", "-c", "-vet=off", "-gcflags=-e", "-o", bin, "-overlay", ov, p.Rel)
		if err != nil {
			return fmt.Errorf("build schema of %s: %w", p.Rel, err)
		}
		if r.Exit == 0 && !r.TimedOut {
			break
		}
		blamed, unexplained := gotest.Attribute(sc, string(r.Out))
		if unexplained || attempt >= 4 {
			return b.split(ctx, live, "build: "+gotest.FirstLines(string(r.Out), 5))
		}
		live = b.drop(live, blamed, "build: ")
		if len(live) == 0 {
			return nil
		}
	}
	t1 := v.now()
	if p.VetClean {
		r, err := v.goCmd(ctx, "vet", "-overlay", ov, p.Rel)
		if err != nil {
			return fmt.Errorf("vet schema of %s: %w", p.Rel, err)
		}
		if r.Exit != 0 {
			blamed, unexplained := gotest.Attribute(sc, string(r.Out))
			if unexplained {
				return b.split(ctx, live, "vet: "+gotest.FirstLines(string(r.Out), 5))
			}
			live = b.drop(live, blamed, "vet: ")
		}
	}
	if len(live) == 0 {
		return nil
	}

	t2 := v.now()
	// The original program under the schema binary: its time sets the
	// timeout; tests that fail here, or with the identity copies, cannot
	// judge these mutants.
	base, err := v.runTests(ctx, p.Rel, bin, 0, v.cfg.BuildTimeout, p.Stable)
	if err != nil {
		return err
	}
	usable := intersect(base.Passed, p.Stable)
	timeout := max(time.Duration(v.cfg.TimeoutFactor*float64(base.Wall)), v.cfg.MinTimeout)
	ident, err := v.runTests(ctx, p.Rel, bin, gotest.Identity, v.cfg.BuildTimeout, usable)
	if err != nil {
		return err
	}
	usable = intersect(ident.Passed, usable)
	if len(usable) == 0 {
		for _, i := range live {
			b.finish(i, NonViable, "no test passes under the schema")
		}
		return nil
	}
	t3 := v.now()
	for _, i := range live {
		if err := b.one(ctx, sc, bin, i, usable, timeout); err != nil {
			return err
		}
	}
	v.log.Debug().Str("pkg", p.Rel).Int("mutants", len(idx)).Int("run", len(live)).
		Dur("build_took", t1.Sub(t0)).Dur("vet_took", t2.Sub(t1)).Dur("baseline_took", t3.Sub(t2)).
		Dur("runs_took", v.now().Sub(t3)).Dur("timeout", timeout).Msg("schema batch validated")
	return nil
}

// drop finishes the mutants blamed (by schema id) as non-viable and returns
// the others.
func (b *batch) drop(live []int, blamed map[int]string, prefix string) []int {
	if len(blamed) == 0 {
		return live
	}
	out := live[:0]
	for _, i := range live {
		if why, ok := blamed[i+1]; ok {
			b.finish(i, NonViable, prefix+why)
			continue
		}
		out = append(out, i)
	}
	return out
}

// settled finishes mutant i when run already decides it (the tests timed
// out, or the binary died with no test failed) and reports whether it did.
func (b *batch) settled(i int, run gotest.Run) bool {
	switch {
	case run.TimedOut:
		b.finish(i, TimedOut, "tests ran past the timeout")
	case run.Died:
		b.finish(i, NonViable, "the test binary died with no test failed: "+gotest.FirstLines(run.Raw, 3))
	default:
		return false
	}
	return true
}

// split validates the two halves of live separately; a single mutant is
// non-viable for reason why.
func (b *batch) split(ctx context.Context, live []int, why string) error {
	if len(live) == 1 {
		b.finish(live[0], NonViable, why)
		return nil
	}
	h := len(live) / 2
	if err := b.run(ctx, live[:h]); err != nil {
		return err
	}
	return b.run(ctx, live[h:])
}

// one runs mutant i of schema sc: the tests covering it, then, when some
// fail, every usable test to confirm the verdict and find PASS_TO_PASS,
// then the task's own tests (FAIL_TO_PASS and PASS_TO_PASS) once more.
func (b *batch) one(ctx context.Context, sc *gotest.Schema, bin string, i int, usable []string, timeout time.Duration) error {
	r := &b.res[i]
	r.Timeout = timeout
	tests := usable
	if r.Covering != nil {
		tests = intersect(r.Covering, usable)
		if len(tests) == 0 {
			b.finish(i, Equivalent, "no usable test covers the mutated lines")
			return nil
		}
	}
	run := func(tests []string) (gotest.Run, error) {
		r.Runs++
		return b.v.runTests(ctx, b.p.Rel, bin, i+1, timeout, tests)
	}
	first, err := run(tests)
	if err != nil || b.settled(i, first) {
		return err
	}
	if len(first.Failed) == 0 {
		b.finish(i, Equivalent, "every test passes")
		return nil
	}
	second, err := run(usable)
	if err != nil || b.settled(i, second) {
		return err
	}
	if !slices.Equal(intersect(second.Failed, tests), first.Failed) {
		b.finish(i, NonViable, "verdict does not repeat")
		return nil
	}
	r.FailToPass = second.Failed
	r.PassToPass = intersect(second.Passed, usable)
	if len(r.PassToPass) == 0 {
		b.finish(i, NonViable, "no PASS_TO_PASS test")
		return nil
	}
	// The task's own test set, as its test command will run it: when a
	// failing test panics, the tests after it never run, so PASS_TO_PASS
	// keeps those that pass here.
	third, err := run(slices.Concat(r.FailToPass, r.PassToPass))
	if err != nil {
		return err
	}
	if third.TimedOut || !slices.Equal(third.Failed, r.FailToPass) {
		b.finish(i, NonViable, "verdict does not repeat with the task's tests")
		return nil
	}
	r.PassToPass = intersect(r.PassToPass, third.Passed)
	if third.Crashed() {
		// The binary died under the tests: which parallel tests had
		// finished, or failed, by then is a race, so none of them is kept.
		par := func(t string) bool { return third.Parallel[t] }
		r.FailToPass = slices.DeleteFunc(slices.Clone(r.FailToPass), par)
		r.PassToPass = slices.DeleteFunc(r.PassToPass, par)
		if len(r.FailToPass) == 0 {
			b.finish(i, NonViable, "only parallel tests fail, and the binary dies")
			return nil
		}
	}
	if len(r.PassToPass) == 0 {
		b.finish(i, NonViable, "no PASS_TO_PASS test")
		return nil
	}
	r.FailureOutput = map[string]string{}
	for t, out := range second.Output {
		r.FailureOutput[t] = b.v.relPaths(sc.MapOutput(i+1, out))
	}
	if !b.v.cfg.Dedup.first(f2pKey(b.ms[i].Func, r.FailToPass)) {
		b.finish(i, Duplicate, "same function and FAIL_TO_PASS set")
		return nil
	}
	b.finish(i, Valid, "")
	return nil
}

// DiffHash is the hash tasks are deduplicated and named by: the SHA-256 of a
// unified diff's file names and changed lines, with hunk positions and
// whitespace differences left out.
func DiffHash(patch string) string {
	h := sha256.New()
	for _, l := range strings.Split(patch, "\n") {
		if strings.HasPrefix(l, "@@") || l == "" {
			continue
		}
		if l[0] == ' ' {
			continue
		}
		h.Write([]byte(l[:1] + strings.Join(strings.Fields(l[1:]), " ") + "\n"))
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// intersect returns the elements of a (sorted) that are in b.
func intersect(a, b []string) []string {
	var out []string
	for _, x := range a {
		if slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
