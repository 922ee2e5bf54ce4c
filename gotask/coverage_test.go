package gotask

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/gotask/gotest"
)

// covFixture writes a module with package p (no TestMain; TestPanic
// panics, TestExit ends the process) and package q (a TestMain of its own)
// into sb.
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
func TestPanic(t *testing.T) {
	G(12)
	var m map[int]int
	m[0] = 1
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
// process leaves the tests after it to a process each; a test that panics
// fails, with its coverage up to the panic (before frog's TestMain
// recovered it, it ended the process and had none); every test's coverage
// is still its own.
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
		{"p", "p/p.go", []string{"TestA", "TestB", "TestPristine", "TestPanic", "TestExit", "TestC"}, true,
			map[string][]int{"TestA": {3, 4, 5, 6}, "TestB": {3, 4, 7}, "TestPristine": {10, 11, 14}, "TestPanic": {10, 11, 12, 13}, "TestC": {10, 11, 14}},
			map[string]int{"TestPanic": 1, "TestExit": 3}},
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
			if alone := !c.once || test == "TestExit" || test == "TestPristine" || test == "TestPanic"; run.Alone != alone {
				t.Errorf("%s %s: in a process of its own %v, want %v", c.pkg, test, run.Alone, alone)
			}
			if want, ok := c.want[test]; ok && (!run.Profiled || !slices.Equal(lines(run.Blocks), want)) {
				t.Errorf("%s %s: covers lines %v, want %v", c.pkg, test, lines(run.Blocks), want)
			}
		}
		once, started, err := gotest.CoverOnce(ctx, sb, c.pkg, "../"+coverBin, ".frog/cov", "../.frog/cov", c.tests, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if started != c.once || c.once && len(once) != 4 {
			t.Errorf("%s: one process started %v, measured %d tests; want %v and the 4 before TestExit", c.pkg, started, len(once), c.once)
		}
	}
}

// The check's coverage binary answers the starting state's run_tests
// (checkedRun). A test that panics there fails instead of ending the
// process, and is still reported as go test reports it: a panic, its
// message the panic's, its frames in the package, no line of frog's
// TestMain.
func TestCoverBinaryReportsAPanicAsGoTest(t *testing.T) {
	ctx := context.Background()
	sb := sandbox(t)
	covFixture(t, sb)
	h := NewHarness(nil, HarnessConfig{})
	task := &env.Task{ID: "p", File: "p/p.go", TestCmd: []string{"go", "test", "./p"}}
	if r, err := h.buildCover(ctx, sb, env.NewWorkspace(task)); err != nil || r.Exit != 0 {
		t.Fatalf("build: %v %s", err, r.Out)
	}
	tests := []string{"TestPanic"}
	fromBin, err := h.runBinary(ctx, sb, "p", "../"+coverBin, tests, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	fromGo, err := h.goTestRun(ctx, sb, task, tests, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	got, want := report(fromBin, "p"), report(fromGo, "p")
	if len(got.Tests) != 1 || len(want.Tests) != 1 {
		t.Fatalf("reports: %+v and %+v, want TestPanic in each", got, want)
	}
	g, w := got.Tests[0], want.Tests[0]
	if g.Status != env.TestPanic || w.Status != env.TestPanic {
		t.Errorf("status %q from the coverage binary, %q from go test; want panic", g.Status, w.Status)
	}
	if first := func(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }; !strings.HasPrefix(first(g.Message), "panic: assignment to entry in nil map") ||
		!strings.HasPrefix(first(w.Message), "panic: assignment to entry in nil map") {
		t.Errorf("messages begin %q and %q; want the panic's", first(g.Message), first(w.Message))
	}
	if g.File != w.File || g.Line != w.Line || !reflect.DeepEqual(g.Frames, w.Frames) || len(g.Frames) == 0 {
		t.Errorf("from the coverage binary: %s:%d, frames %+v\ngo test: %s:%d, frames %+v", g.File, g.Line, g.Frames, w.File, w.Line, w.Frames)
	}
	if strings.Contains(g.Message, "frog") {
		t.Errorf("the message names frog's TestMain:\n%s", g.Message)
	}
}
