// Package gotest is the go test layer of frog: what the synthesizer's
// Validator (synth/validate), which makes tasks, and the episode harness
// (gotask), which runs them, both do with a Go package's tests.
//
//   - Running: RunIn and ExecIn run a command in an env.Sandbox with Env
//     (offline, reproducible builds of a foreign module) and the output
//     capped at MaxOutput; ChattyArgs are a test binary's arguments for a
//     run that ParseChatty reads, and RunRegexp names top-level tests
//     exactly.
//   - Reading: ParseJSON reads `go test -json`, ParseChatty a test binary's
//     -test.v=test2json output, both into a Run (a verdict per top-level
//     test, its time, a failed test's output, whether the build or the
//     binary died).
//   - Coverage: ParseProfile reads a cover profile; BuildCoverBinary builds
//     a package's coverage test binary with frog's TestMain laid over it,
//     and CoverTests measures each test's blocks in one process of it
//     (CoverOnce), a process a test where it must (CoverEach). CoverageMap
//     ranks blocks by Ochiai suspiciousness.
//   - Schemata: ParsePackage parses a package's non-test source; Build
//     compiles mutants of it into one mutant schema, each mutated function
//     a copy chosen at run time by FROG_MUTANT (SchemaVar); Check says why
//     a mutant cannot be one; Attribute and MapOutput map compiler and test
//     output back to the mutants and their own files; WriteOverlay lays a
//     schema over a sandbox's package.
//
// It depends on env alone. Everything here is plain functions and values:
// a Package and a Schema are read-only once made, and safe to share
// between goroutines. The functions that take a sandbox are called from
// the goroutine that uses the sandbox (one call at a time, the sandbox's
// rule) and block until their commands end; when ctx is cancelled the
// sandbox ends the command and they return its error. An error from the
// sandbox is a fault of it (wrapping env.ErrInfra) or ctx's end; what a
// test or a build did, however it failed, is in the Result or Run, not an
// error.
package gotest
