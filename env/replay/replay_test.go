package replay_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/env/replay"
)

const src = "package a\n\nfunc F(x int) bool { return x > 0 }\n"

// search is the trajectory of an exhaustive search on a task of two
// candidates, the second of which fixes it.
func search() (env.Task, *env.Trajectory) {
	task := env.Task{ID: "t1", Repo: "example.com/a", FailToPass: []string{"TestF"}, PassToPass: []string{"TestG"}}
	rep := &env.TestReport{Built: true, Tests: []env.TestResult{{Name: "TestF", Status: env.TestFail}, {Name: "TestG", Status: env.TestPass}}, Passed: 1, Failed: 1}
	cov := &env.CoverageReport{Blocks: []env.Block{{File: "a.go", Start: 3, End: 3}}, Tests: map[string][]int{"TestF": {0}, "TestG": {0}},
		Passed: map[string]bool{"TestF": false, "TestG": true}}
	at := strings.Index(src, ">")
	cands := []env.Candidate{
		{ID: 0, File: "a.go", Line: 3, Op: "flip", Edits: []env.Edit{{Offset: at, Old: ">", New: "<"}}},
		{ID: 1, File: "a.go", Line: 3, Op: "widen", Edits: []env.Edit{{Offset: at, Old: ">", New: ">="}}},
	}
	lines := []env.Line{{File: "a.go", Line: 3}}
	tries := []env.TryResult{
		{Candidate: 0, Built: true, Failing: []string{"TestF", "TestG"}, Broken: []string{"TestG"}},
		{Candidate: 1, Built: true, Fixed: []string{"TestF"}, AllPass: true, Cached: true},
	}
	return task, &env.Trajectory{Task: task.ID, Reward: 1, Submitted: true, Steps: []env.Step{
		{Action: env.Action{Tool: env.ToolRunTests}, Result: env.StepResult{Executions: 1, Detail: &env.StepDetail{Tests: rep}}},
		{Action: env.Action{Tool: env.ToolCoverage}, Result: env.StepResult{Executions: 2, Detail: &env.StepDetail{Coverage: cov}}},
		{Action: env.Action{Tool: env.ToolCandidates, Args: &env.ActionArgs{Lines: lines}}, Result: env.StepResult{Detail: &env.StepDetail{Candidates: cands}}},
		{Action: env.Action{Tool: env.ToolTry, Args: &env.ActionArgs{Candidates: []int{0, 1}}}, Result: env.StepResult{Executions: 2, Detail: &env.StepDetail{Tries: tries}}},
		{Action: env.Action{Tool: env.ToolApply, Args: &env.ActionArgs{Candidates: []int{1}}}},
		{Action: env.Action{Tool: env.ToolSubmit}},
	}}
}

func read(file string) ([]byte, error) {
	if file == "a.go" {
		return []byte(src), nil
	}
	return nil, errors.New("no such file")
}

func table(t *testing.T) *replay.Table {
	t.Helper()
	task, traj := search()
	rec, err := replay.FromSearch(task, traj, read)
	if err != nil {
		t.Fatal(err)
	}
	return &replay.Table{Header: replay.Header{Version: "test", Store: "s.jsonl", StoreHash: "abc", Settings: replay.Settings{Protocol: json.RawMessage(`{"Lines":60}`)}}, Records: []replay.Record{rec},
		LeftOut: map[string]int{"quarantined: its gold patch fails": 1}}
}

func TestEncodeDecode(t *testing.T) {
	tab := table(t)
	var buf bytes.Buffer
	if err := tab.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	got, err := replay.Decode(bytes.NewReader(buf.Bytes()), "t.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	want := *tab
	want.Header.Kind, want.Header.Format = "header", replay.Format
	want.Records = []replay.Record{tab.Records[0]}
	want.Records[0].Kind = "task"
	if diff := cmp.Diff(&want, got); diff != "" {
		t.Errorf("decoded table (-want +got):\n%s", diff)
	}
	if got.LeftOutTotal() != 1 {
		t.Errorf("left out %d, want 1", got.LeftOutTotal())
	}
	lines := strings.SplitAfter(buf.String(), "\n")
	for _, tc := range []struct{ name, data, want string }{
		{"empty", "", "empty"},
		{"cut short", lines[0] + lines[1], "cut short"},
		{"no header", lines[1] + lines[2], "not a replay table"},
		{"other format", strings.Replace(lines[0], `"format":1`, `"format":99`, 1) + lines[1] + lines[2], "format 99"},
		{"twice", lines[0] + lines[1] + lines[1] + lines[2], "listed twice"},
		{"count", lines[0] + lines[2], "counts 1 tasks"},
		{"garbage", lines[0] + "{oops\n", "t.jsonl:2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := replay.Decode(strings.NewReader(tc.data), "t.jsonl")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Decode: %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

func TestFromSearch(t *testing.T) {
	task, traj := search()
	rec, err := replay.FromSearch(task, traj, read)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]replay.CandidateVerdict{{Candidate: 1, Verdict: env.Verdict{Pass: true}, Real: true}}, rec.Verdicts); diff != "" {
		t.Errorf("verdicts (-want +got):\n%s", diff)
	}
	if rec.Start.Pass || rec.Tries[1].Cached || rec.Files["a.go"] != src || rec.Executions["coverage"] != 2 {
		t.Errorf("record: start %+v, try cached %v, files %v, executions %v", rec.Start, rec.Tries[1].Cached, rec.Files, rec.Executions)
	}
	traj.Steps[3].Result.Detail.Tries = traj.Steps[3].Result.Detail.Tries[:1]
	if _, err := replay.FromSearch(task, traj, read); err == nil || !strings.Contains(err.Error(), "tried 1 of 2") {
		t.Errorf("a search that left a candidate untried: %v", err)
	}
}

// TestHarness plays the calls of an episode against the replay: those the
// table holds are answered as recorded, the others are not replayable.
func TestHarness(t *testing.T) {
	ctx := context.Background()
	tab := table(t)
	e, err := replay.New(tab)
	if err != nil {
		t.Fatal(err)
	}
	rec := &tab.Records[0]
	task := rec.Task
	sb, err := e.Open(ctx, env.OpenOptions{Task: &task})
	if err != nil {
		t.Fatal(err)
	}
	agent := &script{acts: []env.Action{
		{Tool: env.ToolRunTests},
		{Tool: env.ToolCoverage},
		{Tool: env.ToolCandidates, Args: &env.ActionArgs{Lines: rec.Lines}},
		{Tool: env.ToolTry, Args: &env.ActionArgs{Candidates: []int{0}}},
		{Tool: env.ToolTry, Args: &env.ActionArgs{Candidates: []int{1}}},
		{Tool: env.ToolApply, Args: &env.ActionArgs{Candidates: []int{1}}},
		{Tool: env.ToolSubmit},
	}}
	traj, err := env.Run(ctx, sb, agent, &task, env.RunOptions{Harness: e, MaxSteps: 10})
	if err != nil {
		t.Fatal(err)
	}
	if traj.Reward != 1 || traj.Executions != 0 || traj.Tries != 2 {
		t.Errorf("reward %v, executions %d, tries %d; want 1, 0, 2", traj.Reward, traj.Executions, traj.Tries)
	}
	if got := traj.Steps[3].Result.Tries(); len(got) != 1 || got[0].Candidate != 0 || !cmp.Equal(got[0].Broken, rec.Tries[0].Broken) {
		t.Errorf("try 0: %+v", got)
	}
	if err := sb.Close(ctx); err != nil {
		t.Fatal(err)
	}

	// A submit without an edit is the start's verdict.
	sb, _ = e.Open(ctx, env.OpenOptions{Task: &task})
	traj, err = env.Run(ctx, sb, &script{acts: []env.Action{{Tool: env.ToolSubmit}}}, &task, env.RunOptions{Harness: e})
	if err != nil || traj.Reward != 0 {
		t.Errorf("submit at the start: reward %v, %v", traj.Reward, err)
	}
	sb.Close(ctx)

	for _, tc := range []struct {
		name string
		acts []env.Action
		tool string
	}{
		{"named tests", []env.Action{{Tool: env.ToolRunTests, Args: &env.ActionArgs{Tests: []string{"TestF"}}}}, "run_tests"},
		{"other lines", []env.Action{{Tool: env.ToolCandidates, Args: &env.ActionArgs{Lines: []env.Line{{File: "a.go", Line: 1}}}}}, "candidates"},
		{"own edit", []env.Action{{Tool: env.ToolEdit, Path: "a.go", Old: "x > 0", New: "x != 0"}, {Tool: env.ToolSubmit}}, "verdict"},
		{"search", []env.Action{{Tool: env.ToolSearch, Args: &env.ActionArgs{Query: "F"}}}, "exec grep"},
		{"another file", []env.Action{{Tool: env.ToolView, Path: "b.go"}}, "read"},
		{"edit then list", []env.Action{{Tool: env.ToolEdit, Path: "a.go", Old: "x > 0", New: "x >= 0"},
			{Tool: env.ToolCandidates, Args: &env.ActionArgs{Lines: rec.Lines}}}, "candidates"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sb, _ := e.Open(ctx, env.OpenOptions{Task: &task})
			defer sb.Close(ctx)
			_, err := env.Run(ctx, sb, &script{acts: tc.acts}, &task, env.RunOptions{Harness: e})
			if !errors.Is(err, replay.ErrNotReplayable) || !errors.Is(err, env.ErrInfra) || !strings.Contains(err.Error(), tc.tool) {
				t.Errorf("Run: %v; want not replayable, an infrastructure fault, at %s", err, tc.tool)
			}
		})
	}
	other := env.Task{ID: "nope"}
	if _, err := e.Open(ctx, env.OpenOptions{Task: &other}); !errors.Is(err, replay.ErrNotReplayable) {
		t.Errorf("open of a task the table lacks: %v", err)
	}
	st := e.Stats()
	if st.Live != 0 || st.Faults["not-replayable:verdict"] != 1 {
		t.Errorf("stats %+v", st)
	}
	if r := e.Report("t.jsonl"); r.NotReplayable["open"] != 1 || r.Answered == 0 {
		t.Errorf("report %+v", r)
	}
}

// script acts its actions in turn, then submits.
type script struct {
	acts []env.Action
	next int
}

func (s *script) Act(ctx context.Context, _ env.Observation) (env.Action, error) {
	if s.next >= len(s.acts) {
		return env.Action{Tool: env.ToolSubmit}, nil
	}
	s.next++
	return s.acts[s.next-1], nil
}
