package gotask

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/frognano/frog/env"
)

// dirWorkspaces lays out every task from one prepared directory.
type dirWorkspaces struct{ dir string }

func (d dirWorkspaces) Template(context.Context, *env.Task) (string, error) { return d.dir, nil }

// buggyTiny copies the tiny module with Max's comparison flipped (the fix:
// > for <) and returns the copy and the task.
func buggyTiny(t testing.TB) (string, *env.Task) {
	t.Helper()
	dir := t.TempDir()
	err := filepath.WalkDir(tinyModule, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(tinyModule, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if rel == filepath.Join("calc", "calc.go") {
			data = []byte(strings.Replace(string(data), "if a > b {", "if a < b {", 1))
		}
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(rel)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	task := &env.Task{ID: "tiny.max", Repo: "example.com/tiny", FailToPass: []string{"TestMax"},
		PassToPass: []string{"TestAbs", "TestCount", "TestSqrt"},
		TestCmd:    []string{"go", "test", "-count=1", "-vet=off", "-run", "^(TestMax|TestAbs|TestCount|TestSqrt)$", "./calc"}}
	return dir, task
}

// laidOut opens a process sandbox holding the template's files.
func laidOut(t testing.TB, tmpl string) env.Sandbox {
	t.Helper()
	sb := sandbox(t)
	err := filepath.WalkDir(tmpl, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(tmpl, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return sb.WriteFile(context.Background(), filepath.ToSlash(rel), data)
	})
	if err != nil {
		t.Fatal(err)
	}
	return sb
}

// scripted plays actions computed from the episode so far.
type scripted func(obs env.Observation) env.Action

func (s scripted) Act(_ context.Context, o env.Observation) (env.Action, error) { return s(o), nil }

// repairAgent runs the tests, measures coverage, lists candidates at Max's
// lines, tries them all and applies the first that passes everything.
func repairAgent(o env.Observation) env.Action {
	h := o.History
	switch len(h) {
	case 0:
		return env.Action{Tool: env.ToolRunTests}
	case 1:
		return env.Action{Tool: env.ToolCoverage}
	case 2:
		var lines []env.Line
		cov := h[1].Result.Coverage()
		for _, i := range cov.Tests["TestMax"] {
			b := cov.Blocks[i]
			for l := b.Start; l <= b.End; l++ {
				lines = append(lines, env.Line{File: b.File, Line: l})
			}
		}
		return env.Action{Tool: env.ToolCandidates, Args: &env.ActionArgs{Lines: lines}}
	case 3:
		var ids []int
		for _, c := range h[2].Result.Candidates() {
			ids = append(ids, c.ID)
		}
		return env.Action{Tool: env.ToolTry, Args: &env.ActionArgs{Candidates: ids}}
	case 4:
		for _, tr := range h[3].Result.Tries() {
			if tr.AllPass {
				return env.Action{Tool: env.ToolApply, Args: &env.ActionArgs{Candidates: []int{tr.Candidate}}}
			}
		}
	}
	return env.Action{Tool: env.ToolSubmit}
}

func TestHarnessRepairsATask(t *testing.T) {
	tmpl, task := buggyTiny(t)
	h := NewHarness(dirWorkspaces{tmpl}, HarnessConfig{})
	for _, name := range []string{"first", "second (cached)"} {
		t.Run(name, func(t *testing.T) {
			sb := laidOut(t, tmpl)
			traj, err := env.Run(context.Background(), sb, scripted(repairAgent), task, env.RunOptions{MaxSteps: 10, Harness: h})
			if err != nil {
				t.Fatal(err)
			}
			if traj.Reward != 1 {
				var out []string
				for _, s := range traj.Steps {
					out = append(out, s.Action.Tool.String()+": "+s.Result.Output)
				}
				t.Fatalf("reward %v:\n%s", traj.Reward, strings.Join(out, "\n"))
			}
			rep := traj.Steps[0].Result.Tests()
			if st, _ := rep.Status("TestMax"); st != env.TestFail || rep.Passed != 3 {
				t.Errorf("initial report: TestMax %v, %d passed; want it failing and 3 passing", st, rep.Passed)
			}
			var max env.TestResult
			for _, r := range rep.Tests {
				if r.Name == "TestMax" {
					max = r
				}
			}
			if max.File != "calc/calc_test.go" || max.Line == 0 || max.Message == "" {
				t.Errorf("TestMax's failure: %+v; want its file:line and message", max)
			}
			tries := traj.Steps[3].Result.Tries()
			if len(tries) < 2 {
				t.Fatalf("only %d tries", len(tries))
			}
			schema := 0
			for _, tr := range tries {
				if tr.Schema {
					schema++
				}
			}
			if schema == 0 && name == "first" {
				t.Errorf("no try went through a schema")
			}
		})
	}
	st := h.Stats()
	if st.Hits == 0 || st.Builds != 1 {
		t.Errorf("stats %+v: the second episode should be answered from the cache, with one schema build in all", st)
	}
}

// TestSchemaAgreesWithRealBuild tries every candidate at Max's and Sqrt's
// lines both ways: through the schema and by a real build of the edited
// file. Verdicts must agree, candidates that break the build included.
func TestSchemaAgreesWithRealBuild(t *testing.T) {
	tmpl, task := buggyTiny(t)
	sb := laidOut(t, tmpl)
	ctx := context.Background()
	ws := env.NewWorkspace(task)
	schema := NewHarness(dirWorkspaces{tmpl}, HarnessConfig{NoCache: true})
	real := NewHarness(dirWorkspaces{tmpl}, HarnessConfig{NoCache: true, NoSchema: true})
	var lines []env.Line
	for _, l := range []int{8, 9, 46, 47} { // Max's comparison, Sqrt's loop
		lines = append(lines, env.Line{File: "calc/calc.go", Line: l})
	}
	list, err := schema.Candidates(ctx, sb, ws, lines)
	if err != nil {
		t.Fatal(err)
	}
	// The harness scores each candidate's naturalness under the module's
	// token model (mutate.LM, tested there), and its line's surprise.
	natural := 0
	for _, c := range list {
		if c.Natural != 0 {
			natural++
		}
		if c.Surprise <= 0 {
			t.Errorf("candidate %d (%s at %d): surprise %v, want > 0", c.ID, c.Desc, c.Line, c.Surprise)
		}
	}
	if natural == 0 {
		t.Errorf("no candidate of %d has a naturalness", len(list))
	}
	// A candidate that cannot build: a token that is no Go.
	list = append(list, env.Candidate{ID: len(list), File: "calc/calc.go", Line: 8, Op: "junk", Desc: "junk",
		Edits: []env.Edit{{Offset: strings.Index(string(mustRead(t, tmpl, "calc/calc.go")), "if a < b"), Old: "if", New: "iff"}}})
	ids := make([]int, len(list))
	for i := range ids {
		ids[i] = i
	}
	a, _, err := schema.Try(ctx, sb, ws, list, ids)
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := real.Try(ctx, sb, ws, list, ids)
	if err != nil {
		t.Fatal(err)
	}
	// The schema harness served its tries from one process (the process
	// sandbox starts one); a process a try gives the same results.
	alone := triedAlone(t, tmpl, sb, ws, list, ids, a)
	// A served run that shows progress (Max's fixes) runs again alone.
	if st := schema.Stats(); st.Served == 0 || st.ServerStarts == 0 || st.Confirmed == 0 || st.Served+st.Confirmed > st.TryRuns {
		t.Errorf("schema harness: %d of %d try runs served by %d servers, %d confirmed alone; want some served, from at least one, and the fixes confirmed",
			st.Served, st.TryRuns, st.ServerStarts, st.Confirmed)
	}
	if st := alone.Stats(); st.Served != 0 || st.ServerStarts != 0 || st.TryRuns == 0 {
		t.Errorf("with NoServe: %d try runs served with %d servers, of %d; want none served", st.Served, st.ServerStarts, st.TryRuns)
	}
	st := schema.Stats()
	t.Logf("%d candidates: %d try runs, %d served by %d processes, %d confirmed alone", len(list), st.TryRuns, st.Served, st.ServerStarts, st.Confirmed)
	fixes := 0
	for i := range a {
		ga, gb := a[i], b[i]
		if ga.AllPass != gb.AllPass || ga.Built != gb.Built && !(ga.Built && !ga.AllPass && !gb.Built) {
			t.Errorf("candidate %d (%s): schema %+v, real build %+v", i, list[i].Desc, ga, gb)
		}
		if ga.AllPass {
			fixes++
		}
	}
	if fixes == 0 {
		t.Errorf("no candidate of %d fixes Max", len(list))
	}
	if last := b[len(b)-1]; last.Built || last.AllPass {
		t.Errorf("the junk candidate built: %+v", last)
	}
	if st := schema.Stats(); st.Builds != 1 || st.RealTries != 0 {
		t.Errorf("schema harness: %+v; want one build and no real try (the junk does not parse)", st)
	}
}

func mustRead(t testing.TB, dir, rel string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, rel))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestVerdictTrustsTheTasksTests: an agent that rewrites the failing test to
// pass, or adds a test file, or breaks the build, gets 0; unchanged gets 0.
func TestVerdictTrustsTheTasksTests(t *testing.T) {
	tmpl, task := buggyTiny(t)
	h := NewHarness(dirWorkspaces{tmpl}, HarnessConfig{})
	testSrc := string(mustRead(t, tmpl, "calc/calc_test.go"))
	for _, tt := range []struct {
		name  string
		edits []env.Action
	}{
		{"unchanged", nil},
		{"test rewritten", []env.Action{{Tool: env.ToolEdit, Path: "calc/calc_test.go", New: "package calc\n\nimport \"testing\"\n\nfunc TestMax(t *testing.T) {}\nfunc TestAbs(t *testing.T) {}\nfunc TestCount(t *testing.T) {}\nfunc TestSqrt(t *testing.T) {}\n"}}},
		{"build broken", []env.Action{{Tool: env.ToolEdit, Path: "calc/calc.go", Old: "func Max", New: "func Max)"}}},
		{"tests appended", []env.Action{{Tool: env.ToolEdit, Path: "calc/calc_test.go", New: testSrc + "\nfunc init() { panic(1) }\n"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sb := laidOut(t, tmpl)
			acts := append(tt.edits, env.Action{Tool: env.ToolSubmit})
			traj, err := env.Run(context.Background(), sb, scripted(func(o env.Observation) env.Action { return acts[o.Step] }), task,
				env.RunOptions{MaxSteps: 5, Harness: h})
			if err != nil {
				t.Fatalf("an agent's edit became an error: %v (infra %v)", err, errors.Is(err, env.ErrInfra))
			}
			if traj.Reward != 0 {
				t.Errorf("reward %v, want 0", traj.Reward)
			}
		})
	}
}

func TestRunTestsRefusesBadNames(t *testing.T) {
	tmpl, task := buggyTiny(t)
	h := NewHarness(dirWorkspaces{tmpl}, HarnessConfig{})
	_, _, err := h.RunTests(context.Background(), laidOut(t, tmpl), env.NewWorkspace(task), []string{"TestMax|.*"})
	if err == nil || errors.Is(err, env.ErrInfra) {
		t.Fatalf("RunTests with a regexp for a name: %v; want the agent's error", err)
	}
	if !slices.Contains(task.Tests(), "TestMax") {
		t.Fatal("task tests")
	}
}

// TestSchemaBinaryShared: with a binary cache, a second sandbox of the same
// task and state runs the first one's schema binary instead of building.
func TestSchemaBinaryShared(t *testing.T) {
	tmpl, task := buggyTiny(t)
	h := NewHarness(dirWorkspaces{tmpl}, HarnessConfig{NoCache: true, BinCache: t.TempDir()})
	for range 2 {
		sb := laidOut(t, tmpl)
		traj, err := env.Run(context.Background(), sb, scripted(repairAgent), task, env.RunOptions{MaxSteps: 10, Harness: h})
		if err != nil || traj.Reward != 1 {
			t.Fatalf("reward %v, %v", traj.Reward, err)
		}
	}
	if st := h.Stats(); st.Builds != 1 {
		t.Errorf("%d schema builds for two sandboxes of one state; want 1 (shared)", st.Builds)
	}
}

// TestConcurrentEpisodesShareAnOutcome: episodes of a group that reach one
// state at once (their first coverage of the task) compute it once; the
// others wait for it and take its answer.
func TestConcurrentEpisodesShareAnOutcome(t *testing.T) {
	tmpl, task := buggyTiny(t)
	h := NewHarness(dirWorkspaces{tmpl}, HarnessConfig{})
	const n = 4
	sbs := make([]env.Sandbox, n)
	for i := range sbs {
		sbs[i] = laidOut(t, tmpl)
	}
	ws := env.NewWorkspace(task)
	var wg sync.WaitGroup
	reps := make([]env.CoverageReport, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { reps[i], _, errs[i] = h.Coverage(context.Background(), sbs[i], ws, nil) })
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if len(reps[i].Tests) != len(task.Tests()) {
			t.Errorf("episode %d: coverage of %d tests, want %d", i, len(reps[i].Tests), len(task.Tests()))
		}
	}
	st := h.Stats()
	if st.Executions != int64(len(task.Tests())) || st.Hits != n-1 {
		t.Errorf("%d test executions and %d hits for %d concurrent coverages of one state; want %d and %d (one computation)",
			st.Executions, st.Hits, n, len(task.Tests()), n-1)
	}
	if !(st.Seconds["cover"] >= st.Seconds["cover-build"] && st.Seconds["cover-build"] > 0) {
		t.Errorf("harness time %v: want the coverage's time, its build's within it", st.Seconds)
	}
	t.Logf("%d of %d waited for the first", st.Waited, n-1)
}

// TestCheckSharesTheCoverageBinary: the task's check runs the bug's tests
// from the package's coverage binary and shares it, and measures the
// starting state's coverage with it, so the episodes' coverage of the
// starting state builds and runs nothing and finds what a build of its own
// finds.
func TestCheckSharesTheCoverageBinary(t *testing.T) {
	tmpl, task := buggyTiny(t)
	fixed := map[string][]byte{"calc/calc.go": mustRead(t, tinyModule, "calc/calc.go")}
	ctx := context.Background()
	shared := NewHarness(dirWorkspaces{tmpl}, HarnessConfig{BinCache: t.TempDir()})
	if err := shared.Check(ctx, laidOut(t, tmpl), task, fixed); err != nil {
		t.Fatal(err)
	}
	builds := shared.Stats().Seconds["cover-build"]
	if builds <= 0 {
		t.Fatal("the check built no coverage binary")
	}
	run, _, err := shared.RunTests(ctx, laidOut(t, tmpl), env.NewWorkspace(task), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !run.Built || run.Failed != 1 || run.Passed != 3 {
		t.Errorf("the check's run from the coverage binary, as the first run_tests sees it: %+v; want built, 1 failed, 3 passed", run)
	}
	got, cost, err := shared.Coverage(ctx, laidOut(t, tmpl), env.NewWorkspace(task), nil)
	if err != nil {
		t.Fatal(err)
	}
	if shared.Stats().Seconds["cover-build"] != builds {
		t.Error("the coverage of the starting state built its binary again")
	}
	own := NewHarness(dirWorkspaces{tmpl}, HarnessConfig{})
	want, _, err := own.Coverage(ctx, laidOut(t, tmpl), env.NewWorkspace(task), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("coverage from the check's binary:\n%+v\nfrom a build of its own:\n%+v", got, want)
	}
	// The check measured it: the episodes' first coverage is an answer of
	// the outcome cache.
	if !cost.Cached || cost.Executions != 0 || got.Passed["TestMax"] || !got.Passed["TestAbs"] {
		t.Errorf("cached %v, %d test runs, passed %v; want cached, no run, TestMax failing and TestAbs passing", cost.Cached, cost.Executions, got.Passed)
	}
}

// TestServedTriesSurvivePanics: a candidate whose tests panic (as the bug
// of many tasks makes them) fails its tests, as in a process of its own,
// and leaves the episode's try server running for the next try; a try that
// ends a server where a test panicked before (a loop, here) runs again
// alone.
func TestServedTriesSurvivePanics(t *testing.T) {
	tmpl, task := buggyTiny(t)
	sb := laidOut(t, tmpl)
	ctx := context.Background()
	ws := env.NewWorkspace(task)
	at := strings.Index(string(mustRead(t, tmpl, "calc/calc.go")), "if a < b {")
	list := []env.Candidate{
		{ID: 0, File: "calc/calc.go", Line: 8, Op: "test", Desc: "index out of range", Edits: []env.Edit{{Offset: at, Old: "if a < b {", New: "if []int{}[a] < b {"}}},
		{ID: 1, File: "calc/calc.go", Line: 8, Op: "test", Desc: "the fix", Edits: []env.Edit{{Offset: at, Old: "if a < b {", New: "if a > b {"}}},
		{ID: 2, File: "calc/calc.go", Line: 8, Op: "test", Desc: "a loop", Edits: []env.Edit{{Offset: at, Old: "if a < b {", New: "for a < b+1 {}; if a < b {"}}},
	}
	ids := []int{0, 1, 0, 2, 0}
	served := NewHarness(dirWorkspaces{tmpl}, HarnessConfig{NoCache: true})
	a, _, err := served.Try(ctx, sb, ws, list, ids)
	if err != nil {
		t.Fatal(err)
	}
	triedAlone(t, tmpl, sb, ws, list, ids, a)
	if a[0].AllPass || !slices.Equal(a[0].Failing, []string{"TestMax"}) || !a[1].AllPass || a[3].AllPass {
		t.Errorf("tries = %+v; want the panicking candidate and the loop failing TestMax and the fix passing", a)
	}
	// One server for the first three tries; the loop ends it and runs
	// alone; the last try starts another.
	if st := served.Stats(); st.ServerStarts != 2 || st.ServedEnded != 1 || st.Served != 4 || st.TimedOut != 1 {
		t.Errorf("%d servers started, %d ended by a try, %d runs served, %d timed out; want 2, 1 (the loop), 4 and 1 (the loop's run alone)",
			st.ServerStarts, st.ServedEnded, st.Served, st.TimedOut)
	}
}

// triedAlone tries ids of list with a harness that starts a process a try
// and requires the results served got; it returns that harness.
func triedAlone(t *testing.T, tmpl string, sb env.Sandbox, ws *env.Workspace, list []env.Candidate, ids []int, served []env.TryResult) *Harness {
	t.Helper()
	alone := NewHarness(dirWorkspaces{tmpl}, HarnessConfig{NoCache: true, NoServe: true})
	got, _, err := alone.Try(context.Background(), sb, ws, list, ids)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(served, got) {
		t.Errorf("served tries differ from a process each:\nserved %+v\nalone  %+v", served, got)
	}
	return alone
}
