package env

import (
	"encoding/json"
	"fmt"
	"time"
)

// Tool is one verb of the agent's action vocabulary. The LLM policy maps its
// tool calls onto these; the built-in policies choose among them directly.
type Tool uint8

const (
	// ToolView reads a file, or a range of its lines.
	ToolView Tool = iota + 1
	// ToolSearch runs a search (grep) over the workspace.
	ToolSearch
	// ToolEdit replaces text in a file (or the whole file).
	ToolEdit
	// ToolRunTests runs the task's tests (or the named ones) and reports
	// each test's verdict.
	ToolRunTests
	// ToolSubmit ends the episode; the tests then decide the reward.
	ToolSubmit
	// ToolRevert puts every file back as it was when the episode started.
	ToolRevert
	// ToolCoverage measures which lines each named test runs.
	ToolCoverage
	// ToolCandidates lists repair candidates: template edits of the code as
	// it is now, at the lines asked for.
	ToolCandidates
	// ToolTry runs the tests with candidates of the last list applied, one
	// at a time, without changing the workspace.
	ToolTry
	// ToolApply applies one candidate of the last list to the workspace.
	ToolApply
)

var toolNames = [...]string{
	ToolView: "view", ToolSearch: "search", ToolEdit: "edit", ToolRunTests: "run_tests", ToolSubmit: "submit",
	ToolRevert: "revert", ToolCoverage: "coverage", ToolCandidates: "candidates", ToolTry: "try", ToolApply: "apply",
}

func (t Tool) String() string {
	if int(t) < len(toolNames) && toolNames[t] != "" {
		return toolNames[t]
	}
	return fmt.Sprintf("tool(%d)", uint8(t))
}

// MarshalJSON writes a tool by its name, so that trajectories read as
// they were played.
func (t Tool) MarshalJSON() ([]byte, error) { return json.Marshal(t.String()) }

// UnmarshalJSON reads a tool's name (or its number, as trajectories
// written before names were).
func (t *Tool) UnmarshalJSON(b []byte) error {
	var n uint8
	if json.Unmarshal(b, &n) == nil {
		*t = Tool(n)
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("tool: want a name or a number, got %s", b)
	}
	v, err := ParseTool(s)
	if err != nil {
		return err
	}
	*t = v
	return nil
}

// Tools lists every tool, in order.
func Tools() []Tool {
	var out []Tool
	for t, name := range toolNames {
		if name != "" {
			out = append(out, Tool(t))
		}
	}
	return out
}

// ParseTool is the inverse of Tool.String.
func ParseTool(s string) (Tool, error) {
	for t, name := range toolNames {
		if name != "" && name == s {
			return Tool(t), nil
		}
	}
	return 0, fmt.Errorf("unknown tool %q (want view, search, edit, run_tests, submit, revert, coverage, candidates, try or apply)", s)
}

// Action is one decision of the agent. Only the fields of its tool count.
//
// Action holds inline what most actions carry (a tool, a path, an edit's
// texts, the policy's version and log-probability); the arguments only some
// tools take sit behind Args, nil when the action has none. Read them
// through the methods (Query, Tests, Lines, CandidateIDs, …), which answer
// for a nil Args. A trajectory copies and keeps every step, so the layout
// counts: TestStepSize holds env.Step to its budget. In JSON an action is
// flat, every field at the top level (MarshalJSON).
type Action struct {
	Tool Tool
	// Path is the file for view and edit.
	Path string
	// Old and New describe an edit: the one occurrence of Old in the file is
	// replaced by New; with Old empty the whole file becomes New.
	Old string
	New string
	// Version is the policy version that produced the action; LogProb its
	// log-probability under that policy (the behaviour policy for GRPO).
	Version int64
	LogProb float64
	// Decision, when set, is what a learner needs to recompute LogProb: the
	// choice the policy made and what it chose from.
	Decision *Decision
	// Turn, when set, is the language-model call behind the action.
	Turn *Turn
	// Args holds the arguments of view's line range, search, run_tests,
	// coverage, candidates, try and apply, and the policy's mistake; nil
	// when the action has none of them.
	Args *ActionArgs
}

// ActionArgs are the arguments of an action that most actions leave empty.
type ActionArgs struct {
	// StartLine and EndLine bound view to lines [StartLine, EndLine]
	// (1-based, inclusive); 0 means the first or last line.
	StartLine int
	EndLine   int
	// Query is the pattern for search (a basic regular expression, as grep's).
	Query string
	// Tests names the tests of run_tests and coverage (top-level test
	// names); empty means the task's deciding tests.
	Tests []string
	// Lines are where candidates looks for repairs.
	Lines []Line
	// Candidates are the IDs (in the last candidates list) that try tries,
	// or, for apply, the one it applies.
	Candidates []int
	// Mistake, when set, says the policy's model gave no valid action (a
	// malformed or unknown tool call, text with no tool call, a request too
	// long for its context): the step is recorded as the agent's mistake,
	// shown to it with this message, and counts against the step limit.
	Mistake string
}

// StartLine is the first line view shows (ActionArgs.StartLine).
func (a Action) StartLine() int {
	if a.Args == nil {
		return 0
	}
	return a.Args.StartLine
}

// EndLine is the last line view shows (ActionArgs.EndLine).
func (a Action) EndLine() int {
	if a.Args == nil {
		return 0
	}
	return a.Args.EndLine
}

// Query is search's pattern (ActionArgs.Query).
func (a Action) Query() string {
	if a.Args == nil {
		return ""
	}
	return a.Args.Query
}

// Tests are the tests run_tests and coverage name (ActionArgs.Tests).
func (a Action) Tests() []string {
	if a.Args == nil {
		return nil
	}
	return a.Args.Tests
}

// Lines are where candidates looks (ActionArgs.Lines).
func (a Action) Lines() []Line {
	if a.Args == nil {
		return nil
	}
	return a.Args.Lines
}

// CandidateIDs are the candidates try and apply name (ActionArgs.Candidates).
func (a Action) CandidateIDs() []int {
	if a.Args == nil {
		return nil
	}
	return a.Args.Candidates
}

// Mistake is the policy's mistake, "" when it gave a valid action
// (ActionArgs.Mistake).
func (a Action) Mistake() string {
	if a.Args == nil {
		return ""
	}
	return a.Args.Mistake
}

// actionWire is an Action as JSON has it: every field at the top level,
// in this order. Trajectories on disk have this form; it does not change
// with Action's layout in memory.
type actionWire struct {
	Tool       Tool      `json:"tool"`
	Path       string    `json:"path,omitempty"`
	StartLine  int       `json:"start_line,omitempty"`
	EndLine    int       `json:"end_line,omitempty"`
	Query      string    `json:"query,omitempty"`
	Old        string    `json:"old,omitempty"`
	New        string    `json:"new,omitempty"`
	Tests      []string  `json:"tests,omitempty"`
	Lines      []Line    `json:"lines,omitempty"`
	Candidates []int     `json:"candidates,omitempty"`
	Version    int64     `json:"version"`
	LogProb    float64   `json:"logprob"`
	Decision   *Decision `json:"decision,omitempty"`
	Mistake    string    `json:"mistake,omitempty"`
	Turn       *Turn     `json:"turn,omitempty"`
}

// MarshalJSON writes the action flat (actionWire).
func (a Action) MarshalJSON() ([]byte, error) {
	w := actionWire{Tool: a.Tool, Path: a.Path, Old: a.Old, New: a.New, Version: a.Version, LogProb: a.LogProb,
		Decision: a.Decision, Turn: a.Turn}
	if x := a.Args; x != nil {
		w.StartLine, w.EndLine, w.Query, w.Tests, w.Lines, w.Candidates, w.Mistake =
			x.StartLine, x.EndLine, x.Query, x.Tests, x.Lines, x.Candidates, x.Mistake
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads a flat action (actionWire); Args is set only when
// one of its fields is. Unlike a plain struct's, it replaces the whole
// action; null leaves it as it was.
func (a *Action) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var w actionWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*a = Action{Tool: w.Tool, Path: w.Path, Old: w.Old, New: w.New, Version: w.Version, LogProb: w.LogProb,
		Decision: w.Decision, Turn: w.Turn}
	if w.StartLine != 0 || w.EndLine != 0 || w.Query != "" || w.Tests != nil || w.Lines != nil ||
		w.Candidates != nil || w.Mistake != "" {
		a.Args = &ActionArgs{StartLine: w.StartLine, EndLine: w.EndLine, Query: w.Query, Tests: w.Tests,
			Lines: w.Lines, Candidates: w.Candidates, Mistake: w.Mistake}
	}
	return nil
}

// Decision records one choice of a policy that scores options: the
// features of every option it could have taken, in order, and the index of
// the one it took. A learner recomputes the log-probability of the choice
// under new weights from these alone.
type Decision struct {
	// Kind names the decision ("try", "stop", …) for the policy's own use.
	Kind string `json:"kind,omitempty"`
	// Features holds one row per option, Dim values each, row-major.
	Features []float32 `json:"features"`
	Dim      int       `json:"dim"`
	Chosen   int       `json:"chosen"`
	// Temperature is the softmax temperature the choice was sampled at.
	Temperature float64 `json:"temperature,omitempty"`
}

// Options is the number of options of the decision.
func (d *Decision) Options() int {
	if d == nil || d.Dim == 0 {
		return 0
	}
	return len(d.Features) / d.Dim
}

// Line is one line of a file in the workspace (1-based).
type Line struct {
	File string `json:"file"`
	Line int    `json:"line"`
}

// Observation is what the agent sees before acting. It holds only what an
// agent could see: the task as an issue would describe it, and what its own
// actions showed. No field (here or below) holds the gold patch, the
// mutation record, the buggy file or the store's coverage; a test fails if
// one appears.
type Observation struct {
	Episode uint64 `json:"episode"`
	Attempt int    `json:"attempt"`
	Step    int    `json:"step"`
	// MaxSteps is the most actions the episode may take; MaxTries the most
	// candidates it may try (0: no limit but the steps).
	MaxSteps int `json:"max_steps"`
	MaxTries int `json:"max_tries,omitempty"`
	// Task is what the agent may know of its task. It is shared with the
	// episode: read it, never change it.
	Task *TaskView `json:"task"`
	// Last is the result of the previous action; nil at step 0.
	Last *StepResult `json:"last,omitempty"`
	// History holds every step so far, oldest first (Last is the last
	// one's result). It is shared with the episode: read it, never change it.
	History []Step `json:"-"`
}

// View returns what the agent may know of its task: a copy of *o.Task,
// or an empty view when Task is unset.
func (o *Observation) View() TaskView {
	if o.Task == nil {
		return TaskView{}
	}
	return *o.Task
}

// StepResult is what one action produced, as the agent is shown it.
//
// As with Action, what most steps leave empty sits behind Detail (a
// command's streams, the tools' structured reports), read through the
// methods (Tests, Tries, Stdout, …) that answer for a nil Detail; in JSON
// a result is flat (MarshalJSON).
type StepResult struct {
	// Output is the text shown: file content, search hits, a confirmation
	// or the agent's error; long output is cut in the middle with a note.
	Output string
	// Error is set when the action was the agent's mistake (a path outside
	// the workspace, an edit whose old text is not in the file, a stale
	// candidate): the episode goes on.
	Error    string
	ExitCode int
	// Executions is how many test runs the step cost (0 when its answer
	// came from the outcome cache); Cached says it did come from there.
	Executions int
	// Duration is the wall time of the step in the sandbox.
	Duration time.Duration
	// Detail holds a command's streams and the structured reports of
	// run_tests, coverage, candidates and try; nil when the step has none.
	Detail *StepDetail
	Cached bool
}

// StepDetail is what a step produced beyond its output, for the tools that
// produce more.
type StepDetail struct {
	TimedOut bool
	// Stdout and Stderr are a command's streams, kept apart and each cut in
	// the middle when long.
	Stdout string
	Stderr string
	// Tests is run_tests' report; Coverage coverage's; Candidates the list
	// candidates made (their IDs index it); Tries try's results, one per
	// candidate tried, in order.
	Tests      *TestReport
	Coverage   *CoverageReport
	Candidates []Candidate
	Tries      []TryResult
}

// TimedOut says the command hit its time limit (StepDetail.TimedOut).
func (r StepResult) TimedOut() bool { return r.Detail != nil && r.Detail.TimedOut }

// Stdout is the command's standard output (StepDetail.Stdout).
func (r StepResult) Stdout() string {
	if r.Detail == nil {
		return ""
	}
	return r.Detail.Stdout
}

// Stderr is the command's standard error (StepDetail.Stderr).
func (r StepResult) Stderr() string {
	if r.Detail == nil {
		return ""
	}
	return r.Detail.Stderr
}

// Tests is run_tests' report, nil for other tools (StepDetail.Tests).
func (r StepResult) Tests() *TestReport {
	if r.Detail == nil {
		return nil
	}
	return r.Detail.Tests
}

// Coverage is coverage's report, nil for other tools (StepDetail.Coverage).
func (r StepResult) Coverage() *CoverageReport {
	if r.Detail == nil {
		return nil
	}
	return r.Detail.Coverage
}

// Candidates is the list candidates made (StepDetail.Candidates).
func (r StepResult) Candidates() []Candidate {
	if r.Detail == nil {
		return nil
	}
	return r.Detail.Candidates
}

// Tries are try's results (StepDetail.Tries).
func (r StepResult) Tries() []TryResult {
	if r.Detail == nil {
		return nil
	}
	return r.Detail.Tries
}

// resultWire is a StepResult as JSON has it: every field at the top
// level, in this order (as actionWire is an Action).
type resultWire struct {
	Output     string          `json:"output,omitempty"`
	Error      string          `json:"error,omitempty"`
	ExitCode   int             `json:"exit_code,omitempty"`
	TimedOut   bool            `json:"timed_out,omitempty"`
	Stdout     string          `json:"stdout,omitempty"`
	Stderr     string          `json:"stderr,omitempty"`
	Tests      *TestReport     `json:"tests,omitempty"`
	Coverage   *CoverageReport `json:"coverage,omitempty"`
	Candidates []Candidate     `json:"candidates,omitempty"`
	Tries      []TryResult     `json:"tries,omitempty"`
	Executions int             `json:"executions,omitempty"`
	Cached     bool            `json:"cached,omitempty"`
	Duration   time.Duration   `json:"duration_ns,omitempty"`
}

// MarshalJSON writes the result flat (resultWire).
func (r StepResult) MarshalJSON() ([]byte, error) {
	w := resultWire{Output: r.Output, Error: r.Error, ExitCode: r.ExitCode, Executions: r.Executions,
		Cached: r.Cached, Duration: r.Duration}
	if d := r.Detail; d != nil {
		w.TimedOut, w.Stdout, w.Stderr, w.Tests, w.Coverage, w.Candidates, w.Tries =
			d.TimedOut, d.Stdout, d.Stderr, d.Tests, d.Coverage, d.Candidates, d.Tries
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads a flat result (resultWire); Detail is set only when
// one of its fields is. It replaces the whole result; null leaves it as
// it was.
func (r *StepResult) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var w resultWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*r = StepResult{Output: w.Output, Error: w.Error, ExitCode: w.ExitCode, Executions: w.Executions,
		Cached: w.Cached, Duration: w.Duration}
	if w.TimedOut || w.Stdout != "" || w.Stderr != "" || w.Tests != nil || w.Coverage != nil ||
		w.Candidates != nil || w.Tries != nil {
		r.Detail = &StepDetail{TimedOut: w.TimedOut, Stdout: w.Stdout, Stderr: w.Stderr, Tests: w.Tests,
			Coverage: w.Coverage, Candidates: w.Candidates, Tries: w.Tries}
	}
	return nil
}

// Step is one recorded (action, result) pair of a trajectory.
type Step struct {
	Action Action     `json:"action"`
	Result StepResult `json:"result"`
}

// Trajectory is the record of one attempt at a task.
type Trajectory struct {
	Task    string `json:"task"`
	Episode uint64 `json:"episode"`
	Attempt int    `json:"attempt"`
	Steps   []Step `json:"steps"`
	// Reward is 1 when the deciding tests passed at the end, else 0.
	Reward float64 `json:"reward"`
	// Submitted says whether the agent submitted before the step limit.
	Submitted bool `json:"submitted"`
	// RewardHackSuspected, when set, is why the verdict judged that the
	// agent's code tried to forge its result (env.Verdict.Suspected): the
	// reward is then 0.
	RewardHackSuspected string `json:"reward_hack_suspected,omitempty"`
	// Executions counts the test runs the episode cost, the deciding run
	// included; Tries the candidates it tried.
	Executions int `json:"executions"`
	Tries      int `json:"tries"`
}

// MinVersion is the oldest policy version among the trajectory's actions, or
// -1 when it has none.
func (t *Trajectory) MinVersion() int64 {
	v := int64(-1)
	for i := range t.Steps {
		if a := t.Steps[i].Action.Version; v < 0 || a < v {
			v = a
		}
	}
	return v
}
