package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/env/process"
	"github.com/frognano/frog/gotask"
	"github.com/frognano/frog/policy/openai"
	"github.com/frognano/frog/policy/openai/openaitest"
	"github.com/frognano/frog/synth"
	"github.com/frognano/frog/synth/source"
	"github.com/frognano/frog/synth/validate"
)

const tiny = "../../synth/validate/testdata/tiny"

// realTask is a task synthesized from the tiny test module, its
// workspaces, a process provider and a harness, made once per test binary.
type realTask struct {
	task  env.Task
	fixed map[string][]byte
	prov  env.Provider
	h     env.Harness
}

var real struct {
	sync.Mutex
	rt *realTask
}

func newRealTask(t *testing.T) *realTask {
	t.Helper()
	if testing.Short() {
		t.Skip("synthesizes a task and runs go test")
	}
	real.Lock()
	defer real.Unlock()
	if real.rt != nil {
		return real.rt
	}
	dir := scratch
	mod, err := source.Local(tiny)
	if err != nil {
		t.Fatal(err)
	}
	pcfg := process.DefaultConfig()
	pcfg.Dir = dir
	ws, err := gotask.NewWorkspaces(dir+"/ws", zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	ws.AddLocal(mod)
	pcfg.Workspaces = ws
	prov, err := process.New(pcfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	vcfg := validate.Config{MinTimeout: 5 * time.Second}
	s, err := source.New([]source.Module{mod}, source.Config{Provider: prov, Seed: 1, Workers: 1, Combos: -1, Validate: vcfg}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	var recs []synth.TaskRecord
	errStop := errors.New("enough")
	err = s.Generate(context.Background(), 1, func(r synth.TaskRecord) error { recs = append(recs, r); return errStop })
	if len(recs) == 0 {
		t.Fatalf("synthesize a task from %s: %v", tiny, err)
	}
	task := recs[0].Task
	fixed, err := ws.Fixed(context.Background(), &task)
	if err != nil {
		t.Fatal(err)
	}
	real.rt = &realTask{task: task, fixed: fixed, prov: prov, h: gotask.NewHarness(ws, gotask.HarnessConfig{})}
	return real.rt
}

func (rt *realTask) play(t *testing.T, p *openai.Policy) (env.Trajectory, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sb, err := rt.prov.Open(ctx, env.OpenOptions{Run: "openai-test", Task: &rt.task})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close(context.WithoutCancel(ctx))
	return env.Run(ctx, sb, p.Agent(), &rt.task, env.RunOptions{MaxSteps: p.Config().MaxTurns, Harness: rt.h})
}

func args(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestSolvesARealTask: a scripted model runs the tests and views the file
// in one answer (two calls), writes the fix with edit, runs the tests again
// and submits; the real build of the edited tree gives reward 1.
func TestSolvesARealTask(t *testing.T) {
	rt := newRealTask(t)
	file := slices.Sorted(maps.Keys(rt.fixed))[0]
	var mu sync.Mutex
	var seen []openaitest.Request
	srv := openaitest.New(func(r openaitest.Request) openaitest.Reply {
		mu.Lock()
		seen = append(seen, r)
		mu.Unlock()
		answers := 0
		for _, m := range r.Messages {
			if m.Role == "assistant" {
				answers++
			}
		}
		calls := map[int][]openaitest.ToolCall{
			0: {openaitest.Call("run_tests", "{}"), openaitest.Call("view", args(map[string]any{"path": file, "start_line": 1}))},
			1: {openaitest.Call("edit", args(map[string]string{"path": file, "new": string(rt.fixed[file])}))},
			2: {openaitest.Call("run_tests", "{}")},
			3: {openaitest.Call("submit", "{}")},
		}[answers]
		return openaitest.Reply{Content: "step", ToolCalls: calls, LogProbs: true}
	})
	defer srv.Close()
	p := newPolicy(t, []string{srv.BaseURL()}, func(c *openai.Config) { c.LogProbs = true })
	traj, err := rt.play(t, p)
	if err != nil {
		t.Fatalf("episode: %v", err)
	}
	var tools []string
	for _, s := range traj.Steps {
		tools = append(tools, s.Action.Tool.String())
	}
	if got, want := strings.Join(tools, " "), "run_tests view edit run_tests submit"; got != want {
		t.Fatalf("steps %q, want %q", got, want)
	}
	if traj.Reward != 1 {
		t.Fatalf("reward %v, want 1: the fix was written through edit", traj.Reward)
	}
	if tr := traj.Steps[0].Result.Tests(); tr == nil || tr.Failed == 0 {
		t.Errorf("the first run_tests found no failing test: %+v", tr)
	}
	if tr := traj.Steps[3].Result.Tests(); tr == nil || tr.Failed != 0 || !tr.Built {
		t.Errorf("the run_tests after the fix: %+v; want all passing", tr)
	}
	if !traj.Steps[1].Action.Turn.Continues || traj.Steps[0].Action.Turn.Continues {
		t.Errorf("the view call came in the same answer as run_tests: want step 1 to continue step 0's answer")
	}
	if n := len(seen); n != 4 {
		t.Errorf("%d model calls, want 4 (two calls in the first answer)", n)
	}
	// The second request carries both results, answering their calls, the
	// test failure and the file's text.
	msgs := seen[1].Messages
	if len(msgs) != 5 || msgs[3].Role != "tool" || msgs[4].Role != "tool" ||
		msgs[3].ToolCallID != msgs[2].ToolCalls[0].ID || msgs[4].ToolCallID != msgs[2].ToolCalls[1].ID {
		t.Fatalf("second request's messages do not answer the first answer's two calls: %+v", msgs)
	}
	if !strings.Contains(msgs[3].Content, "failed") || !strings.Contains(msgs[4].Content, "package") {
		t.Errorf("tool results: %q and %q; want the test report and the file", msgs[3].Content, msgs[4].Content)
	}
	turn := traj.Steps[0].Action.Turn
	if turn.PromptTokens == 0 || len(turn.LogProbs) == 0 || turn.RequestHash == "" || turn.Latency <= 0 || turn.Server == "" {
		t.Errorf("first turn's record is incomplete: %+v", turn)
	}
}

// TestFailsARealTask: a model that submits at once gets reward 0, and the
// episode is a completed one, not a fault.
func TestFailsARealTask(t *testing.T) {
	rt := newRealTask(t)
	srv := openaitest.New(script())
	defer srv.Close()
	traj, err := rt.play(t, newPolicy(t, []string{srv.BaseURL()}, nil))
	if err != nil || traj.Reward != 0 || !traj.Submitted {
		t.Fatalf("reward %v, submitted %v, err %v; want a completed episode with reward 0", traj.Reward, traj.Submitted, err)
	}
}
