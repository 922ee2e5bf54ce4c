package validate

import "github.com/frognano/frog/gotask/gotest"

// The names recheck.go (the Checker, which is being replaced) still uses
// from before the go test layer moved to gotask/gotest. This file goes
// when recheck.go does.

// testRun is the part of a gotest.Run that the Checker reads.
type testRun struct {
	passed, failed []string
	built          bool
	raw            string
}

func parseTestJSON(r gotest.Result) testRun {
	tr := gotest.ParseJSON(r)
	return testRun{passed: tr.Passed, failed: tr.Failed, built: tr.Built, raw: tr.Raw}
}

func runRegexp(tests []string) string { return gotest.RunRegexp(tests) }

func firstLines(s string, n int) string { return gotest.FirstLines(s, n) }
