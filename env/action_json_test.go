package env_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/frognano/frog/env"
	"github.com/google/go-cmp/cmp"
)

// wireActions are representative actions of every tool, with every field
// of Action set somewhere.
func wireActions() []env.Action {
	return []env.Action{
		{Tool: env.ToolView, Path: "a/b.go", Version: 3, LogProb: -0.25},
		{Tool: env.ToolView, Path: "a/b.go", Args: &env.ActionArgs{StartLine: 10, EndLine: 20}},
		{Tool: env.ToolSearch, Args: &env.ActionArgs{Query: "func Foo"}, Version: 1},
		{Tool: env.ToolEdit, Path: "x.go", Old: "a < b", New: "a <= b", LogProb: -1.5},
		{Tool: env.ToolEdit, Path: "new.go", New: "package x\n"},
		{Tool: env.ToolRunTests, Args: &env.ActionArgs{Tests: []string{"TestA", "TestB"}}},
		{Tool: env.ToolRunTests},
		{Tool: env.ToolSubmit, Version: 7, LogProb: -0.01},
		{Tool: env.ToolRevert},
		{Tool: env.ToolCoverage, Args: &env.ActionArgs{Tests: []string{"TestA"}}},
		{Tool: env.ToolCandidates, Args: &env.ActionArgs{Lines: []env.Line{{File: "x.go", Line: 4}, {File: "y.go", Line: 9}}}},
		{Tool: env.ToolTry, Args: &env.ActionArgs{Candidates: []int{0, 2, 5}}, Version: 2, LogProb: -2.75,
			Decision: &env.Decision{Kind: "try", Features: []float32{1, 0.5, 0, 1}, Dim: 2, Chosen: 1, Temperature: 0.7}},
		{Tool: env.ToolTry, Args: &env.ActionArgs{Candidates: []int{0}}, Decision: &env.Decision{Features: []float32{}, Dim: 0}},
		{Tool: env.ToolApply, Args: &env.ActionArgs{Candidates: []int{3}}},
		{Tool: env.ToolSubmit, Args: &env.ActionArgs{Mistake: "malformed tool call: unexpected end of JSON input"},
			Turn: &env.Turn{Call: -1, Content: "I think", FinishReason: "stop", PromptTokens: 10, TrainerVersion: -1}},
		{Tool: env.ToolEdit, Path: "x.go", Old: "o", New: "n",
			Turn: &env.Turn{Continues: true, Call: 1, ToolCalls: []env.ToolCall{{ID: "c1", Name: "edit", Arguments: "{}"}},
				LogProbs: []env.TokenLogProb{{Token: "a", LogProb: -0.5}}, Latency: time.Millisecond, TrainerVersion: 4}},
		{Tool: env.ToolView, Path: "p", Old: "o", New: "n", Version: 9, LogProb: -3,
			Args: &env.ActionArgs{StartLine: 1, EndLine: 2, Query: "q", Tests: []string{"T"},
				Lines: []env.Line{{File: "f", Line: 1}}, Candidates: []int{1}, Mistake: "m"},
			Decision: &env.Decision{Kind: "k", Features: []float32{1}, Dim: 1}, Turn: &env.Turn{Call: 0}},
	}
}

// wireResults are representative results of every tool, with every field
// of StepResult set somewhere.
func wireResults() []env.StepResult {
	return []env.StepResult{
		{Output: "package x\n", Duration: 1500 * time.Microsecond},
		{Output: "x.go:3:func Foo", Detail: &env.StepDetail{Stderr: "grep: warning"}},
		{Output: "no match", ExitCode: 1},
		{Output: "error: old text not found in x.go", Error: "old text not found in x.go", ExitCode: 1},
		{ExitCode: 1, Executions: 1, Detail: &env.StepDetail{Stdout: "--- FAIL: TestA\nFAIL\n", Stderr: "exit status 1", TimedOut: true}},
		{Output: "1 passed, 1 failed: TestB", Executions: 1, Detail: &env.StepDetail{Tests: &env.TestReport{Built: true, Passed: 1, Failed: 1,
			Tests: []env.TestResult{{Name: "TestA", Status: env.TestPass, Seconds: 0.01},
				{Name: "TestB", Status: env.TestPanic, Message: "boom", File: "x_test.go", Line: 7,
					Frames: []env.Frame{{Func: "x.F", File: "x.go", Line: 3}}, Seconds: 0.02}}}}},
		{Output: "the tests do not build:\nx.go:1: oops", Cached: true, Detail: &env.StepDetail{Tests: &env.TestReport{BuildOutput: "x.go:1: oops", TimedOut: true}}},
		{Output: "coverage of 1 tests over 1 blocks", Executions: 2, Detail: &env.StepDetail{Coverage: &env.CoverageReport{
			Blocks: []env.Block{{File: "x.go", Start: 1, End: 3}}, Tests: map[string][]int{"TestA": {0}},
			Passed: map[string]bool{"TestA": true}}}},
		{Output: "2 candidates at 1 lines", Detail: &env.StepDetail{Candidates: []env.Candidate{
			{ID: 0, File: "x.go", Line: 4, Op: "flip-relational", Kind: "token", Context: "if", Func: "F", Desc: "< to <=",
				Edits: []env.Edit{{Offset: 10, Old: "<", New: "<="}}, Affinity: 0.5, Local: true, Natural: 1.25, Surprise: 3.5},
			{ID: 1, File: "x.go", Line: 4, Op: "o", Kind: "k", Desc: "d", Edits: []env.Edit{}}}}},
		{Output: "candidate 0: every test passes\n", Executions: 1, Cached: true, Detail: &env.StepDetail{Tries: []env.TryResult{
			{Candidate: 0, Built: true, AllPass: true, Schema: true, Cached: true},
			{Candidate: 2, Built: true, Failing: []string{"TestB"}, Fixed: []string{"TestA"}, Broken: []string{"TestC"}},
			{Candidate: 5}}}},
		{Output: "applied candidate 3 to x.go: d"},
		{Output: "reverted 2 files", Duration: time.Second},
		{},
	}
}

// The flat encodings of wireActions and wireResults, as frog wrote them
// when every field of Action and StepResult was a field of its own
// (7884c15): trajectories on disk have this form, and it must not change.
var (
	goldenActions = []string{
		`{"tool":"view","path":"a/b.go","version":3,"logprob":-0.25}`,
		`{"tool":"view","path":"a/b.go","start_line":10,"end_line":20,"version":0,"logprob":0}`,
		`{"tool":"search","query":"func Foo","version":1,"logprob":0}`,
		`{"tool":"edit","path":"x.go","old":"a \u003c b","new":"a \u003c= b","version":0,"logprob":-1.5}`,
		`{"tool":"edit","path":"new.go","new":"package x\n","version":0,"logprob":0}`,
		`{"tool":"run_tests","tests":["TestA","TestB"],"version":0,"logprob":0}`,
		`{"tool":"run_tests","version":0,"logprob":0}`,
		`{"tool":"submit","version":7,"logprob":-0.01}`,
		`{"tool":"revert","version":0,"logprob":0}`,
		`{"tool":"coverage","tests":["TestA"],"version":0,"logprob":0}`,
		`{"tool":"candidates","lines":[{"file":"x.go","line":4},{"file":"y.go","line":9}],"version":0,"logprob":0}`,
		`{"tool":"try","candidates":[0,2,5],"version":2,"logprob":-2.75,"decision":{"kind":"try","features":[1,0.5,0,1],"dim":2,"chosen":1,"temperature":0.7}}`,
		`{"tool":"try","candidates":[0],"version":0,"logprob":0,"decision":{"features":[],"dim":0,"chosen":0}}`,
		`{"tool":"apply","candidates":[3],"version":0,"logprob":0}`,
		`{"tool":"submit","version":0,"logprob":0,"mistake":"malformed tool call: unexpected end of JSON input","turn":{"call":-1,"content":"I think","finish_reason":"stop","prompt_tokens":10,"trainer_version":-1}}`,
		`{"tool":"edit","path":"x.go","old":"o","new":"n","version":0,"logprob":0,"turn":{"continues":true,"call":1,"tool_calls":[{"id":"c1","name":"edit","arguments":"{}"}],"logprobs":[{"token":"a","logprob":-0.5}],"latency_ns":1000000,"trainer_version":4}}`,
		`{"tool":"view","path":"p","start_line":1,"end_line":2,"query":"q","old":"o","new":"n","tests":["T"],"lines":[{"file":"f","line":1}],"candidates":[1],"version":9,"logprob":-3,"decision":{"kind":"k","features":[1],"dim":1,"chosen":0},"mistake":"m","turn":{"call":0,"trainer_version":0}}`,
	}
	goldenResults = []string{
		`{"output":"package x\n","duration_ns":1500000}`,
		`{"output":"x.go:3:func Foo","stderr":"grep: warning"}`,
		`{"output":"no match","exit_code":1}`,
		`{"output":"error: old text not found in x.go","error":"old text not found in x.go","exit_code":1}`,
		`{"exit_code":1,"timed_out":true,"stdout":"--- FAIL: TestA\nFAIL\n","stderr":"exit status 1","executions":1}`,
		`{"output":"1 passed, 1 failed: TestB","tests":{"built":true,"tests":[{"name":"TestA","status":"pass","seconds":0.01},{"name":"TestB","status":"panic","message":"boom","file":"x_test.go","line":7,"frames":[{"func":"x.F","file":"x.go","line":3}],"seconds":0.02}],"passed":1,"failed":1},"executions":1}`,
		`{"output":"the tests do not build:\nx.go:1: oops","tests":{"built":false,"build_output":"x.go:1: oops","tests":null,"passed":0,"failed":0,"timed_out":true},"cached":true}`,
		`{"output":"coverage of 1 tests over 1 blocks","coverage":{"blocks":[{"file":"x.go","start":1,"end":3}],"tests":{"TestA":[0]},"passed":{"TestA":true}},"executions":2}`,
		`{"output":"2 candidates at 1 lines","candidates":[{"id":0,"file":"x.go","line":4,"op":"flip-relational","kind":"token","context":"if","func":"F","desc":"\u003c to \u003c=","edits":[{"offset":10,"old":"\u003c","new":"\u003c="}],"affinity":0.5,"local":true,"natural":1.25,"surprise":3.5},{"id":1,"file":"x.go","line":4,"op":"o","kind":"k","desc":"d","edits":[]}]}`,
		`{"output":"candidate 0: every test passes\n","tries":[{"candidate":0,"built":true,"all_pass":true,"schema":true,"cached":true},{"candidate":2,"built":true,"failing":["TestB"],"fixed":["TestA"],"broken":["TestC"],"all_pass":false},{"candidate":5,"built":false,"all_pass":false}],"executions":1,"cached":true}`,
		`{"output":"applied candidate 3 to x.go: d"}`,
		`{"output":"reverted 2 files","duration_ns":1000000000}`,
		`{}`,
	}
)

func TestActionJSON(t *testing.T) {
	acts := wireActions()
	if len(acts) != len(goldenActions) {
		t.Fatalf("%d actions, %d golden encodings", len(acts), len(goldenActions))
	}
	for i, a := range acts {
		checkWire(t, a, goldenActions[i])
	}
}

func TestStepResultJSON(t *testing.T) {
	results := wireResults()
	if len(results) != len(goldenResults) {
		t.Fatalf("%d results, %d golden encodings", len(results), len(goldenResults))
	}
	for i, r := range results {
		checkWire(t, r, goldenResults[i])
	}
}

// checkWire checks that v encodes to want, that want decodes to v, and
// that v encodes the same behind a pointer.
func checkWire[T any](t *testing.T, v T, want string) {
	t.Helper()
	got, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("encoding:\n got %s\nwant %s", got, want)
	}
	if got, _ := json.Marshal(&v); string(got) != want {
		t.Errorf("encoding behind a pointer:\n got %s\nwant %s", got, want)
	}
	var back T
	if err := json.Unmarshal([]byte(want), &back); err != nil {
		t.Fatalf("decode %s: %v", want, err)
	}
	if diff := cmp.Diff(back, v); diff != "" {
		t.Errorf("decode %s (-got +want):\n%s", want, diff)
	}
}

// TestTrajectoryJSON checks the encoding of whole trajectories and
// observations, where actions and results sit inside other values.
func TestTrajectoryJSON(t *testing.T) {
	acts, results := wireActions(), wireResults()
	var tr env.Trajectory
	var want strings.Builder
	want.WriteString(`{"task":"t","episode":4,"attempt":1,"steps":[`)
	for i := range acts {
		r := i % len(results)
		tr.Steps = append(tr.Steps, env.Step{Action: acts[i], Result: results[r]})
		if i > 0 {
			want.WriteByte(',')
		}
		want.WriteString(`{"action":` + goldenActions[i] + `,"result":` + goldenResults[r] + `}`)
	}
	tr.Task, tr.Episode, tr.Attempt, tr.Reward, tr.Executions = "t", 4, 1, 1, 3
	want.WriteString(`],"reward":1,"submitted":false,"executions":3,"tries":0}`)
	checkWire(t, tr, want.String())

	last := results[5]
	obs := env.Observation{Episode: 2, Step: 1, MaxSteps: 8, Last: &last}
	checkWire(t, obs, `{"episode":2,"attempt":0,"step":1,"max_steps":8,"task":null,"last":`+goldenResults[5]+`}`)

	// Indented encoding (run.WriteJSONAtomic's) indents the same fields.
	got, err := json.MarshalIndent(env.Step{Action: acts[0], Result: results[0]}, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	const indented = `{
 "action": {
  "tool": "view",
  "path": "a/b.go",
  "version": 3,
  "logprob": -0.25
 },
 "result": {
  "output": "package x\n",
  "duration_ns": 1500000
 }
}`
	if string(got) != indented {
		t.Errorf("indented:\n%s\nwant\n%s", got, indented)
	}
}

// TestWireNull checks that null leaves an action or a result as it was,
// as it does any other struct.
func TestWireNull(t *testing.T) {
	a := env.Action{Tool: env.ToolEdit, Path: "x"}
	r := env.StepResult{Output: "o"}
	if err := json.Unmarshal([]byte("null"), &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte("null"), &r); err != nil {
		t.Fatal(err)
	}
	if a.Tool != env.ToolEdit || a.Path != "x" || r.Output != "o" {
		t.Errorf("null changed the values: %+v %+v", a, r)
	}
}

// stepBudget is the most bytes env.Step may take: a trajectory starts with
// room for 3 steps (the shortest repair), and 3 steps must fit the
// runtime's 512-byte size class, or every episode allocates and zeroes
// the next class (576 bytes at 3x192, 1,152 at the 376 bytes Step took
// with every tool's fields inline).
const stepBudget = 512 / 3

// TestStepSize fails when env.Step outgrows its budget. Each step of each
// episode is copied (action out of the policy, step into the trajectory)
// and scanned by the GC, so fields most steps leave empty belong behind
// Action.Args or StepResult.Detail, not inline.
func TestStepSize(t *testing.T) {
	a, r, s := unsafe.Sizeof(env.Action{}), unsafe.Sizeof(env.StepResult{}), unsafe.Sizeof(env.Step{})
	t.Logf("Action %d bytes, StepResult %d, Step %d (budget %d)", a, r, s, stepBudget)
	if s > stepBudget {
		t.Errorf("env.Step is %d bytes (Action %d, StepResult %d), over its budget of %d: three steps no longer fit "+
			"a 512-byte allocation; put the new field behind Action.Args or StepResult.Detail", s, a, r, stepBudget)
	}
}
