package validate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/frognano/frog/synth"
	"github.com/rs/zerolog"
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
	// GoBin is the go command; "go" when empty.
	GoBin string
	// TimeoutFactor times the slowest baseline run bounds a mutant's run;
	// 3 when zero.
	TimeoutFactor float64
	// MinTimeout is a floor under that bound, since builds on a loaded
	// machine vary; 10s when zero.
	MinTimeout time.Duration
	// NoCoverage skips the per-test coverage map: every stable test runs
	// on every mutant.
	NoCoverage bool
	// Now is the clock; time.Now when nil.
	Now func() time.Time
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

// Validator validates mutants of the packages of one module.
type Validator struct {
	dir string
	cfg Config
	log zerolog.Logger

	mu       sync.Mutex
	seen     map[string]bool // normalized-diff hashes
	seenF2P  map[string]bool // function + FAIL_TO_PASS set
	counters Counters
}

// New returns a Validator for the module rooted at dir.
func New(dir string, cfg Config, log zerolog.Logger) (*Validator, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("module dir %s: %w", dir, err)
	}
	if cfg.GoBin == "" {
		cfg.GoBin = "go"
	}
	if cfg.TimeoutFactor == 0 {
		cfg.TimeoutFactor = 3
	}
	if cfg.MinTimeout == 0 {
		cfg.MinTimeout = 10 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Validator{
		dir: abs, cfg: cfg, log: log.With().Str("component", "validate").Logger(),
		seen: map[string]bool{}, seenF2P: map[string]bool{},
	}, nil
}

func (v *Validator) now() time.Time { return v.cfg.Now() }

// Counters returns the verdicts so far.
func (v *Validator) Counters() Counters {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.counters
}

// Package is a package measured by Prepare.
type Package struct {
	// Rel is the package's directory relative to the module root, in the
	// form go commands take ("./calc", or "." for the root).
	Rel string
	// Stable lists, sorted, the top-level tests that passed in both
	// baseline runs; Flaky those that passed in only one.
	Stable, Flaky []string
	// Baseline is the slowest baseline run, build included.
	Baseline time.Duration
	// Timeout bounds each run of a mutant.
	Timeout time.Duration
	// VetClean says whether go vet passed on the original; if not, mutants
	// are not vetted.
	VetClean bool
	// Coverage is the per-test coverage map; nil when not computed.
	Coverage *CoverageMap
}

// Prepare runs a package's tests twice, excludes flaky ones, sets the
// timeout and computes the coverage map. rel is the package directory
// relative to the module root.
func (v *Validator) Prepare(ctx context.Context, rel string) (*Package, error) {
	rel = "./" + strings.TrimPrefix(filepath.ToSlash(filepath.Clean(rel)), "./")
	p := &Package{Rel: rel}
	var runs [2]testRun
	for i := range runs {
		r, err := v.goCmd(ctx, v.dir, 0, v.cfg.GoBin, "test", "-json", "-count=1", rel)
		if err != nil {
			return nil, fmt.Errorf("baseline %s: %w", rel, err)
		}
		runs[i] = parseTestJSON(r)
		if !runs[i].built {
			return nil, fmt.Errorf("baseline %s does not build: %s", rel, truncate(runs[i].raw, 2000))
		}
		p.Baseline = max(p.Baseline, r.wall)
	}
	for _, t := range runs[0].passed {
		if slices.Contains(runs[1].passed, t) {
			p.Stable = append(p.Stable, t)
		} else {
			p.Flaky = append(p.Flaky, t)
		}
	}
	for _, t := range runs[1].passed {
		if !slices.Contains(runs[0].passed, t) {
			p.Flaky = append(p.Flaky, t)
		}
	}
	if len(p.Stable) == 0 {
		return nil, fmt.Errorf("package %s: %w", rel, ErrNoTests)
	}
	p.Timeout = max(time.Duration(v.cfg.TimeoutFactor*float64(p.Baseline)), v.cfg.MinTimeout)
	vet, err := v.goCmd(ctx, v.dir, 0, v.cfg.GoBin, "vet", rel)
	if err != nil {
		return nil, fmt.Errorf("vet %s: %w", rel, err)
	}
	p.VetClean = vet.exit == 0
	if !v.cfg.NoCoverage {
		cov, err := v.coverage(ctx, p)
		if err != nil {
			return nil, err
		}
		p.Coverage = cov
	}
	v.log.Debug().Str("pkg", rel).Int("stable", len(p.Stable)).Int("flaky", len(p.Flaky)).
		Dur("baseline", p.Baseline).Msg("package prepared")
	return p, nil
}

func (v *Validator) coverage(ctx context.Context, p *Package) (*CoverageMap, error) {
	tmp, err := os.MkdirTemp("", "frog-cover-")
	if err != nil {
		return nil, fmt.Errorf("coverage of %s: %w", p.Rel, err)
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "pkg.test")
	r, err := v.goCmd(ctx, v.dir, 0, v.cfg.GoBin, "test", "-c", "-cover", "-o", bin, p.Rel)
	if err != nil {
		return nil, fmt.Errorf("coverage build of %s: %w", p.Rel, err)
	}
	if r.exit != 0 {
		return nil, fmt.Errorf("coverage build of %s: %s", p.Rel, truncate(string(r.out), 2000))
	}
	cov := &CoverageMap{Tests: map[string][]Block{}}
	pkgDir := filepath.Join(v.dir, filepath.FromSlash(p.Rel))
	for i, t := range p.Stable {
		prof := filepath.Join(tmp, fmt.Sprintf("%d.out", i))
		r, err := v.goCmd(ctx, pkgDir, p.Timeout, bin, "-test.run", runRegexp([]string{t}), "-test.count=1", "-test.coverprofile", prof)
		if err != nil {
			return nil, fmt.Errorf("coverage of %s %s: %w", p.Rel, t, err)
		}
		if r.exit != 0 || r.timedOut {
			continue // flaky after all; it covers nothing we trust
		}
		data, err := os.ReadFile(prof)
		if err != nil {
			return nil, fmt.Errorf("coverage of %s %s: %w", p.Rel, t, err)
		}
		blocks, err := parseProfile(data)
		if err != nil {
			return nil, fmt.Errorf("coverage of %s %s: %w", p.Rel, t, err)
		}
		cov.Tests[t] = blocks
	}
	return cov, nil
}

// Mutant is one candidate bug.
type Mutant struct {
	// File is the mutated file's path relative to the module root.
	File string
	// Src is the mutated content of File.
	Src []byte
	// Patch is the gold fix (a unified diff), hashed for deduplication.
	Patch string
	// Func is the mutated function; Line and EndLine bound the mutated
	// lines in the original file.
	Func          string
	Line, EndLine int
	// Complexity is the mutated function's cyclomatic complexity and
	// PackageLines the size of the mutated file, for difficulty features.
	Complexity, PackageLines int
	// Mutations are the injected changes.
	Mutations []synth.Mutation
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
	// statement.
	FailureOutput map[string]string
	// Runs counts the go test runs of the mutant.
	Runs int
	// DiffHash is the normalized-diff hash.
	DiffHash string
	// Timeout is the limit each run had.
	Timeout time.Duration
}

// Validate judges one mutant of a prepared package. The error is reserved for
// faults of the validator itself (a go command that cannot start, a full
// disk, a cancelled ctx); the mutant's own failures are verdicts.
func (v *Validator) Validate(ctx context.Context, p *Package, m Mutant) (Result, error) {
	res, err := v.validate(ctx, p, m)
	if err != nil {
		return res, err
	}
	v.mu.Lock()
	v.counters.Add(res.Outcome)
	v.mu.Unlock()
	v.log.Debug().Str("file", m.File).Int("line", m.Line).Str("outcome", string(res.Outcome)).
		Str("reason", res.Reason).Msg("mutant validated")
	return res, nil
}

func (v *Validator) validate(ctx context.Context, p *Package, m Mutant) (Result, error) {
	res := Result{DiffHash: DiffHash(m.Patch), Timeout: p.Timeout}
	v.mu.Lock()
	dup := v.seen[res.DiffHash]
	v.seen[res.DiffHash] = true
	v.mu.Unlock()
	if dup {
		return verdict(res, Duplicate, "same normalized diff"), nil
	}
	tests := p.Stable
	if p.Coverage != nil {
		res.Covering = intersect(p.Coverage.Covering(filepath.Base(m.File), m.Line, m.EndLine), p.Stable)
		if len(res.Covering) == 0 {
			return verdict(res, Equivalent, "no test covers the mutated lines"), nil
		}
		tests = res.Covering
	}

	tmp, err := os.MkdirTemp("", "frog-mutant-")
	if err != nil {
		return res, fmt.Errorf("validate %s: %w", m.File, err)
	}
	defer os.RemoveAll(tmp)
	overlay, err := writeOverlay(tmp, filepath.Join(v.dir, filepath.FromSlash(m.File)), m.Src)
	if err != nil {
		return res, fmt.Errorf("validate %s: %w", m.File, err)
	}

	if p.VetClean {
		r, err := v.goCmd(ctx, v.dir, p.Timeout, v.cfg.GoBin, "vet", "-overlay", overlay, p.Rel)
		if err != nil {
			return res, fmt.Errorf("vet mutant of %s: %w", m.File, err)
		}
		if r.exit != 0 || r.timedOut {
			return verdict(res, NonViable, "vet: "+firstLines(string(r.out), 5)), nil
		}
	}

	first, err := v.runTests(ctx, p, overlay, tests)
	res.Runs++
	if err != nil {
		return res, err
	}
	if o, why, done := settle(first); done {
		return verdict(res, o, why), nil
	}
	if len(first.failed) == 0 {
		return verdict(res, Equivalent, "every test passes"), nil
	}

	// The repeat runs every stable test: it confirms the verdict and finds
	// PASS_TO_PASS beyond the covering tests.
	second, err := v.runTests(ctx, p, overlay, p.Stable)
	res.Runs++
	if err != nil {
		return res, err
	}
	if o, why, done := settle(second); done {
		return verdict(res, o, why), nil
	}
	if !slices.Equal(intersect(second.failed, tests), first.failed) {
		return verdict(res, NonViable, "verdict does not repeat"), nil
	}
	res.FailToPass = second.failed
	res.PassToPass = intersect(second.passed, p.Stable)
	if len(res.PassToPass) == 0 {
		return verdict(res, NonViable, "no PASS_TO_PASS test"), nil
	}
	res.FailureOutput = second.output
	key := m.Func + "\x00" + strings.Join(res.FailToPass, "\x00")
	v.mu.Lock()
	dup = v.seenF2P[key]
	v.seenF2P[key] = true
	v.mu.Unlock()
	if dup {
		return verdict(res, Duplicate, "same function and FAIL_TO_PASS set"), nil
	}
	res.Outcome = Valid
	return res, nil
}

func (v *Validator) runTests(ctx context.Context, p *Package, overlay string, tests []string) (testRun, error) {
	r, err := v.goCmd(ctx, v.dir, 2*p.Timeout, v.cfg.GoBin, "test", "-json", "-count=1",
		"-overlay", overlay, "-timeout", p.Timeout.String(), "-run", runRegexp(tests), p.Rel)
	if err != nil {
		return testRun{}, fmt.Errorf("test mutant in %s: %w", p.Rel, err)
	}
	return parseTestJSON(r), nil
}

// settle returns the verdict a run already decides.
func settle(r testRun) (Outcome, string, bool) {
	switch {
	case r.timedOut:
		return TimedOut, "tests ran past the timeout", true
	case !r.built:
		return NonViable, "build: " + firstLines(r.raw, 5), true
	}
	return "", "", false
}

func verdict(r Result, o Outcome, why string) Result {
	r.Outcome, r.Reason = o, why
	return r
}

func writeOverlay(dir, target string, src []byte) (string, error) {
	file := filepath.Join(dir, filepath.Base(target))
	if err := os.WriteFile(file, src, 0o644); err != nil {
		return "", err
	}
	data, err := json.Marshal(map[string]map[string]string{"Replace": {target: file}})
	if err != nil {
		return "", err
	}
	overlay := filepath.Join(dir, "overlay.json")
	return overlay, os.WriteFile(overlay, data, 0o644)
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

func firstLines(s string, n int) string {
	lines := strings.SplitN(strings.TrimSpace(s), "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "\n")
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
