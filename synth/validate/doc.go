// Package validate decides whether a mutant of a real Go package makes a
// usable bug-fix task, by running the package's own tests in an
// env.Sandbox (the process or the Docker backend).
//
// A Validator holds a copy of one module in its sandbox. Prepare measures a
// package once: its tests must pass twice (tests that pass only once are
// flaky, tests slower than Config.MaxTestTime are slow: both are left out),
// go vet says whether mutants will be vetted, and a per-test coverage map
// (`go test -c -cover`, then one `-test.run '^TestX$' -test.coverprofile`
// per test) says which tests reach which lines.
//
// Batch then judges mutants. Duplicates (by normalized-diff hash), mutants
// no test covers and mutants that leave an import unused are settled first.
// The rest are compiled, up to Config.BatchSize at a time, into one test
// binary, a mutant schema (schema.go): every touched function gets a
// mutated copy chosen at run time by FROG_MUTANT, laid over the package
// with `go test -c -overlay`. Build errors and vet findings are attributed
// to the mutants whose copies they are in. Each mutant then runs the tests
// that cover it; when some fail, every usable test runs again to repeat the
// verdict and find PASS_TO_PASS, and the task's own tests run a third time
// as its test command will. Duplicates by (function, FAIL_TO_PASS set) are
// dropped last, and every verdict is counted.
//
// A Validator is used by one goroutine at a time (its sandbox's rule); run
// several, each with its own sandbox, to validate concurrently.
//
// # The harness
//
// Harness is the env.Harness of Go tasks, the one every real episode uses:
// run_tests (go test -json, a verdict per test, failures' file:line and
// panic frames), coverage (a cover profile per test, from one process),
// candidates (synth/mutate's repair templates at the lines asked for),
// tries (the candidates of one list compiled once into a mutant schema,
// then a test run per try, served by one process per episode where the
// sandbox can start one), and the verdict: a real build of the edited tree
// with the task's own test files put back, the workspace reset to the
// template plus the episode's recorded edits, a screen of the change for
// what no repair needs, and canary tests in the verdict binary, so that a
// forged pass is rewarded 0 and counted as a suspected reward hack
// (verdict.go, screen.go). Check is the quarantine's check of a task
// before it is served. An outcome cache keyed by (task, workspace state,
// call) answers the repeated states of a group's episodes.
//
// One Harness serves every episode of a run: it is safe for concurrent
// use, called from each episode's goroutine one call at a time per
// episode. Each call blocks until its commands end or ctx is cancelled; a
// fault of the sandbox wraps env.ErrInfra, and an error that does not (an
// unknown test, a candidate that does not apply) is the agent's mistake.
// BenchTries measures schema tries against a real build per try (`frog
// bench tries`).
package validate
