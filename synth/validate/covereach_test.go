package validate

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/gotask/gotest"
)

// coverAgreement prepares package pkg of the module in dir (building its
// coverage binary with frog's TestMain), measures each stable test's
// coverage in one process and a process a test from that binary, and
// returns both, by test, and the tests whose blocks differ.
func coverAgreement(t *testing.T, dir, pkg string) (once, each map[string][]gotest.Block, differ []string) {
	t.Helper()
	ctx := context.Background()
	v, err := New(dir, sandbox(t), Config{MinTimeout: 2 * time.Second}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	p, err := v.Prepare(ctx, pkg)
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	t.Logf("%s: %d stable tests, prepared in %v", pkg, len(p.Stable), time.Since(start))
	start = time.Now()
	shared, err := gotest.CoverTests(ctx, v.sb, v.path(p.Rel), gotest.UpTo(p.Rel)+".frog/cover.test", v.path(".frog/cov"), gotest.UpTo(p.Rel)+".frog/cov", p.Stable, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("one process: %v", time.Since(start))
	if !slices.ContainsFunc(shared, func(r gotest.TestCover) bool { return r.Ran && !r.Alone }) {
		t.Fatal("no test measured in one process")
	}
	start = time.Now()
	runs, err := gotest.CoverEach(ctx, v.sb, v.path(p.Rel), gotest.UpTo(p.Rel)+".frog/cover.test", v.path(".frog/cov"), gotest.UpTo(p.Rel)+".frog/cov", p.Stable, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("a process a test: %v", time.Since(start))
	sorted := func(bs []gotest.Block) []gotest.Block {
		bs = slices.Clone(bs)
		slices.SortFunc(bs, func(a, b gotest.Block) int { return strings.Compare(a.String(), b.String()) })
		return bs
	}
	once, each = map[string][]gotest.Block{}, map[string][]gotest.Block{}
	for i, test := range p.Stable {
		if !runs[i].Ran || runs[i].Exit != 0 || !runs[i].Profiled {
			t.Errorf("%s: alone it did not pass with a profile: %+v", test, runs[i])
			continue
		}
		once[test], each[test] = sorted(shared[i].Blocks), sorted(runs[i].Blocks)
		if !slices.Equal(once[test], each[test]) {
			differ = append(differ, test)
		}
	}
	return once, each, differ
}

// TestCoverOnceAgrees: the blocks each test executes, measured for all
// tests in one process, are those a process a test measures.
func TestCoverOnceAgrees(t *testing.T) {
	once, each, differ := coverAgreement(t, tinyModule, "calc")
	if len(once) == 0 {
		t.Fatal("no test measured")
	}
	for _, test := range differ {
		t.Errorf("%s: one process %v, a process each %v", test, once[test], each[test])
	}
}

// TestCoverOnceAgreesOnModule is TestCoverOnceAgrees on a module of the
// machine's (FROG_COVER_MODULE=dir, FROG_COVER_PKG=./pkg): how often a
// shared process changes what a test covers.
func TestCoverOnceAgreesOnModule(t *testing.T) {
	dir, pkg := os.Getenv("FROG_COVER_MODULE"), os.Getenv("FROG_COVER_PKG")
	if dir == "" {
		t.Skip("FROG_COVER_MODULE not set")
	}
	once, each, differ := coverAgreement(t, dir, pkg)
	for _, test := range differ {
		var more, fewer []string
		for _, b := range once[test] {
			if !slices.Contains(each[test], b) {
				more = append(more, b.String())
			}
		}
		for _, b := range each[test] {
			if !slices.Contains(once[test], b) {
				fewer = append(fewer, b.String())
			}
		}
		t.Logf("%s: %d blocks alone; in one process %d more %v, %d fewer %v", test, len(each[test]), len(more), more, len(fewer), fewer)
	}
	t.Logf("%d of %d tests differ", len(differ), len(once))
	if os.Getenv("FROG_COVER_NOISE") != "" {
		_, again, noise := coverAgreement(t, dir, pkg)
		n := 0
		for test, bs := range each {
			if !slices.Equal(bs, again[test]) {
				n++
			}
		}
		t.Logf("noise: a process a test, twice: %d of %d tests differ (the second pair: %d)", n, len(each), len(noise))
	}
}

// covFixture writes a module with package p (no TestMain; TestExit ends
// the process) and package q (a TestMain of its own) into sb.
func covFixture(t *testing.T, sb env.Sandbox) {
	t.Helper()
	files := map[string]string{
		"go.mod": "module example.com/cov\n\ngo 1.22\n",
		"p/p.go": `package p

func F(x int) int {
	if x > 0 {
		return 1
	}
	return -1
}

func G(x int) int {
	if x > 10 {
		return 2
	}
	return 0
}
`,
		"p/p_test.go": `package p

import (
	"os"
	"testing"
)

var touched bool

func TestA(t *testing.T) { F(1); touched = true }
func TestB(t *testing.T) { F(-1) }
func TestPristine(t *testing.T) {
	if touched {
		t.Fatal("run after TestA")
	}
	G(5)
}
func TestExit(t *testing.T) { G(11); os.Exit(3) }
func TestC(t *testing.T) { G(1) }
`,
		"q/q.go": "package q\n\nfunc H(x int) int {\n\tif x > 0 {\n\t\treturn 1\n\t}\n\treturn 0\n}\n",
		"q/q_test.go": `package q

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) { os.Exit(m.Run()) }
func TestH(t *testing.T) { H(1) }
func TestI(t *testing.T) { H(0) }
`,
	}
	for name, data := range files {
		if err := sb.WriteFile(context.Background(), name, []byte(data)); err != nil {
			t.Fatal(err)
		}
	}
}

func lines(bs []gotest.Block) []int {
	var out []int
	for _, b := range bs {
		for l := b.StartLine; l <= b.EndLine; l++ {
			out = append(out, l)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// TestCoverTestsFallsBack: a package with a TestMain of its own is built
// without frog's and measured a process a test; a test that ends the
// process leaves the tests after it to a process each; every test's
// coverage is still its own.
func TestCoverTestsFallsBack(t *testing.T) {
	ctx := context.Background()
	sb := sandbox(t)
	covFixture(t, sb)
	h := NewHarness(nil, HarnessConfig{})
	for _, c := range []struct {
		pkg, file string
		tests     []string
		once      bool // the first test's coverage came from one process
		want      map[string][]int
		exit      map[string]int
	}{
		{"p", "p/p.go", []string{"TestA", "TestB", "TestPristine", "TestExit", "TestC"}, true,
			map[string][]int{"TestA": {3, 4, 5, 6}, "TestB": {3, 4, 7}, "TestPristine": {10, 11, 14}, "TestC": {10, 11, 14}}, map[string]int{"TestExit": 3}},
		{"q", "q/q.go", []string{"TestH", "TestI"}, false,
			map[string][]int{"TestH": {3, 4, 5, 6}, "TestI": {3, 4, 7}}, nil},
	} {
		task := &env.Task{ID: c.pkg, File: c.file, TestCmd: []string{"go", "test", "./" + c.pkg}}
		r, err := h.buildCover(ctx, sb, env.NewWorkspace(task))
		if err != nil || r.Exit != 0 {
			t.Fatalf("%s: build: %v %s", c.pkg, err, r.Out)
		}
		runs, err := gotest.CoverTests(ctx, sb, c.pkg, "../"+coverBin, ".frog/cov", "../.frog/cov", c.tests, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		for i, test := range c.tests {
			run := runs[i]
			if !run.Ran || run.Exit != c.exit[test] {
				t.Errorf("%s %s: ran %v, exit %d; want exit %d", c.pkg, test, run.Ran, run.Exit, c.exit[test])
			}
			if alone := !c.once || test == "TestExit" || test == "TestPristine"; run.Alone != alone {
				t.Errorf("%s %s: in a process of its own %v, want %v", c.pkg, test, run.Alone, alone)
			}
			if want, ok := c.want[test]; ok && !slices.Equal(lines(run.Blocks), want) {
				t.Errorf("%s %s: covers lines %v, want %v", c.pkg, test, lines(run.Blocks), want)
			}
		}
		once, started, err := gotest.CoverOnce(ctx, sb, c.pkg, "../"+coverBin, ".frog/cov", "../.frog/cov", c.tests, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if started != c.once || c.once && len(once) != 3 {
			t.Errorf("%s: one process started %v, measured %d tests; want %v and the 3 before TestExit", c.pkg, started, len(once), c.once)
		}
	}
}
