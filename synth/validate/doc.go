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
// binary, a mutant schema (gotest.Schema): every touched function gets a
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
// The go test layer it stands on (go test -json and test2json reading,
// per-test coverage, mutant schemata: schema.go there) is gotask/gotest,
// which the episodes' harness (gotask.Harness) shares.
package validate
