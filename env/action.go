package env

import "fmt"

// Tool is one verb of the agent's action vocabulary. The LLM policy maps its
// tool calls onto these; the built-in policies choose among them directly.
type Tool uint8

const (
	// ToolView reads a file.
	ToolView Tool = iota + 1
	// ToolSearch runs a search (grep) over the workspace.
	ToolSearch
	// ToolEdit replaces text in a file (or the whole file).
	ToolEdit
	// ToolRunTests runs the task's tests and shows their output.
	ToolRunTests
	// ToolSubmit ends the episode; the tests then decide the reward.
	ToolSubmit
)

var toolNames = [...]string{ToolView: "view", ToolSearch: "search", ToolEdit: "edit", ToolRunTests: "run_tests", ToolSubmit: "submit"}

func (t Tool) String() string {
	if int(t) < len(toolNames) && toolNames[t] != "" {
		return toolNames[t]
	}
	return fmt.Sprintf("tool(%d)", uint8(t))
}

// ParseTool is the inverse of Tool.String.
func ParseTool(s string) (Tool, error) {
	for t, name := range toolNames {
		if name != "" && name == s {
			return Tool(t), nil
		}
	}
	return 0, fmt.Errorf("unknown tool %q (want view, search, edit, run_tests or submit)", s)
}

// Action is one decision of the agent.
type Action struct {
	Tool Tool
	// Path is the file for view and edit.
	Path string
	// Query is the pattern for search.
	Query string
	// Old and New describe an edit: the one occurrence of Old in the file is
	// replaced by New; with Old empty the whole file becomes New.
	Old, New string
	// Version is the policy version that produced the action; LogProb its
	// log-probability under that policy (the behaviour policy for GRPO).
	Version int64
	LogProb float64
}

// Observation is what the agent sees before acting.
type Observation struct {
	Episode uint64
	Attempt int
	Step    int
	Task    *Task
	// Last is the result of the previous action; nil at step 0.
	Last *StepResult
}

// StepResult is what one action produced.
type StepResult struct {
	// Output is what the agent is shown (file content, search hits, test
	// output or an error message), capped by RunOptions.MaxObservation.
	Output   string
	ExitCode int
	TimedOut bool
}

// Step is one recorded (action, result) pair of a trajectory.
type Step struct {
	Action Action
	Result StepResult
}

// Trajectory is the record of one attempt at a task.
type Trajectory struct {
	Task    string
	Episode uint64
	Attempt int
	Steps   []Step
	// Reward is 1 when the deciding tests passed at the end, else 0.
	Reward float64
	// Submitted says whether the agent submitted before the step limit.
	Submitted bool
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
