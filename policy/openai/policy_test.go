package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/frognano/frog/env"
	envsim "github.com/frognano/frog/env/sim"
	"github.com/frognano/frog/policy"
	"github.com/frognano/frog/policy/openai"
	"github.com/frognano/frog/policy/openai/openaitest"
	synthsim "github.com/frognano/frog/synth/sim"
)

// newPolicy is a policy over srv with fast retries.
func newPolicy(t *testing.T, urls []string, mod func(*openai.Config)) *openai.Policy {
	t.Helper()
	cfg := openai.DefaultConfig()
	cfg.BaseURLs, cfg.Model = urls, "test-model"
	cfg.RetryBase, cfg.RetryMax, cfg.RequestTimeout, cfg.MaxTurns = time.Millisecond, 5*time.Millisecond, 5*time.Second, 8
	if mod != nil {
		mod(&cfg)
	}
	p, err := openai.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// playSim plays one episode of a simulated task with p, for the tests whose
// point is the model's side.
func playSim(t *testing.T, p *openai.Policy, maxSteps int) (env.Trajectory, error) {
	t.Helper()
	prov, err := envsim.New(envsim.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := synthsim.New(1, 0.5).Tasks(context.Background(), 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sb, err := prov.Open(ctx, env.OpenOptions{Run: "t", Task: &tasks[0]})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close(ctx)
	return env.Run(ctx, sb, p.Agent(), &tasks[0], env.RunOptions{MaxSteps: maxSteps})
}

// script answers the i-th request (0-based) with replies[i], then submits.
func script(replies ...openaitest.Reply) func(openaitest.Request) openaitest.Reply {
	return func(r openaitest.Request) openaitest.Reply {
		if i := int(r.N - 1); i < len(replies) {
			return replies[i]
		}
		return openaitest.Reply{ToolCalls: []openaitest.ToolCall{openaitest.Call("submit", "{}")}}
	}
}

func TestMalformedToolCallsAreTheAgentsMistakes(t *testing.T) {
	var seen []openaitest.Request
	var mu atomic.Int64
	rs := script(
		openaitest.Reply{ToolCalls: []openaitest.ToolCall{openaitest.Call("frobnicate", `{}`)}},
		openaitest.Reply{ToolCalls: []openaitest.ToolCall{openaitest.Call("view", `{"path": "a.go",`)}},
		openaitest.Reply{ToolCalls: []openaitest.ToolCall{openaitest.Call("view", `{"file": "a.go"}`)}},
		openaitest.Reply{ToolCalls: []openaitest.ToolCall{openaitest.Call("view", `{"start_line": 3}`)}},
		openaitest.Reply{Content: "I think the bug is in Max."},
	)
	srv := openaitest.New(func(r openaitest.Request) openaitest.Reply {
		mu.Add(1)
		seen = append(seen, r)
		return rs(r)
	})
	defer srv.Close()
	p := newPolicy(t, []string{srv.BaseURL()}, nil)
	traj, err := playSim(t, p, 10)
	if err != nil {
		t.Fatalf("episode ended with %v; the agent's mistakes must not end it", err)
	}
	wantErrs := []string{`unknown tool "frobnicate"`, "not valid JSON", `unknown field "file"`, "path is required", "no tool call"}
	if len(traj.Steps) != len(wantErrs)+1 || !traj.Submitted {
		t.Fatalf("%d steps (submitted %v), want %d mistakes then a submit", len(traj.Steps), traj.Submitted, len(wantErrs))
	}
	for i, want := range wantErrs {
		st := traj.Steps[i]
		if !strings.Contains(st.Action.Mistake(), want) || !strings.Contains(st.Result.Error, want) {
			t.Errorf("step %d: mistake %q, result error %q; want both to say %q", i, st.Action.Mistake(), st.Result.Error, want)
		}
	}
	// The model was shown each error: as the tool result of its call, or,
	// for the answer without a call, as a user message.
	for i, want := range wantErrs {
		last := seen[i+1].Last()
		wantRole := "tool"
		if i == len(wantErrs)-1 {
			wantRole = "user"
		}
		if last.Role != wantRole || !strings.Contains(last.Content, want) {
			t.Errorf("request %d ends with a %s message %q; want a %s message saying %q", i+2, last.Role, last.Content, wantRole, want)
		}
		if wantRole == "tool" && last.ToolCallID != seen[i+1].Messages[len(seen[i+1].Messages)-2].ToolCalls[0].ID {
			t.Errorf("request %d: the tool result answers %q, not the call before it", i+2, last.ToolCallID)
		}
	}
	if st := p.Stats(); st.Mistakes != int64(len(wantErrs)) || st.InfraFaults != 0 {
		t.Errorf("stats %+v: want %d mistakes and no infra faults", st, len(wantErrs))
	}
}

func TestServerErrorsAreRetriedThenInfra(t *testing.T) {
	t.Run("recovers", func(t *testing.T) {
		srv := openaitest.New(script(openaitest.Reply{Status: 500}, openaitest.Reply{Status: 503}, openaitest.Reply{Status: 429}))
		defer srv.Close()
		p := newPolicy(t, []string{srv.BaseURL()}, nil)
		traj, err := playSim(t, p, 4)
		if err != nil {
			t.Fatalf("episode: %v; three failed attempts then an answer must not fail it", err)
		}
		if turn := traj.Steps[0].Action.Turn; turn == nil || turn.Retries != 3 || !traj.Submitted {
			t.Errorf("first step's turn %+v, submitted %v; want 3 retries recorded and a submit", turn, traj.Submitted)
		}
	})
	t.Run("gives up", func(t *testing.T) {
		srv := openaitest.New(func(openaitest.Request) openaitest.Reply { return openaitest.Reply{Status: 502} })
		defer srv.Close()
		p := newPolicy(t, []string{srv.BaseURL()}, func(c *openai.Config) { c.MaxRetries = 2 })
		_, err := playSim(t, p, 4)
		if !errors.Is(err, env.ErrInfra) {
			t.Fatalf("err %v: want an infrastructure fault", err)
		}
		if n := srv.Requests(); n != 3 {
			t.Errorf("server got %d requests, want 3 (1 + 2 retries)", n)
		}
	})
	t.Run("unreachable", func(t *testing.T) {
		srv := openaitest.New(nil)
		url := srv.BaseURL()
		srv.Close()
		p := newPolicy(t, []string{url}, func(c *openai.Config) { c.MaxRetries = 1 })
		if _, err := playSim(t, p, 4); !errors.Is(err, env.ErrInfra) {
			t.Fatalf("err %v: want an infrastructure fault", err)
		}
	})
	t.Run("refused", func(t *testing.T) {
		srv := openaitest.New(func(openaitest.Request) openaitest.Reply { return openaitest.Reply{Status: 404} })
		defer srv.Close()
		p := newPolicy(t, []string{srv.BaseURL()}, nil)
		if _, err := playSim(t, p, 4); !errors.Is(err, env.ErrInfra) || srv.Requests() != 1 {
			t.Fatalf("err %v after %d requests: want an infrastructure fault at once (a 404 is not retried)", err, srv.Requests())
		}
	})
}

func TestStallPastTheTimeoutIsInfra(t *testing.T) {
	srv := openaitest.New(func(openaitest.Request) openaitest.Reply { return openaitest.Reply{Hang: true} })
	defer srv.Close()
	p := newPolicy(t, []string{srv.BaseURL()}, func(c *openai.Config) { c.RequestTimeout, c.MaxRetries = 50*time.Millisecond, 1 })
	_, err := playSim(t, p, 4)
	if !errors.Is(err, env.ErrInfra) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v: want an infrastructure fault from the request timeout", err)
	}
	if n := srv.Requests(); n != 2 {
		t.Errorf("server got %d requests, want 2 (the timeout retried once)", n)
	}
	// The caller's own cancellation is a cancellation, not a fault.
	ctx, cancel := context.WithCancel(context.Background())
	p = newPolicy(t, []string{srv.BaseURL()}, nil)
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	acts := make([]env.Action, 1)
	err = policy.Item(p.Act(ctx, []env.Observation{{MaxSteps: 4}}, acts), 0)
	if !errors.Is(err, context.Canceled) || errors.Is(err, env.ErrInfra) {
		t.Errorf("cancelled Act: %v; want context.Canceled, not an infra fault", err)
	}
}

func TestContextLengthErrorIsTheAgentsMistake(t *testing.T) {
	long := strings.Repeat("x", 3000)
	var reqs []openaitest.Request
	srv := openaitest.New(func(r openaitest.Request) openaitest.Reply {
		reqs = append(reqs, r)
		switch r.N {
		case 1, 2, 3:
			// Three searches whose results fill the budget.
			return openaitest.Reply{ToolCalls: []openaitest.ToolCall{openaitest.Call("search", `{"query": "`+long[:10]+`"}`)}}
		case 4:
			return openaitest.Reply{Status: http.StatusBadRequest, Body: openaitest.ContextLengthError}
		}
		return openaitest.Reply{ToolCalls: []openaitest.ToolCall{openaitest.Call("submit", "{}")}}
	})
	defer srv.Close()
	p := newPolicy(t, []string{srv.BaseURL()}, func(c *openai.Config) { c.ContextBudget = 4000 })
	// The sim sandbox answers a search with little; make the history long
	// by hand: a policy sees only its observations.
	hist := []env.Step{}
	acts := make([]env.Action, 1)
	for step := 0; ; step++ {
		obs := env.Observation{Step: step, MaxSteps: 10, History: hist}
		if err := p.Act(context.Background(), []env.Observation{obs}, acts); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		res := env.StepResult{Output: long}
		if m := acts[0].Mistake(); m != "" {
			res = env.StepResult{Output: "error: " + m, Error: m}
		}
		hist = append(hist, env.Step{Action: acts[0], Result: res})
		if acts[0].Tool == env.ToolSubmit || step > 8 {
			break
		}
	}
	ctxStep := hist[3]
	if ctxStep.Action.Turn == nil || !ctxStep.Action.Turn.ContextExceeded || !strings.Contains(ctxStep.Action.Mistake(), "longer than the model's context") {
		t.Fatalf("step 3: %+v; want the context-length refusal recorded as the agent's mistake", ctxStep.Action)
	}
	if hist[len(hist)-1].Action.Tool != env.ToolSubmit {
		t.Fatalf("the episode did not go on to submit after the refusal")
	}
	// With a budget of 16000 bytes, three 3000-byte results fit; after the
	// refusal the budget halves, and older results are elided.
	if n := strings.Count(string(reqs[3].Raw), "[elided"); n != 0 {
		t.Errorf("request 4 elided %d results; the budget held them", n)
	}
	after := reqs[4]
	if n := strings.Count(string(after.Raw), "[elided"); n == 0 {
		t.Errorf("request 5 (after the refusal) elided nothing")
	}
	if last := after.Last(); last.Role != "user" || !strings.Contains(last.Content, "longer than the model's context") {
		t.Errorf("request 5 ends with %s %q; want the refusal shown to the model", last.Role, last.Content)
	}
	if turn := hist[4].Action.Turn; turn == nil || turn.Elided == 0 {
		t.Errorf("step 4's turn %+v records no elision", turn)
	}
	if st := p.Stats(); st.ContextErrors != 1 || st.InfraFaults != 0 {
		t.Errorf("stats %+v: want one context error and no infra fault", st)
	}
}

func TestBatchErrorsArePerItem(t *testing.T) {
	srv := openaitest.New(func(r openaitest.Request) openaitest.Reply {
		if strings.Contains(r.Messages[1].Content, "fail-me") {
			return openaitest.Reply{Status: 500}
		}
		return openaitest.Reply{ToolCalls: []openaitest.ToolCall{openaitest.Call("run_tests", "{}")}}
	})
	defer srv.Close()
	p := newPolicy(t, []string{srv.BaseURL()}, func(c *openai.Config) { c.MaxRetries = 1 })
	obs := []env.Observation{
		{Episode: 1, MaxSteps: 4, Task: &env.TaskView{ID: "a", ProblemStatement: "fine"}},
		{Episode: 2, MaxSteps: 4, Task: &env.TaskView{ID: "b", ProblemStatement: "fail-me"}},
		{Episode: 3, MaxSteps: 4, Task: &env.TaskView{ID: "c", ProblemStatement: "fine"}},
	}
	acts := make([]env.Action, len(obs))
	err := p.Act(context.Background(), obs, acts)
	var items policy.ItemErrors
	if !errors.As(err, &items) || items[0] != nil || items[2] != nil || !errors.Is(items[1], env.ErrInfra) {
		t.Fatalf("Act = %v; want only the second item failed, as infra", err)
	}
	if acts[0].Tool != env.ToolRunTests || acts[2].Tool != env.ToolRunTests {
		t.Errorf("healthy items got %v and %v, want run_tests", acts[0].Tool, acts[2].Tool)
	}
}

func TestLeastOutstandingUnderMaxInflight(t *testing.T) {
	reply := func(openaitest.Request) openaitest.Reply {
		return openaitest.Reply{ToolCalls: []openaitest.ToolCall{openaitest.Call("run_tests", "{}")}}
	}
	a, b := openaitest.New(reply), openaitest.New(reply)
	defer a.Close()
	defer b.Close()
	a.Latency, b.Latency = 20*time.Millisecond, 20*time.Millisecond
	p := newPolicy(t, []string{a.BaseURL(), b.BaseURL()}, func(c *openai.Config) { c.MaxInflight = 2 })
	obs := make([]env.Observation, 12)
	for i := range obs {
		obs[i] = env.Observation{Episode: uint64(i), MaxSteps: 4}
	}
	if err := p.Act(context.Background(), obs, make([]env.Action, len(obs))); err != nil {
		t.Fatal(err)
	}
	if a.PeakInflight() > 2 || b.PeakInflight() > 2 {
		t.Errorf("peak in flight %d and %d; want at most --max-inflight 2 per server", a.PeakInflight(), b.PeakInflight())
	}
	if a.Requests() != 6 || b.Requests() != 6 {
		t.Errorf("requests %d and %d; want 6 each from least-outstanding balancing", a.Requests(), b.Requests())
	}
}

func TestCheckBeforeAnyEpisode(t *testing.T) {
	srv := openaitest.New(nil)
	defer srv.Close()
	srv.APIKey = "sekrit"
	t.Setenv("FROG_TEST_KEY", "")
	p := newPolicy(t, []string{srv.BaseURL()}, func(c *openai.Config) { c.APIKeyEnv = "FROG_TEST_KEY" })
	if err := p.Check(context.Background()); err == nil || !strings.Contains(err.Error(), "$FROG_TEST_KEY is not set") {
		t.Errorf("missing key: %v", err)
	}
	t.Setenv("FROG_TEST_KEY", "sekrit")
	p = newPolicy(t, []string{srv.BaseURL()}, func(c *openai.Config) { c.APIKeyEnv, c.Model = "FROG_TEST_KEY", "nosuch" })
	if err := p.Check(context.Background()); err == nil || !strings.Contains(err.Error(), `unknown model "nosuch"`) {
		t.Errorf("unknown model: %v", err)
	}
	p = newPolicy(t, []string{srv.BaseURL()}, func(c *openai.Config) { c.APIKeyEnv = "FROG_TEST_KEY" })
	if err := p.Check(context.Background()); err != nil {
		t.Errorf("good server: %v", err)
	}
	// A server that lists no models is asked for one token instead.
	var asked atomic.Int64
	quiet := openaitest.New(func(r openaitest.Request) openaitest.Reply {
		asked.Add(1)
		if r.Model != "test-model" {
			return openaitest.Reply{Status: 404, Body: `{"error": {"message": "model not found", "type": "not_found", "code": "model_not_found"}}`}
		}
		return openaitest.Reply{Content: "p"}
	})
	defer quiet.Close()
	quiet.NoModels = true
	if err := newPolicy(t, []string{quiet.BaseURL()}, nil).Check(context.Background()); err != nil || asked.Load() != 1 {
		t.Errorf("a server without a model list: %v after %d completions; want ok after one", err, asked.Load())
	}
	err := newPolicy(t, []string{quiet.BaseURL()}, func(c *openai.Config) { c.Model = "nosuch" }).Check(context.Background())
	if err == nil || !strings.Contains(err.Error(), `model "nosuch"`) {
		t.Errorf("an unknown model on a server without a model list: %v", err)
	}
	gone := openaitest.New(nil)
	url := gone.BaseURL()
	gone.Close()
	p = newPolicy(t, []string{url}, nil)
	if err := p.Check(context.Background()); err == nil || !strings.Contains(err.Error(), "unreachable") {
		t.Errorf("unreachable: %v", err)
	}
}

// The context budget bounds the whole request, however long the task's
// statement and the model's answers: a 50 MB statement and answers of
// 10 MB are cut in the middle, with a note, and counted. (Requests once
// reached 31 MB, every 10 MB answer sent again each turn, and 52 MB.)
func TestContextBudgetBoundsTheRequest(t *testing.T) {
	const budget = 32768 // tokens: the default, 128 KiB of request
	// Text that JSON escapes: quotes, newlines, tabs, angle brackets.
	line := "panic: \"index out of range\" <at> calc.go:12\n\tgoroutine 1 [running]:\n"
	statement := strings.Repeat(line, 50<<20/len(line))
	answer := strings.Repeat("I think \"the bug\" is <here>.\n", 10<<20/30)
	var sizes []int
	var lastRaw []byte
	srv := openaitest.New(func(r openaitest.Request) openaitest.Reply {
		sizes = append(sizes, len(r.Raw))
		lastRaw = r.Raw
		if r.N >= 3 {
			return openaitest.Reply{ToolCalls: []openaitest.ToolCall{openaitest.Call("submit", "{}")}}
		}
		edit, _ := json.Marshal(map[string]string{"path": "calc/calc.go", "new": answer[:5<<20]})
		return openaitest.Reply{Content: answer, ToolCalls: []openaitest.ToolCall{openaitest.Call("edit", string(edit))}}
	})
	defer srv.Close()
	p := newPolicy(t, []string{srv.BaseURL()}, func(c *openai.Config) {
		// Answers of 10 MB take seconds to encode and read under the race
		// detector on a busy machine; a timed-out answer is a mistake step
		// whose request carries none of them, which is not what this tests.
		c.ContextBudget, c.RequestTimeout = budget, 5*time.Minute
	})
	task := env.TaskView{ID: "t", Repo: "example.com/m", Dir: "calc", ProblemStatement: statement, FailToPass: []string{"TestA"}}
	var hist []env.Step
	acts := make([]env.Action, 1)
	for step := 0; step < 8; step++ {
		obs := env.Observation{Task: &task, Step: step, MaxSteps: 10, History: hist}
		if err := p.Act(context.Background(), []env.Observation{obs}, acts); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		hist = append(hist, env.Step{Action: acts[0], Result: env.StepResult{Output: "ok"}})
		if acts[0].Tool == env.ToolSubmit {
			break
		}
	}
	if len(sizes) != 3 {
		t.Fatalf("%d requests, want 3", len(sizes))
	}
	t.Logf("requests of %v bytes; the budget is %d", sizes, 4*budget)
	for i, n := range sizes {
		if n > 4*budget {
			t.Errorf("request %d: %d bytes; want at most %d (the budget of %d tokens at 4 bytes)", i+1, n, 4*budget, budget)
		}
	}
	if !strings.Contains(string(lastRaw), "bytes cut]") {
		t.Error("the last request has no note of what was cut")
	}
	for i, st := range hist[:len(hist)-1] {
		if st.Action.Turn != nil && !st.Action.Turn.Continues && st.Action.Turn.Elided == 0 {
			t.Errorf("step %d's turn records no cut", i)
		}
	}
	if st := p.Stats(); st.Elided == 0 || st.ElidedBytes < 50<<20 {
		t.Errorf("stats count %d messages and %d bytes cut; want the statement's 50 MB and more", st.Elided, st.ElidedBytes)
	}
	// The export records the task's message as the requests sent it; the
	// answers, the model's own actions, whole.
	msgs, err := p.Messages(task, &env.Trajectory{Steps: hist})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(msgs[1].Content); n > budget {
		t.Errorf("the export's task message is %d bytes; want it cut as the requests sent it (at most %d)", n, budget)
	}
	if msgs[2].Content != answer {
		t.Error("the export cut an answer of the model")
	}
}
