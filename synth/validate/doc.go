// Package validate decides whether a mutant of a real Go package makes a
// usable bug-fix task, by running the package's own tests.
//
// It takes the fast path that needs no sandbox and no copy of the tree: the
// mutant is written to a temporary file and laid over the original with
// `go test -overlay`, run from the module's directory. Prepare measures a
// package once: its tests must pass twice (tests that pass only once are
// flaky and excluded), the slowest run sets the timeout (3x by default), and
// a per-test coverage map (`go test -c -cover`, then one
// `-test.run '^TestX$' -test.coverprofile` per test) says which tests reach
// which lines. Validate then applies SWE-smith's rule to one mutant: it must
// build and vet; among the tests that cover the mutated lines at least one
// fails (FAIL_TO_PASS); a second run of every stable test repeats that
// verdict and finds at least one test that still passes (PASS_TO_PASS).
// Mutants are deduplicated by a hash of their normalized diff and by
// (function, FAIL_TO_PASS set), and every verdict is counted.
//
// A Validator may be used from several goroutines; each Validate call runs
// its go commands synchronously, and kills them (with their process group)
// when ctx is cancelled.
package validate
