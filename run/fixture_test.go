package run

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/policy/neural"
)

// TestLoadsACheckpointOfAnEarlierFrog loads the checkpoint a `frog train`
// run of commit 70594fd wrote (testdata/train-70594fd/README): the run
// directory's latest names it, its progress reads back, and its learner
// is a policy that chooses among repair candidates.
func TestLoadsACheckpointOfAnEarlierFrog(t *testing.T) {
	run := filepath.Join("testdata", "train-70594fd")
	ck, err := Load(run)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := filepath.Base(ck.File), "ckpt-00000004.json"; got != want || len(ck.Skipped) != 0 {
		t.Errorf("loaded %s (skipped %q); want %s, named by latest", ck.File, ck.Skipped, want)
	}
	if ck.Format != CheckpointFormat {
		t.Errorf("format %q; want %q", ck.Format, CheckpointFormat)
	}
	p := ck.Progress
	if p.Version != 4 || p.Updates != 4 || p.Results != 8 || p.NextEpisode != 8 || p.NextGroup != 4 {
		t.Errorf("progress: version %d, updates %d, results %d, next episode %d, next group %d; want 4, 4, 8, 8, 4",
			p.Version, p.Updates, p.Results, p.NextEpisode, p.NextGroup)
	}
	if e := p.Episodes; e.Admitted != 8 || e.Completed != 8 || !e.Accounted {
		t.Errorf("episodes %+v; want 8 admitted, 8 completed, accounted", e)
	}
	if p.Stats.Updates != 4 || p.Stats.Checkpoints == 0 {
		t.Errorf("learner stats %+v; want 4 updates and the checkpoints counted", p.Stats)
	}
	if len(ck.Learner) == 0 || len(ck.Curriculum) == 0 {
		t.Errorf("learner %d bytes, curriculum %d bytes; want both", len(ck.Learner), len(ck.Curriculum))
	}

	// Its learner's config holds prior: true, frog train's default then.
	if start, err := ck.Start(); err != nil || start != neural.StartPrior {
		t.Errorf("start %q (%v); want %q", start, err, neural.StartPrior)
	}

	pol, err := ck.Policy()
	if err != nil {
		t.Fatal(err)
	}
	if pol.Dims.H1 != 8 || pol.Dims.H2 != 4 {
		t.Errorf("network %+v; want the run's hidden layers of 8 and 4", pol.Dims)
	}
	pol.Greedy = true
	obs := []env.Observation{candidatesListed()}
	acts := make([]env.Action, 1)
	if err := pol.Act(context.Background(), obs, acts); err != nil {
		t.Fatal(err)
	}
	a := acts[0]
	if a.Decision == nil {
		t.Fatalf("action %+v: the policy made no choice", a)
	}
	switch {
	case a.Tool == env.ToolTry && len(a.CandidateIDs()) == 1 && a.CandidateIDs()[0] >= 0 && a.CandidateIDs()[0] < 2:
	case a.Tool == env.ToolSubmit: // it chose to stop
	default:
		t.Errorf("action %+v; want a try of candidate 0 or 1, or a submit", a)
	}
}

// candidatesListed is an episode's observation after run_tests (one test
// failing), coverage and a list of two candidates: the policy's next
// action is its choice among them (or to stop).
func candidatesListed() env.Observation {
	failing := &env.TestReport{Built: true, Tests: []env.TestResult{{Name: "TestA", Status: env.TestFail}, {Name: "TestB", Status: env.TestPass}}, Passed: 1, Failed: 1}
	cov := &env.CoverageReport{
		Blocks: []env.Block{{File: "a.go", Start: 3, End: 5}, {File: "a.go", Start: 7, End: 9}},
		Tests:  map[string][]int{"TestA": {0}, "TestB": {1}},
		Passed: map[string]bool{"TestA": false, "TestB": true},
	}
	list := []env.Candidate{
		{ID: 0, File: "a.go", Line: 4, Op: "flip-relational", Kind: "token", Context: "if", Func: "A", Desc: "< to <="},
		{ID: 1, File: "a.go", Line: 8, Op: "flip-relational", Kind: "token", Context: "if", Func: "B", Desc: "> to >="},
	}
	return env.Observation{Step: 3, MaxSteps: 17, MaxTries: 5, Task: &env.TaskView{}, History: []env.Step{
		{Action: env.Action{Tool: env.ToolRunTests}, Result: env.StepResult{Detail: &env.StepDetail{Tests: failing}}},
		{Action: env.Action{Tool: env.ToolCoverage}, Result: env.StepResult{Detail: &env.StepDetail{Coverage: cov}}},
		{Action: env.Action{Tool: env.ToolCandidates, Args: &env.ActionArgs{Lines: []env.Line{{File: "a.go", Line: 4}, {File: "a.go", Line: 8}}}},
			Result: env.StepResult{Detail: &env.StepDetail{Candidates: list}}},
	}}
}
