// Package env is what an episode runs in: the Sandbox contract and its
// providers, the Task an episode works on, the agent's action vocabulary
// (view, search, edit, run tests, submit) and the step loop of one episode.
//
// Backends live in subpackages (env/sim, simulated; env/docker, one
// container per sandbox; env/process, a directory and child processes on
// this machine) and never import each other; env/envtest is the conformance
// suite all of them pass. Nothing here depends on the actor
// runtime: Run drives one episode synchronously and can be used as a library.
//
// # Errors
//
// Every fault of the infrastructure (a crashed or unreachable sandbox, a
// harness timeout, an unreachable model server) wraps ErrInfra, so callers
// decide between retrying and scoring with errors.Is(err, env.ErrInfra).
// An infrastructure fault is never an agent failure and never a reward of 0.
// A command of the agent's that fails or times out is not an error at all: it
// is an ExecResult with a non-zero exit code or TimedOut set.
package env
