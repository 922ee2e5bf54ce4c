package env_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/frognano/frog/env"
	envsim "github.com/frognano/frog/env/sim"
)

// script is an agent that plays a fixed list of actions.
type script []env.Action

func (s script) Act(_ context.Context, o env.Observation) (env.Action, error) {
	if o.Step < len(s) {
		return s[o.Step], nil
	}
	return env.Action{Tool: env.ToolSubmit}, nil
}

type failingAgent struct{ err error }

func (f failingAgent) Act(context.Context, env.Observation) (env.Action, error) {
	return env.Action{}, f.err
}

func newTask() *env.Task {
	return &env.Task{ID: "t", File: "bug.go", Patch: "fixed\n", TestCmd: []string{"go", "test"}}
}

func TestRun(t *testing.T) {
	tests := []struct {
		name       string
		agent      env.Agent
		maxSteps   int
		wantReward float64
		wantSteps  int
		wantSubmit bool
		wantInfra  bool
		wantOutput string // of the first step
	}{
		{name: "fix and submit", agent: script{{Tool: env.ToolEdit, Path: "bug.go", New: "fixed\n"}}, wantReward: 1, wantSteps: 2, wantSubmit: true, wantOutput: "edited bug.go"},
		{name: "wrong fix", agent: script{{Tool: env.ToolEdit, Path: "bug.go", New: "nope"}}, wantReward: 0, wantSteps: 2, wantSubmit: true},
		{name: "step limit evaluates anyway", agent: script{{Tool: env.ToolEdit, Path: "bug.go", New: "fixed\n"}, {Tool: env.ToolRunTests}, {Tool: env.ToolRunTests}}, maxSteps: 2, wantReward: 1, wantSteps: 2},
		{name: "escaping path is the agent's error", agent: script{{Tool: env.ToolView, Path: "../../etc/passwd"}}, wantSteps: 2, wantSubmit: true, wantOutput: `error: path "../../etc/passwd" is outside the workspace`},
		{name: "edit of missing old text", agent: script{{Tool: env.ToolEdit, Path: "bug.go", Old: "absent", New: "x"}}, wantSteps: 2, wantSubmit: true, wantOutput: "error: old text not found in bug.go"},
		{name: "a model's malformed call is the agent's mistake and costs a step", agent: script{{Args: &env.ActionArgs{Mistake: "unknown tool \"frob\""}, Tool: env.ToolEdit, Path: "bug.go", New: "fixed\n"}}, wantSteps: 2, wantSubmit: true, wantOutput: `error: unknown tool "frob"`},
		{name: "a malformed call naming submit is a mistake, not a submission", agent: script{{Args: &env.ActionArgs{Mistake: "unknown tool \"frob\""}, Tool: env.ToolSubmit}, {Tool: env.ToolEdit, Path: "bug.go", New: "fixed\n"}}, wantReward: 1, wantSteps: 3, wantSubmit: true, wantOutput: `error: unknown tool "frob"`},
		{name: "unreachable model is infra", agent: failingAgent{env.Infra(errors.New("model server down"))}, wantInfra: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := envsim.New(envsim.DefaultConfig())
			if err != nil {
				t.Fatal(err)
			}
			task := newTask()
			sb, err := p.Open(context.Background(), env.OpenOptions{Task: task})
			if err != nil {
				t.Fatal(err)
			}
			defer sb.Close(context.Background())
			traj, err := env.Run(context.Background(), sb, tt.agent, task, env.RunOptions{MaxSteps: tt.maxSteps})
			if got := errors.Is(err, env.ErrInfra); got != tt.wantInfra {
				t.Fatalf("Run error %v: infra %v, want %v", err, got, tt.wantInfra)
			}
			if tt.wantInfra {
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if traj.Reward != tt.wantReward || len(traj.Steps) != tt.wantSteps || traj.Submitted != tt.wantSubmit {
				t.Errorf("reward %v steps %d submitted %v; want %v %d %v", traj.Reward, len(traj.Steps), traj.Submitted, tt.wantReward, tt.wantSteps, tt.wantSubmit)
			}
			if tt.wantOutput != "" {
				if diff := cmp.Diff(traj.Steps[0].Result.Output, tt.wantOutput); diff != "" {
					t.Errorf("first step output (-got +want):\n%s", diff)
				}
			}
		})
	}
}

func TestRunCancelled(t *testing.T) {
	p, _ := envsim.New(envsim.DefaultConfig())
	task := newTask()
	sb, _ := p.Open(context.Background(), env.OpenOptions{Task: task})
	defer sb.Close(context.Background())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := env.Run(ctx, sb, script{}, task, env.RunOptions{})
	if !errors.Is(err, context.Canceled) || errors.Is(err, env.ErrInfra) {
		t.Errorf("Run on a cancelled context: %v; want context.Canceled, not infra", err)
	}
}

func TestInfra(t *testing.T) {
	base := errors.New("boom")
	err := env.Infra(base)
	if !errors.Is(err, env.ErrInfra) || !errors.Is(err, base) || err.Error() != "boom" {
		t.Errorf("Infra(boom) = %v: want both ErrInfra and boom", err)
	}
	if env.Infra(nil) != nil {
		t.Error("Infra(nil) != nil")
	}
	if again := env.Infra(err); again != err {
		t.Error("Infra wrapped twice")
	}
}

func TestParseTool(t *testing.T) {
	for _, tool := range []env.Tool{env.ToolView, env.ToolSearch, env.ToolEdit, env.ToolRunTests, env.ToolSubmit} {
		got, err := env.ParseTool(tool.String())
		if err != nil || got != tool {
			t.Errorf("ParseTool(%q) = %v, %v", tool, got, err)
		}
	}
	if _, err := env.ParseTool("rm"); err == nil {
		t.Error("ParseTool(rm) succeeded")
	}
}

// A trajectory names its tools, and reads back the numbers older ones
// wrote.
func TestToolJSON(t *testing.T) {
	for _, tool := range env.Tools() {
		b, err := json.Marshal(env.Action{Tool: tool})
		if err != nil || !strings.Contains(string(b), `"tool":"`+tool.String()+`"`) {
			t.Errorf("%v: %s, %v; want the tool by name", tool, b, err)
		}
		var a env.Action
		if err := json.Unmarshal(b, &a); err != nil || a.Tool != tool {
			t.Errorf("%s read back as %v, %v", b, a.Tool, err)
		}
		old := fmt.Sprintf(`{"tool":%d}`, uint8(tool))
		if err := json.Unmarshal([]byte(old), &a); err != nil || a.Tool != tool {
			t.Errorf("%s read back as %v, %v", old, a.Tool, err)
		}
	}
	var a env.Action
	if err := json.Unmarshal([]byte(`{"tool":"rm"}`), &a); err == nil {
		t.Error(`{"tool":"rm"} read without an error`)
	}
}
