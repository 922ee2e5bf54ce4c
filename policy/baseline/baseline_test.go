package baseline

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/frognano/frog/env"
	envsim "github.com/frognano/frog/env/sim"
)

// fakeHarness is a task with two failing tests whose coverage points at
// a.go line 5 first; its fix is candidate "op1" at the line fixLine, and
// with twoBugs a second fix ("op2" at line 7) is needed too.
type fakeHarness struct {
	fixLine int
	twoBugs bool
}

var tests = []string{"TestA", "TestB", "TestC"}

func (h fakeHarness) fixed(ws *env.Workspace, extra ...string) (n int) {
	var lines []string
	for _, data := range ws.Changed() {
		lines = append(lines, splitLines(string(data))...)
	}
	lines = append(lines, extra...)
	for _, want := range []string{fmt.Sprintf("fix:%d:op1", h.fixLine), "fix:7:op2"} {
		if slices.Contains(lines, want) && (h.twoBugs || want != "fix:7:op2") {
			n++
		}
	}
	return n
}

func splitLines(s string) []string {
	var out []string
	start := 0
	for i := range s {
		if s[i] == '\n' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

func (h fakeHarness) need() int {
	if h.twoBugs {
		return 2
	}
	return 1
}

func (h fakeHarness) report(fixed int) env.TestReport {
	r := env.TestReport{Built: true}
	for i, t := range tests {
		st := env.TestPass
		if i < 2 && fixed < h.need() && (i == 0 || fixed == 0) {
			st = env.TestFail
		}
		r.Tests = append(r.Tests, env.TestResult{Name: t, Status: st})
		if st == env.TestPass {
			r.Passed++
		} else {
			r.Failed++
		}
	}
	return r
}

func (h fakeHarness) RunTests(_ context.Context, _ env.Sandbox, ws *env.Workspace, _ []string) (env.TestReport, env.Cost, error) {
	return h.report(h.fixed(ws)), env.Cost{Executions: 1}, nil
}

func (h fakeHarness) Coverage(context.Context, env.Sandbox, *env.Workspace, []string) (env.CoverageReport, env.Cost, error) {
	// Block 0 (line 5) is run by both failing tests only; block 1 (line 7)
	// by TestA and TestC; block 2 (line 9) by everyone.
	return env.CoverageReport{
		Blocks: []env.Block{{File: "a.go", Start: 5, End: 5}, {File: "a.go", Start: 7, End: 7}, {File: "a.go", Start: 9, End: 9}},
		Tests:  map[string][]int{"TestA": {0, 1, 2}, "TestB": {0, 2}, "TestC": {1, 2}},
		Passed: map[string]bool{"TestC": true},
	}, env.Cost{Executions: 3}, nil
}

func (h fakeHarness) Candidates(_ context.Context, _ env.Sandbox, ws *env.Workspace, lines []env.Line) ([]env.Candidate, error) {
	var out []env.Candidate
	for _, l := range lines {
		for _, op := range []string{"op0", "op1", "op2"} {
			text := fmt.Sprintf("fix:%d:%s\n", l.Line, op)
			out = append(out, env.Candidate{ID: len(out), File: l.File, Line: l.Line, Op: op, Kind: "token", Desc: text,
				Edits: []env.Edit{{Offset: 0, Old: "", New: text}}})
		}
	}
	return out, nil
}

func (h fakeHarness) Try(_ context.Context, _ env.Sandbox, ws *env.Workspace, list []env.Candidate, ids []int) ([]env.TryResult, env.Cost, error) {
	before := h.report(h.fixed(ws)).Failing()
	var out []env.TryResult
	for _, id := range ids {
		n := h.fixed(ws, splitLines(list[id].Desc)...)
		after := h.report(n).Failing()
		tr := env.TryResult{Candidate: id, Built: true, Failing: after, AllPass: len(after) == 0}
		for _, t := range before {
			if !slices.Contains(after, t) {
				tr.Fixed = append(tr.Fixed, t)
			}
		}
		out = append(out, tr)
	}
	return out, env.Cost{Executions: len(ids)}, nil
}

func (h fakeHarness) Verdict(_ context.Context, _ env.Sandbox, ws *env.Workspace) (env.Verdict, env.Cost, error) {
	return env.Verdict{Pass: h.fixed(ws) >= h.need()}, env.Cost{Executions: 1}, nil
}

// agent plays a policy.Policy as an env.Agent.
type agent struct{ p *Policy }

func (a agent) Act(ctx context.Context, o env.Observation) (env.Action, error) {
	acts := make([]env.Action, 1)
	err := a.p.Act(ctx, []env.Observation{o}, acts)
	return acts[0], err
}

func play(t *testing.T, name string, h fakeHarness, maxTries int) env.Trajectory {
	t.Helper()
	p, err := New(name, 1)
	if err != nil {
		t.Fatal(err)
	}
	prov, err := envsim.New(envsim.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	task := &env.Task{ID: "t", FailToPass: []string{"TestA", "TestB"}, PassToPass: []string{"TestC"}, TestCmd: []string{"go", "test", "."}}
	sb, err := prov.Open(context.Background(), env.OpenOptions{Task: task})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close(context.Background())
	traj, err := env.Run(context.Background(), sb, agent{p}, task, env.RunOptions{MaxSteps: 30, MaxTries: maxTries, Harness: h})
	if err != nil {
		t.Fatal(err)
	}
	return traj
}

func TestBaselines(t *testing.T) {
	for _, tt := range []struct {
		name     string
		h        fakeHarness
		maxTries int
		reward   float64
		tries    int // exact, or -1 for any
	}{
		// The fix is at the most suspicious line (5): the FL baselines find
		// it on their second try (op0 first).
		{"fl-greedy", fakeHarness{fixLine: 5}, 10, 1, 2},
		{"fl-feedback", fakeHarness{fixLine: 5}, 10, 1, 2},
		{"ceiling", fakeHarness{fixLine: 5}, 0, 1, -1},
		{"random", fakeHarness{fixLine: 5}, 100, 1, -1},
		// Two bugs: only a policy that keeps partial fixes gets there.
		{"fl-greedy", fakeHarness{fixLine: 5, twoBugs: true}, 20, 0, -1},
		{"fl-feedback", fakeHarness{fixLine: 5, twoBugs: true}, 20, 1, -1},
		{"ceiling", fakeHarness{fixLine: 5, twoBugs: true}, 0, 1, -1},
		// Out of tries before the fix.
		{"fl-greedy", fakeHarness{fixLine: 9}, 3, 0, 3},
	} {
		t.Run(fmt.Sprintf("%s/two=%v/line%d", tt.name, tt.h.twoBugs, tt.h.fixLine), func(t *testing.T) {
			traj := play(t, tt.name, tt.h, tt.maxTries)
			var tools []string
			for _, s := range traj.Steps {
				tools = append(tools, s.Action.Tool.String())
			}
			if traj.Reward != tt.reward || tt.tries >= 0 && traj.Tries != tt.tries || !traj.Submitted {
				t.Errorf("reward %v after %d tries (submitted %v), want %v after %d: %v", traj.Reward, traj.Tries, traj.Submitted, tt.reward, tt.tries, tools)
			}
			for _, s := range traj.Steps {
				if s.Action.Tool == env.ToolTry && tt.name != "ceiling" {
					d := s.Action.Decision
					if d == nil || d.Options() == 0 || d.Chosen < 0 || d.Chosen >= d.Options() {
						t.Fatalf("a try without a usable decision record: %+v", d)
					}
				}
				if s.Result.Error != "" && s.Action.Tool != env.ToolTry {
					t.Errorf("step %s: %s", s.Action.Tool, s.Result.Error)
				}
			}
		})
	}
}

func TestUnknownBaseline(t *testing.T) {
	if _, err := New("oracle", 1); err == nil {
		t.Fatal("New(oracle): no error")
	}
}
