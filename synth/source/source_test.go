package source

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/rs/zerolog"

	"github.com/frognano/frog/env/process"
	"github.com/frognano/frog/synth"
	"github.com/frognano/frog/synth/validate"
)

const tiny = "../validate/testdata/tiny"

func TestLocalAndPackages(t *testing.T) {
	m, err := Local(tiny)
	if err != nil {
		t.Fatal(err)
	}
	if m.Path != "example.com/tiny" || m.Version != "" {
		t.Errorf("Local(%s) = %+v, want path example.com/tiny and no version", tiny, m)
	}
	pkgs, err := Packages(m)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(pkgs, []string{"./calc"}); diff != "" {
		t.Errorf("Packages (-got +want):\n%s", diff)
	}
	if _, err := Local(t.TempDir()); err == nil {
		t.Error("Local of a directory without go.mod succeeded")
	}
}

func TestIsRemote(t *testing.T) {
	for spec, want := range map[string]bool{tiny: false, "github.com/google/btree@v1.1.3": true, "./nowhere": false} {
		if got := IsRemote(spec); got != want {
			t.Errorf("IsRemote(%q) = %v, want %v", spec, got, want)
		}
	}
}

func TestDifficulty(t *testing.T) {
	easy := Difficulty("token", synth.Features{K: 1, Complexity: 1, FailToPass: 4, PointsAtLine: true, OchiaiRank: 1})
	hard := Difficulty("idiom", synth.Features{K: 2, Complexity: 12, FailToPass: 1, OchiaiRank: 5})
	if !(easy < hard) || easy < 0 || hard > 12 || math.IsNaN(hard) {
		t.Errorf("Difficulty easy %v, hard %v: want 0 <= easy < hard <= 12", easy, hard)
	}
}

func newTiny(t *testing.T) *Synthesizer {
	t.Helper()
	return newSynth(t, []Module{tinyModule(t)}, Config{})
}

// tinyModule is the tiny test module, used in place.
func tinyModule(t *testing.T) Module {
	t.Helper()
	m, err := Local(tiny)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// newSynth returns a Synthesizer over mods validating in process
// sandboxes, closed at the end of the test; cfg's zero fields get the
// tests' defaults.
func newSynth(t *testing.T, mods []Module, cfg Config) *Synthesizer {
	t.Helper()
	pcfg := process.DefaultConfig()
	pcfg.Dir = t.TempDir()
	prov, err := process.New(pcfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	cfg.Provider = prov
	if cfg.Validate.MinTimeout == 0 {
		cfg.Validate.MinTimeout = 5 * time.Second
	}
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	s, err := New(mods, cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

// tinies returns n copies of the tiny module, example.com/tiny1 ...
func tinies(t *testing.T, n int) []Module {
	t.Helper()
	var mods []Module
	for i := 1; i <= n; i++ {
		dir := filepath.Join(t.TempDir(), fmt.Sprint("tiny", i))
		if err := copyTree(tiny, dir); err != nil {
			t.Fatal(err)
		}
		gomod := fmt.Sprintf("module example.com/tiny%d\n\ngo 1.22\n", i)
		if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
			t.Fatal(err)
		}
		m, err := Local(dir)
		if err != nil {
			t.Fatal(err)
		}
		mods = append(mods, m)
	}
	return mods
}

func generate(t *testing.T, s *Synthesizer, n int) []synth.TaskRecord {
	t.Helper()
	var recs []synth.TaskRecord
	err := s.Generate(context.Background(), n, func(r synth.TaskRecord) error {
		recs = append(recs, r)
		return nil
	})
	if err != nil && !errors.Is(err, ErrExhausted) {
		t.Fatal(err)
	}
	return recs
}

// Work spreads across modules from the start: every module has a chunk of
// mutants validated before any has a second, instead of the first module
// being drained before the next is touched.
func TestSynthesizerSpreadsAcrossModules(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test on modules")
	}
	mods := tinies(t, 2)
	var s *Synthesizer
	var order []string // the module of each verdict, in order
	tried := map[string]int{}
	observe := func(validate.Mutant, validate.Result) {
		for _, ms := range s.Stats().Modules {
			if ms.Tried > tried[ms.Module] {
				tried[ms.Module] = ms.Tried
				order = append(order, ms.Module)
			}
		}
	}
	// One worker, chunks of 8 (tiny's package is small), 16 mutants each.
	s = newSynth(t, mods, Config{Workers: 1, MaxMutants: 16, Combos: -1, Validate: validate.Config{BatchSize: 8}, Observe: observe})
	recs := generate(t, s, 0)
	if len(order) != 2*16 {
		t.Fatalf("%d verdicts, want %d", len(order), 2*16)
	}
	for _, m := range mods {
		if !slices.Contains(order[:16], m.Path) {
			t.Errorf("no mutant of %s among the first 16 validated: %v", m.Path, order)
		}
		if !slices.ContainsFunc(recs, func(r synth.TaskRecord) bool { return r.Repo == m.Path }) {
			t.Errorf("no task of %s", m.Path)
		}
	}
	for _, ms := range s.Stats().Modules {
		if ms.Candidates == 0 {
			t.Errorf("module %s: no candidate mutant counted", ms.Module)
		}
	}
}

// A synthesizer given the tasks of a store continues it: none of them is
// made again.
func TestSynthesizerContinuesAStore(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test on a module")
	}
	m := tinyModule(t)
	cfg := Config{Workers: 1, MaxMutants: 32, Combos: -1}
	before := generate(t, newSynth(t, []Module{m}, cfg), 3)
	if len(before) != 3 {
		t.Fatalf("%d tasks, want 3", len(before))
	}
	cfg.Existing = before
	s := newSynth(t, []Module{m}, cfg)
	after := generate(t, s, 0)
	for _, r := range after {
		if slices.ContainsFunc(before, func(b synth.TaskRecord) bool { return b.ID == r.ID }) {
			t.Errorf("task %s made again", r.ID)
		}
	}
	if len(after) == 0 {
		t.Errorf("no new task; stats %+v", s.Stats().Total)
	}
	if d := s.Stats().Total.Duplicate; d < len(before) {
		t.Errorf("%d duplicates, want at least the %d tasks of the store", d, len(before))
	}
}

func TestSynthesizerTasks(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test on a module")
	}
	s := newTiny(t)
	tasks, err := s.Tasks(context.Background(), 2, 3)
	if err != nil && !errors.Is(err, ErrExhausted) {
		t.Fatal(err)
	}
	if len(tasks) == 0 {
		t.Fatalf("no tasks; stats %+v", s.Stats())
	}
	for _, tk := range tasks {
		if len(tk.FailToPass) == 0 || len(tk.PassToPass) == 0 || tk.Patch == "" || len(tk.TestCmd) == 0 || tk.Difficulty <= 0 {
			t.Errorf("task %s incomplete: %+v", tk.ID, tk)
		}
	}
	st := s.Stats()
	if st.Total.Valid < len(tasks) || st.Modules[0].Prepared != 1 {
		t.Errorf("stats %+v: want >= %d valid and 1 prepared package", st, len(tasks))
	}
	var fam validate.Counters
	for _, c := range st.Families {
		fam.Merge(c)
	}
	if diff := cmp.Diff(fam, st.Total); diff != "" {
		t.Errorf("family counters do not add up to the total (-families +total):\n%s", diff)
	}
}

func TestSynthesizerGenerateCancelled(t *testing.T) {
	s := newTiny(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := s.Generate(ctx, 1, func(synth.TaskRecord) error { return nil })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Generate on a cancelled ctx = %v, want context.Canceled", err)
	}
}

func TestGitSource(t *testing.T) {
	repo := t.TempDir()
	if err := copyTree(tiny, repo); err != nil {
		t.Fatal(err)
	}
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=frog", "-c", "user.email=frog@localhost"}, args...)...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "--quiet")
	git("add", ".")
	git("commit", "--quiet", "-m", "tiny")
	git("tag", "v1.0.0")
	git("commit", "--quiet", "--allow-empty", "-m", "later")

	m, err := Open(context.Background(), "git+file://"+repo+"@v1.0.0", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if m.Path != "example.com/tiny" || len(m.Version) != 41 && len(m.Version) != 40 {
		t.Errorf("git module = %+v, want example.com/tiny at a commit hash", m)
	}
	if pkgs, err := Packages(m); err != nil || !cmp.Equal(pkgs, []string{"./calc"}) {
		t.Errorf("Packages = %v, %v", pkgs, err)
	}
	if _, err := Open(context.Background(), "git+file://"+repo+"@nosuchref", t.TempDir()); err == nil || !strings.Contains(err.Error(), "nosuchref") {
		t.Errorf("a missing ref: err = %v, want one naming it", err)
	}
}

// A used-up synthesizer says so in the terms of synth's Source contract,
// which the curriculum actor tests for (errors.Is synth.ErrExhausted).
func TestErrExhaustedIsSynths(t *testing.T) {
	if !errors.Is(ErrExhausted, synth.ErrExhausted) {
		t.Error("source.ErrExhausted does not wrap synth.ErrExhausted")
	}
}
