// Package dockertest gives tests outside env/docker what they need of the
// real Docker daemon: frog's sandbox image and providers that clean up after
// themselves. The actors' chaos test, the CLI's Docker test, gotask's oracle
// tests and synth/source's re-validation tests use it.
//
// Image builds the sandbox image once per test binary when the daemon lacks
// it. Provider opens a docker.Provider for the test and, in a t.Cleanup,
// closes it and removes every container of the test's run still on the
// daemon, so a failed test leaves nothing behind. Both are called from the
// test's goroutine and block for at most a few minutes each (connecting,
// building the image); a test gives them no context of its own.
//
// Without a daemon a test is skipped, saying so, except under CI=true,
// where it fails (envtest.Unavailable): Docker tests never skip in CI.
// env/docker's own tests have the same setup in package docker, which
// cannot import this one.
package dockertest
