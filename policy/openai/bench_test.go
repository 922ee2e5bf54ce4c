package openai_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/policy/openai"
	"github.com/frognano/frog/policy/openai/openaitest"
)

// BenchmarkAct is one model call through the policy (request built from a
// ten-step history, the SDK, HTTP to a fake server answering at once,
// decoding, the tool call parsed), 64 callers at a time. It reports frog's
// own overhead per call (the time not spent in the HTTP round trip).
func BenchmarkAct(b *testing.B) {
	srv := openaitest.New(func(openaitest.Request) openaitest.Reply {
		return openaitest.Reply{Content: "ok", ToolCalls: []openaitest.ToolCall{openaitest.Call("view", `{"path": "a.go", "start_line": 1, "end_line": 40}`)}}
	})
	defer srv.Close()
	cfg := openai.DefaultConfig()
	cfg.BaseURLs, cfg.Model = []string{srv.BaseURL()}, "test-model"
	p, err := openai.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	// A history of ten steps, each a model answer and a 2 KB result.
	var hist []env.Step
	for i := range 10 {
		call := env.ToolCall{ID: "call_" + string(rune('a'+i)), Name: "view", Arguments: `{"path": "a.go"}`}
		hist = append(hist, env.Step{
			Action: env.Action{Tool: env.ToolView, Path: "a.go", Turn: &env.Turn{Call: 0, Content: "looking", ToolCalls: []env.ToolCall{call}}},
			Result: env.StepResult{Output: strings.Repeat("x", 2048)},
		})
	}
	obs := env.Observation{Step: len(hist), MaxSteps: 30, History: hist, Task: &env.TaskView{ID: "t", ProblemStatement: "TestX fails"}}
	var traj env.Trajectory
	var mu = make(chan struct{}, 1)
	mu <- struct{}{}
	b.SetParallelism(32) // 64 callers on 2 cores
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		acts := make([]env.Action, 1)
		for pb.Next() {
			if err := p.Act(context.Background(), []env.Observation{obs}, acts); err != nil {
				b.Error(err)
				return
			}
			<-mu
			traj.Steps = append(traj.Steps, env.Step{Action: acts[0]})
			mu <- struct{}{}
		}
	})
	b.StopTimer()
	var tm openai.Timings
	tm.Add(&traj)
	st := tm.Summary()
	b.ReportMetric(st.OverheadP50MS*float64(time.Millisecond), "overhead-p50-ns")
	b.ReportMetric(st.OverheadP99MS*float64(time.Millisecond), "overhead-p99-ns")
}
