package env

import (
	"path"
	"strings"
)

// Task is one bug-fix problem: a code base with an injected bug, the tests
// that expose it and the command that runs them. Reward is 1 when the tests
// pass after the agent's edits, else 0.
//
// A Task is the harness's record, the answer included (Patch, File): it goes
// to sandboxes, harnesses and curricula, never to a policy. What a policy is
// told of its task is the TaskView.
type Task struct {
	// ID is unique and stable (synthesized tasks use a hash of the diff).
	ID string `json:"instance_id"`
	// Repo names where the code comes from (a module path, or "sim").
	Repo string `json:"repo,omitempty"`
	// Difficulty is a scalar estimate on frog's difficulty scale: the skill
	// at which a policy solves the task half of the time.
	Difficulty float64 `json:"difficulty"`
	// Bin is the difficulty bin the synthesizer made the task in
	// ("family/k/locality/rank/module", see synth.Knobs), when it says; curricula
	// pool what they learn of tasks by bin.
	Bin string `json:"bin,omitempty"`
	// File is the path of the file the bug is in, when known.
	File string `json:"file,omitempty"`
	// Patch is the gold fix.
	Patch string `json:"patch,omitempty"`
	// ProblemStatement is what the agent is told.
	ProblemStatement string `json:"problem_statement,omitempty"`
	// FailToPass and PassToPass name the tests that decide the reward.
	FailToPass []string `json:"FAIL_TO_PASS,omitempty"`
	PassToPass []string `json:"PASS_TO_PASS,omitempty"`
	// TestCmd runs the deciding tests; exit code 0 means they pass.
	TestCmd []string `json:"test_cmd,omitempty"`
	// Version is the version of module Repo the code comes from (a module
	// version, or the commit of a git source); Package the import path of
	// the package with the bug; Mutations the injected changes. They are
	// what laying out the task's workspace needs (see Workspaces): the
	// module at Version with every mutation's edits applied.
	Version   string     `json:"version,omitempty"`
	Package   string     `json:"package,omitempty"`
	Mutations []Mutation `json:"mutations,omitempty"`
	// Private is what a simulation keeps of the task for its own use, so
	// that it lives exactly as long as the task does (frog sim's oracle
	// keeps the task's fix here). No policy is shown it (it is not in the
	// TaskView) and it is never written: a task read back has none.
	Private any `json:"-"`
}

// Mutation is one injected change: Edits applied to the original file make
// the bug; applied in reverse they undo it.
type Mutation struct {
	Op      string `json:"op"`
	Family  string `json:"family"`
	File    string `json:"file"`
	Line    int    `json:"line"`
	EndLine int    `json:"end_line"`
	Func    string `json:"func,omitempty"`
	Desc    string `json:"desc,omitempty"`
	Edits   []Edit `json:"edits"`
}

// Real reports whether the task is made of real code that a Workspaces
// must lay out (as opposed to a simulated task).
func (t *Task) Real() bool { return len(t.Mutations) > 0 }

// TaskView is what an agent is told of its task: what an issue would say
// and the tests' contract (which tests fail and must pass, which must keep
// passing, where they live). It has no field for the gold patch, the
// mutation record, the buggy file, the difficulty or the store's coverage.
type TaskView struct {
	ID               string `json:"id"`
	Repo             string `json:"repo,omitempty"`
	ProblemStatement string `json:"problem_statement,omitempty"`
	// Dir is the workspace directory of the package the tests are in
	// ("." for the module root).
	Dir        string   `json:"dir,omitempty"`
	FailToPass []string `json:"fail_to_pass,omitempty"`
	PassToPass []string `json:"pass_to_pass,omitempty"`
}

// View is what an agent may be told of t.
func (t *Task) View() TaskView {
	return TaskView{
		ID: t.ID, Repo: t.Repo, ProblemStatement: t.ProblemStatement, Dir: t.Dir(),
		FailToPass: t.FailToPass, PassToPass: t.PassToPass,
	}
}

// Dir is the workspace directory of the package the task's tests are in:
// the last argument of a `go test` command when it is a relative package
// path, else ".".
func (t *Task) Dir() string {
	if n := len(t.TestCmd); n > 0 && len(t.TestCmd) > 1 && t.TestCmd[0] == "go" {
		if last := t.TestCmd[n-1]; strings.HasPrefix(last, ".") {
			return path.Clean(last)
		}
	}
	return "."
}

// Tests are the task's deciding tests, FAIL_TO_PASS first.
func (t *Task) Tests() []string {
	return append(append(make([]string, 0, len(t.FailToPass)+len(t.PassToPass)), t.FailToPass...), t.PassToPass...)
}
