package gotask

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/synth"
)

// moduleWorkspaces lays out tasks of the tiny module from a template of
// each task's own, and knows the module as published (treeKey's need).
type moduleWorkspaces map[string]string

func (w moduleWorkspaces) Template(_ context.Context, t *env.Task) (string, error) {
	return w[t.ID], nil
}

func (w moduleWorkspaces) ModuleDir(context.Context, *env.Task) (string, error) {
	return tinyModule, nil
}

// tinyTask is a task of the tiny module with one bug in calc/calc.go:
// old replaced by new, its template made under a directory of its own.
func tinyTask(t testing.TB, id, old, new string, failing string) (string, *env.Task) {
	t.Helper()
	dir, task := buggyTiny(t)
	src := string(mustRead(t, tinyModule, "calc/calc.go"))
	if !strings.Contains(src, old) {
		t.Fatalf("no %q in calc.go", old)
	}
	if err := os.WriteFile(filepath.Join(dir, "calc", "calc.go"), []byte(strings.Replace(src, old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	task.ID, task.Version = id, "v0.1.0"
	task.Mutations = []env.Mutation{{File: "calc/calc.go"}}
	task.FailToPass, task.PassToPass = []string{failing}, nil
	for _, n := range []string{"TestMax", "TestAbs", "TestCount", "TestSqrt"} {
		if n != failing {
			task.PassToPass = append(task.PassToPass, n)
		}
	}
	return dir, task
}

// editCalc has episode ep replace calc/calc.go, as template dir holds it,
// by calc through the agent's edit tool.
func editCalc(t testing.TB, ep *env.Episode, sb env.Sandbox, dir, calc string) {
	t.Helper()
	before := string(mustRead(t, dir, "calc/calc.go"))
	if err := ep.Apply(context.Background(), sb, env.Action{Tool: env.ToolEdit, Path: "calc/calc.go", Old: before, New: calc}); err != nil {
		t.Fatal(err)
	}
	if steps := ep.Trajectory().Steps; steps[len(steps)-1].Result.Error != "" {
		t.Fatalf("edit: %s", steps[len(steps)-1].Result.Error)
	}
}

// TestRealBuildsSharedByTree: two tasks of one package whose gold patches
// give back the module as published build that tree once; an agent's
// exact fix of either is judged by that binary; a tree of its own (a
// wrong fix, one that does not compile) is built; every outcome is the
// one go test gives without the sharing.
func TestRealBuildsSharedByTree(t *testing.T) {
	maxDir, maxTask := tinyTask(t, "tiny.max", "if a > b {", "if a < b {", "TestMax")
	absDir, absTask := tinyTask(t, "tiny.abs", "if v < 0 {", "if v > 0 {", "TestAbs")
	ws := moduleWorkspaces{maxTask.ID: maxDir, absTask.ID: absDir}
	pristine := mustRead(t, tinyModule, "calc/calc.go")
	gold := map[string][]byte{"calc/calc.go": pristine}
	ctx := context.Background()

	shared := NewHarness(ws, HarnessConfig{BinCache: t.TempDir()})
	plain := NewHarness(ws, HarnessConfig{})
	for _, h := range []*Harness{shared, plain} {
		if err := h.Check(ctx, laidOut(t, maxDir), maxTask, gold); err != nil {
			t.Fatal(err)
		}
		if err := h.Check(ctx, laidOut(t, absDir), absTask, gold); err != nil {
			t.Fatal(err)
		}
	}
	if st := shared.Stats(); st.RealBuilds != 1 || st.RealShared != 1 {
		t.Fatalf("checks of two tasks with one gold tree: %d real builds, %d shared; want 1 and 1", st.RealBuilds, st.RealShared)
	}
	if st := plain.Stats(); st.RealBuilds != 0 || st.RealShared != 0 {
		t.Fatalf("with no binary cache: %d real builds, %d shared; want go test (0, 0)", st.RealBuilds, st.RealShared)
	}
	// Each check timed the gold patch's tests, from the shared binary and
	// from go test: the tries' time limit is the tighter one.
	for _, h := range []*Harness{shared, plain} {
		for _, task := range []*env.Task{maxTask, absTask} {
			if _, ok := h.goldTime.Load(task.ID); !ok {
				t.Errorf("task %s: the check did not time the gold patch's tests", task.ID)
			}
			if got := h.tryTimeout(task, env.TestReport{}); got >= time.Second {
				t.Errorf("task %s: try limit %v after the check; want under a second", task.ID, got)
			}
		}
	}

	verdict := func(h *Harness, dir string, task *env.Task, calc string) bool {
		t.Helper()
		sb := laidOut(t, dir)
		ep := env.NewEpisode(task, env.RunOptions{MaxSteps: 5, Harness: h})
		editCalc(t, ep, sb, dir, calc)
		traj, err := ep.Finish(ctx, sb)
		if err != nil {
			t.Fatal(err)
		}
		return traj.Reward == 1
	}
	src := string(pristine)
	for _, tt := range []struct {
		name   string
		dir    string
		task   *env.Task
		calc   string
		want   bool
		builds int64 // the shared harness's real builds after it
	}{
		{"the exact fix", absDir, absTask, src, true, 1},
		{"a fix of its own", maxDir, maxTask, strings.Replace(src, "if a > b {", "if b < a {", 1), true, 2},
		{"that tree from the other task", absDir, absTask, strings.Replace(src, "if a > b {", "if b < a {", 1), true, 2},
		{"a wrong fix", absDir, absTask, strings.Replace(src, "if v < 0 {", "if v >= 0 {", 1), false, 3},
		{"one that does not compile", maxDir, maxTask, strings.Replace(src, "func Max(", "func Max((", 1), false, 4},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := verdict(shared, tt.dir, tt.task, tt.calc)
			if want := verdict(plain, tt.dir, tt.task, tt.calc); got != want || got != tt.want {
				t.Errorf("verdict %v with shared builds, %v with go test; want %v", got, want, tt.want)
			}
			if st := shared.Stats(); st.RealBuilds != tt.builds {
				t.Errorf("%d real builds; want %d", st.RealBuilds, tt.builds)
			}
		})
	}
}

// maxFixture is the tiny module's task whose bug turns Max's comparison:
// its layout, the task, workspaces that know it, and calc.go as
// published (the gold patch's file).
func maxFixture(t testing.TB) (string, *env.Task, moduleWorkspaces, string) {
	t.Helper()
	dir, task := tinyTask(t, "tiny.max", "if a > b {", "if a < b {", "TestMax")
	return dir, task, moduleWorkspaces{task.ID: dir}, string(mustRead(t, tinyModule, "calc/calc.go"))
}

// TestRunTestsFromSharedBinaries: run_tests answered from a tree's shared
// binary reports what go test reports (statuses, the failure's message
// and line, a build's errors), and a second harness on the same binary
// cache builds again only the tree that does not compile (that outcome is
// kept in memory: a machine's fault can look like a failed build).
func TestRunTestsFromSharedBinaries(t *testing.T) {
	maxDir, maxTask, ws, src := maxFixture(t)
	ctx := context.Background()
	bins := t.TempDir()
	run := func(h *Harness, calc string) env.TestReport {
		t.Helper()
		sb := laidOut(t, maxDir)
		ep := env.NewEpisode(maxTask, env.RunOptions{MaxSteps: 5, Harness: h})
		if calc != "" {
			editCalc(t, ep, sb, maxDir, calc)
		}
		rep, _, err := h.RunTests(ctx, sb, ep.Workspace(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := range rep.Tests {
			rep.Tests[i].Seconds = 0
		}
		return rep
	}
	states := []struct{ name, calc string }{
		{"the bug", ""},
		{"fixed", src},
		{"does not compile", strings.Replace(src, "func Max(", "func Max((", 1)},
	}
	for round, want := range []int64{3, 1} {
		shared := NewHarness(ws, HarnessConfig{BinCache: bins, VerdictKey: testVerdictKey})
		for _, st := range states {
			got, plain := run(shared, st.calc), run(NewHarness(ws, HarnessConfig{}), st.calc)
			if !got.Built {
				if plain.Built || !strings.Contains(got.BuildOutput, "calc.go") {
					t.Errorf("%s: from the shared build: %q; go test: built %v", st.name, got.BuildOutput, plain.Built)
				}
				continue
			}
			if !reflect.DeepEqual(got, plain) {
				t.Errorf("%s: from the shared binary:\n%+v\ngo test:\n%+v", st.name, got, plain)
			}
		}
		if s := shared.Stats(); s.RealBuilds != want || s.RealBuilds+s.RealShared != 3 {
			t.Errorf("round %d: %d trees built, %d shared; want %d built of 3", round, s.RealBuilds, s.RealShared, want)
		}
	}
}

// TestLaterHarnessBuildsNothing: a harness that starts over the binary
// cache an earlier one filled (a later run on the same store) checks the
// task and answers the starting state's run_tests and verdict, and an
// exact fix's verdict, with no build at all, and as the earlier one did.
func TestLaterHarnessBuildsNothing(t *testing.T) {
	maxDir, maxTask, ws, src := maxFixture(t)
	gold := map[string][]byte{"calc/calc.go": []byte(src)}
	ctx := context.Background()
	bins := t.TempDir()
	first := NewHarness(ws, HarnessConfig{BinCache: bins, VerdictKey: testVerdictKey})
	if err := first.Check(ctx, laidOut(t, maxDir), maxTask, gold); err != nil {
		t.Fatal(err)
	}
	later := NewHarness(ws, HarnessConfig{BinCache: bins, VerdictKey: testVerdictKey})
	// A later run checks its tasks again: from the binaries the first
	// check left, of the bug's tree and the gold patch's.
	if err := later.Check(ctx, laidOut(t, maxDir), maxTask, gold); err != nil {
		t.Fatal(err)
	}
	// ... and the starting state's coverage the first check measured.
	if s := later.Stats(); s.CoverShared+s.CoverAlone != 0 {
		t.Errorf("the later check measured coverage again (%d tests); want the first check's read back", s.CoverShared+s.CoverAlone)
	}
	var covs []env.CoverageReport
	for _, h := range []*Harness{first, later} {
		rep, cost, err := h.Coverage(ctx, laidOut(t, maxDir), env.NewWorkspace(maxTask), nil)
		if err != nil || cost.Executions != 0 || len(rep.Tests) == 0 {
			t.Fatalf("coverage of the starting state: %v, %d runs, %d tests; want cached, of every test", err, cost.Executions, len(rep.Tests))
		}
		covs = append(covs, rep)
	}
	if diff := cmp.Diff(covs[0], covs[1]); diff != "" {
		t.Errorf("the later harness's coverage differs from the first's (-first +later):\n%s", diff)
	}
	// The candidate list at the starting state's covered lines: the first
	// harness computes it and keeps it; the later one reads it back.
	var lines []env.Line
	for _, b := range covs[0].Blocks {
		for l := b.Start; l <= b.End; l++ {
			lines = append(lines, env.Line{File: b.File, Line: l})
		}
	}
	var lists [][]env.Candidate
	for _, h := range []*Harness{first, later} {
		list, err := h.Candidates(ctx, laidOut(t, maxDir), env.NewWorkspace(maxTask), lines)
		if err != nil || len(list) == 0 {
			t.Fatalf("candidates at %d lines: %v, %d candidates; want some", len(lines), err, len(list))
		}
		lists = append(lists, list)
	}
	if diff := cmp.Diff(lists[0], lists[1]); diff != "" {
		t.Errorf("the later harness's candidates differ from the first's (-first +later):\n%s", diff)
	}
	if f, l := first.Stats().CandidatesSaved, later.Stats().CandidatesSaved; f != 0 || l != 1 {
		t.Errorf("candidate lists read back: first harness %d, later %d; want 0 and 1", f, l)
	}
	for _, h := range []*Harness{first, later} {
		sb := laidOut(t, maxDir)
		ep := env.NewEpisode(maxTask, env.RunOptions{MaxSteps: 5, Harness: h})
		rep, _, err := h.RunTests(ctx, sb, ep.Workspace(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if !rep.Built || rep.Failed != 1 || rep.Passed != 3 {
			t.Errorf("run_tests of the starting state: %+v; want built, 1 failed, 3 passed", rep)
		}
		if v, _, err := h.Verdict(ctx, sb, ep.Workspace()); err != nil || v.Pass || v.Suspected != "" {
			t.Errorf("verdict of the starting state: %+v, %v; want no pass", v, err)
		}
		editCalc(t, ep, sb, maxDir, src)
		if v, _, err := h.Verdict(ctx, sb, ep.Workspace()); err != nil || !v.Pass {
			t.Errorf("verdict of the exact fix: %+v, %v; want a pass", v, err)
		}
	}
	if s := later.Stats(); s.GoTests != 0 || s.RealBuilds != 0 || s.Seconds["cover-build"] != 0 || s.Builds != 0 {
		t.Errorf("the later harness built: %d go test runs, %d real builds, %d schema builds, cover builds %.1f s; want none",
			s.GoTests, s.RealBuilds, s.Builds, s.Seconds["cover-build"])
	}
}

// TestTimeLimits: a try gets ten times the deciding tests' time and a
// second, a verdict two, neither more than the test timeout; once the
// task's check has timed the gold patch's tests, ten times the longer of
// the two times and a quarter of a second (two for a verdict).
func TestTimeLimits(t *testing.T) {
	h := NewHarness(moduleWorkspaces{}, HarnessConfig{TestTimeout: 5 * time.Second})
	task := &env.Task{ID: "t"}
	rep := env.TestReport{Tests: []env.TestResult{{Name: "TestA", Seconds: 0.1}, {Name: "TestB", Seconds: 0.05}}}
	if got, want := h.tryTimeout(task, rep), 2500*time.Millisecond; got != want {
		t.Errorf("try limit %v; want %v", got, want)
	}
	if got, want := h.verdictTimeout(task, rep), 3500*time.Millisecond; got != want {
		t.Errorf("verdict limit %v; want %v", got, want)
	}
	h.goldTime.Store(task.ID, 20*time.Millisecond) // the fix is faster than the bug
	if got, want := h.tryTimeout(task, rep), 1750*time.Millisecond; got != want {
		t.Errorf("try limit with the gold time known %v; want %v", got, want)
	}
	h.goldTime.Store(task.ID, 200*time.Millisecond) // slower
	if got, want := h.tryTimeout(task, rep), 2250*time.Millisecond; got != want {
		t.Errorf("try limit with the gold time known %v; want %v", got, want)
	}
	if got, want := h.verdictTimeout(task, rep), 4*time.Second; got != want {
		t.Errorf("verdict limit with the gold time known %v; want %v", got, want)
	}
	rep.Tests[0].Seconds = 1
	if got := h.verdictTimeout(task, rep); got != 5*time.Second {
		t.Errorf("verdict limit %v; want the test timeout, 5s", got)
	}
}

// TestCheckQuarantinesFlaky: a task whose failing test fails in the
// check's run with the bug but passes when run again (here: on a
// process's second run of it) is quarantined as flaky, from the shared
// coverage binary and from go test alike; with FlakeRuns off it is kept.
func TestCheckQuarantinesFlaky(t *testing.T) {
	dir, task := tinyTask(t, "tiny.max", "if a > b {", "if a < b {", "TestMax")
	flaky := `package calc

import "testing"

var flakyRuns int

// TestFlaky fails the first time a process runs it, while Max is wrong.
func TestFlaky(t *testing.T) {
	flakyRuns++
	if flakyRuns == 1 && Max(1, 2) != 2 {
		t.Fatal("Max(1, 2) != 2")
	}
}
`
	if err := os.WriteFile(filepath.Join(dir, "calc", "flaky_test.go"), []byte(flaky), 0o644); err != nil {
		t.Fatal(err)
	}
	task.FailToPass = append(task.FailToPass, "TestFlaky")
	gold := map[string][]byte{"calc/calc.go": mustRead(t, tinyModule, "calc/calc.go")}
	ws := moduleWorkspaces{task.ID: dir}
	for _, tc := range []struct {
		name string
		cfg  HarnessConfig
		want bool // quarantined
	}{
		{"shared binary", HarnessConfig{BinCache: t.TempDir()}, true},
		{"go test", HarnessConfig{}, true},
		{"off", HarnessConfig{BinCache: t.TempDir(), FlakeRuns: -1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := NewHarness(ws, tc.cfg).Check(context.Background(), laidOut(t, dir), task, gold)
			switch {
			case tc.want && (!errors.Is(err, synth.ErrQuarantined) || !strings.Contains(err.Error(), "(flaky): TestFlaky")):
				t.Errorf("Check = %v; want the task quarantined as flaky, naming TestFlaky", err)
			case !tc.want && err != nil:
				t.Errorf("Check = %v; want the task kept", err)
			}
		})
	}
}

// testVerdictKey is a verdict key that harnesses of one test share, as the
// runs of one machine share theirs: the later reuses the earlier's builds.
var testVerdictKey = []byte("a verdict key that two harnesses of a test share")
