// Package envtest is the conformance suite that every env.Provider backend
// passes: env/docker, env/process and env/sim run the same tests, each
// declaring with Capabilities which parts it supports (sim runs no real
// commands; only docker stops a fork bomb, and so on).
//
// Run is called from a backend's own test with a provider it made; the suite
// opens, uses and closes sandboxes through it, from the test's goroutine and
// from a few goroutines at once, and checks at the end that every sandbox it
// opened is closed (through env.ProviderStats when the provider has it).
// Backend-specific leak checks (containers left on the daemon) stay with the
// backend's tests.
//
// For real tasks, RunOracle plays stored tasks in a backend's sandboxes
// with a harness (their gold fix rewarded 1, the bug and a broken build
// rewarded 0, their coverage as the task says), and RunRedTeam plays
// changes that try to forge the verdict instead of fixing the bug, each of
// which must be rewarded 0 and, where it must, counted as a suspected
// reward hack. gotask's tests run both against the process and the Docker
// backends with gotask's harness. Unavailable is how a test
// that lacks what it needs (a Docker daemon) skips, or fails under CI=true.
//
// # Threading and cancellation
//
// Run must be called from the test's goroutine; it starts subtests with
// t.Run (not in parallel) and, in the Concurrent test, a few goroutines that
// it waits for. Every sandbox it opens is closed by a t.Cleanup with a fresh
// context, also when the test fails. Each blocking call runs under a context
// with a timeout, so a hung backend fails the test instead of hanging it.
package envtest
