package env

// Task is one bug-fix problem: a code base with an injected bug, the tests
// that expose it and the command that runs them. Reward is 1 when the tests
// pass after the agent's edits, else 0.
type Task struct {
	// ID is unique and stable (synthesized tasks use a hash of the diff).
	ID string `json:"instance_id"`
	// Repo names where the code comes from (a module path, or "sim").
	Repo string `json:"repo,omitempty"`
	// Difficulty is a scalar estimate on frog's difficulty scale: the skill
	// at which a policy solves the task half of the time.
	Difficulty float64 `json:"difficulty"`
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
}
