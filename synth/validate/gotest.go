package validate

import (
	"bufio"
	"bytes"
	"encoding/json"
	"regexp"
	"sort"
	"strings"
	"time"
)

// runResult is what one go command did.
type runResult struct {
	exit     int
	out      []byte
	timedOut bool
	wall     time.Duration
}

// testEvent is one line of `go test -json`.
type testEvent struct {
	Action  string
	Test    string
	Output  string
	Elapsed float64
}

// testRun is the outcome of one `go test -json` run, by top-level test.
type testRun struct {
	passed, failed []string
	// elapsed is each top-level test's time.
	elapsed map[string]time.Duration
	// output holds each failed test's output.
	output   map[string]string
	timedOut bool
	// built is false when the package or its tests did not compile.
	built bool
	wall  time.Duration
	raw   string
	// text is the output that belongs to no test: build errors, a
	// package's own FAIL lines.
	text string
	// died: the test binary exited non-zero with no test failed (os.Exit,
	// a crash outside any test).
	died bool
	// unfinished: some top-level test started and got no verdict (the
	// binary died under it); parallel names the top-level tests that
	// paused for t.Parallel (test binary runs only).
	unfinished bool
	parallel   map[string]bool
	// exit is the test binary's exit status (test binary runs only; -1
	// when it timed out); logs holds every top-level test's output, passed
	// or failed, up to maxTestOutput each (test binary runs only).
	exit int
	logs map[string]string
}

func parseTestJSON(r runResult) testRun {
	tr := testRun{output: map[string]string{}, elapsed: map[string]time.Duration{}, timedOut: r.timedOut, wall: r.wall, raw: string(r.out)}
	outs := map[string]*strings.Builder{}
	var text []byte
	sc := bufio.NewScanner(bytes.NewReader(r.out))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<24) // grows for a long line
	for sc.Scan() {
		var e testEvent
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		if strings.Contains(e.Output, "panic: test timed out") {
			tr.timedOut = true
		}
		if e.Test == "" && e.Output != "" && len(text) < maxTestOutput {
			text = append(text, e.Output...)
		}
		if e.Test == "" || strings.Contains(e.Test, "/") {
			if e.Test != "" && e.Action == "output" {
				top, _, _ := strings.Cut(e.Test, "/")
				appendOut(outs, top, e.Output)
			}
			continue
		}
		switch e.Action {
		case "run":
			tr.built = true
		case "pass":
			tr.passed = append(tr.passed, e.Test)
			tr.elapsed[e.Test] = time.Duration(e.Elapsed * float64(time.Second))
		case "fail":
			tr.failed = append(tr.failed, e.Test)
		case "output":
			appendOut(outs, e.Test, e.Output)
		}
	}
	for _, t := range tr.failed {
		if b := outs[t]; b != nil {
			tr.output[t] = b.String()
		}
	}
	sort.Strings(tr.passed)
	sort.Strings(tr.failed)
	tr.text = string(text)
	return tr
}

const maxTestOutput = 8 << 10

func appendOut(outs map[string]*strings.Builder, test, s string) {
	b := outs[test]
	if b == nil {
		b = &strings.Builder{}
		outs[test] = b
	}
	if b.Len() < maxTestOutput {
		b.WriteString(s)
	}
}

// runRegexp matches exactly the named top-level tests.
func runRegexp(tests []string) string {
	q := make([]string, len(tests))
	for i, t := range tests {
		q[i] = regexp.QuoteMeta(t)
	}
	return "^(" + strings.Join(q, "|") + ")$"
}

// parseChatty reads the output of a test binary run with
// -test.v=test2json: framing lines start with ^V ("=== RUN   TestX",
// "--- FAIL: TestX (0.00s)"), everything else is output of the test named
// last. Only a verdict counts: when a test panics, the testing package
// reports it failed and the binary dies; tests paused beside it (t.Parallel)
// never finish and are neither passed nor failed, as go test reports them.
// died says that the binary exited non-zero with no test failed.
func parseChatty(r runResult) testRun {
	tr := testRun{output: map[string]string{}, elapsed: map[string]time.Duration{}, timedOut: r.timedOut, wall: r.wall, raw: string(r.out), built: true, parallel: map[string]bool{}}
	outs := map[string]*strings.Builder{}
	started := map[string]bool{}
	var order []string
	verdict := map[string]bool{}
	cur := ""
	sc := bufio.NewScanner(bytes.NewReader(r.out))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<24) // grows for a long line
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "\x16"); ok {
			switch {
			case strings.HasPrefix(rest, "=== "):
				// "=== RUN   Name", "=== NAME  Name", "=== CONT  Name", "=== PAUSE Name"
				f := strings.Fields(rest)
				cur = ""
				if len(f) >= 3 {
					cur = f[2]
				}
				if len(f) >= 3 && f[1] == "RUN" && !strings.Contains(cur, "/") && !started[cur] {
					started[cur] = true
					order = append(order, cur)
				}
				if len(f) >= 3 && f[1] == "PAUSE" && !strings.Contains(cur, "/") {
					tr.parallel[cur] = true
				}
			case strings.HasPrefix(rest, "--- "):
				// "--- PASS: Name (0.00s)"
				f := strings.Fields(rest)
				if len(f) < 3 {
					continue
				}
				name := f[2]
				top, _, _ := strings.Cut(name, "/")
				if name == top {
					switch f[1] {
					case "PASS:":
						verdict[name] = true
					case "FAIL:":
						verdict[name] = false
					}
					if len(f) >= 4 {
						if d, err := time.ParseDuration(strings.Trim(f[3], "()")); err == nil {
							tr.elapsed[name] = d
						}
					}
				}
				cur = name
			}
			continue
		}
		if strings.HasPrefix(line, "panic: test timed out") {
			tr.timedOut = true
		}
		if cur != "" {
			top, _, _ := strings.Cut(cur, "/")
			appendOut(outs, top, line+"\n")
		}
	}
	for _, t := range order {
		pass, ok := verdict[t]
		switch {
		case ok && pass:
			tr.passed = append(tr.passed, t)
		case ok:
			tr.failed = append(tr.failed, t)
		default:
			tr.unfinished = true
		}
	}
	tr.died = r.exit != 0 && len(tr.failed) == 0 && !tr.timedOut
	tr.exit = r.exit
	tr.logs = map[string]string{}
	for t, b := range outs {
		tr.logs[t] = b.String()
	}
	for _, t := range tr.failed {
		if b := outs[t]; b != nil {
			tr.output[t] = b.String()
		}
	}
	sort.Strings(tr.passed)
	sort.Strings(tr.failed)
	return tr
}

// crashed reports that the test binary died under its tests: a test
// panicked (which kills the binary), or a test never got a verdict.
func (tr testRun) crashed() bool {
	if tr.unfinished {
		return true
	}
	for _, t := range tr.failed {
		if strings.Contains(tr.output[t], "\npanic: ") || strings.HasPrefix(tr.output[t], "panic: ") {
			return true
		}
	}
	return false
}
