// Package env is what an episode runs in: the Sandbox contract and its
// providers, the Task an episode works on and the TaskView an agent may see
// of it, the agent's action vocabulary (the tools view, search, edit,
// revert, run_tests, coverage, candidates, try, apply and submit), and the
// step loop of one episode.
//
// Backends live in subpackages (env/sim, simulated; env/docker, one
// container per sandbox; env/process, a directory and child processes on
// this machine) and never import each other; env/envtest is the conformance
// suite all of them pass. Optional capabilities of a provider or a sandbox
// (ProviderStats, Immediate, HostPaths, Resetter, Starter) are separate
// interfaces found by type assertion; Limit bounds the sandboxes a provider
// has open at once.
//
// # The episode
//
// Episode is the step loop of one episode as a state machine: Observation,
// Apply, …, Finish. Run drives it with a blocking Agent from one goroutine
// (the actors' runner goroutines, the goroutine baseline); the actor
// runtime drives it from messages when the sandbox never blocks. Nothing
// here depends on the actor runtime, and Run can be used as a library. An
// Episode, its Workspace and its Sandbox belong to one episode and are used
// by one goroutine at a time; Run returns ctx's error, with the partial
// trajectory, when ctx is cancelled.
//
// The tools that need to know how a task's tests work (per-test verdicts,
// coverage, candidates, tries) and the verdict that decides the reward are
// a Harness's (gotask.Harness for Go tasks); without one, run_tests
// runs the task's test command and the reward is its exit code. A real
// task's workspace is laid out from a template a Workspaces makes
// (gotask.Workspaces). One Harness and one Workspaces serve every
// episode of a run, concurrently.
//
// # Errors
//
// Every fault of the infrastructure (a crashed or unreachable sandbox, a
// harness timeout, an unreachable model server) wraps ErrInfra, so callers
// decide between retrying and scoring with errors.Is(err, env.ErrInfra).
// An infrastructure fault is never an agent failure and never a reward of 0.
// A command of the agent's that fails or times out is not an error at all: it
// is an ExecResult with a non-zero exit code or TimedOut set. The agent's
// own mistakes (a path outside the workspace, an edit whose old text is not
// in the file, a malformed tool call) are shown to it as the step's output
// and do not end the episode.
package env
