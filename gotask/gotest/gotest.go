package gotest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"regexp"
	"sort"
	"strings"
	"time"
)

// Result is what one go command did.
type Result struct {
	Exit     int
	Out      []byte
	TimedOut bool
	Wall     time.Duration
}

// testEvent is one line of `go test -json`.
type testEvent struct {
	Action  string
	Test    string
	Output  string
	Elapsed float64
}

// Run is the outcome of one `go test -json` run, by top-level test.
type Run struct {
	Passed, Failed []string
	// elapsed is each top-level test's time.
	Elapsed map[string]time.Duration
	// output holds each failed test's output.
	Output   map[string]string
	TimedOut bool
	// built is false when the package or its tests did not compile.
	Built bool
	Wall  time.Duration
	Raw   string
	// text is the output that belongs to no test: build errors, a
	// package's own FAIL lines.
	Text string
	// died: the test binary exited non-zero with no test failed (os.Exit,
	// a crash outside any test).
	Died bool
	// unfinished: some top-level test started and got no verdict (the
	// binary died under it); parallel names the top-level tests that
	// paused for t.Parallel (test binary runs only).
	Unfinished bool
	Parallel   map[string]bool
	// exit is the test binary's exit status (test binary runs only; -1
	// when it timed out); logs holds every top-level test's output, passed
	// or failed, up to maxTestOutput each (test binary runs only).
	Exit int
	Logs map[string]string
}

// ParseJSON reads the output of `go test -json`.
func ParseJSON(r Result) Run {
	tr := Run{Output: map[string]string{}, Elapsed: map[string]time.Duration{}, TimedOut: r.TimedOut, Wall: r.Wall, Raw: string(r.Out)}
	outs := map[string]*strings.Builder{}
	var text []byte
	sc := bufio.NewScanner(bytes.NewReader(r.Out))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<24) // grows for a long line
	for sc.Scan() {
		var e testEvent
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		if strings.Contains(e.Output, "panic: test timed out") {
			tr.TimedOut = true
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
			tr.Built = true
		case "pass":
			tr.Passed = append(tr.Passed, e.Test)
			tr.Elapsed[e.Test] = time.Duration(e.Elapsed * float64(time.Second))
		case "fail":
			tr.Failed = append(tr.Failed, e.Test)
		case "output":
			appendOut(outs, e.Test, e.Output)
		}
	}
	for _, t := range tr.Failed {
		if b := outs[t]; b != nil {
			tr.Output[t] = b.String()
		}
	}
	sort.Strings(tr.Passed)
	sort.Strings(tr.Failed)
	tr.Text = string(text)
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

// RunRegexp matches exactly the named top-level tests.
func RunRegexp(tests []string) string {
	q := make([]string, len(tests))
	for i, t := range tests {
		q[i] = regexp.QuoteMeta(t)
	}
	return "^(" + strings.Join(q, "|") + ")$"
}

// ParseChatty reads the output of a test binary run with
// -test.v=test2json: framing lines start with ^V ("=== RUN   TestX",
// "--- FAIL: TestX (0.00s)"), everything else is output of the test named
// last. Only a verdict counts: when a test panics, the testing package
// reports it failed and the binary dies; tests paused beside it (t.Parallel)
// never finish and are neither passed nor failed, as go test reports them.
// died says that the binary exited non-zero with no test failed.
func ParseChatty(r Result) Run {
	tr := Run{Output: map[string]string{}, Elapsed: map[string]time.Duration{}, TimedOut: r.TimedOut, Wall: r.Wall, Raw: string(r.Out), Built: true, Parallel: map[string]bool{}}
	outs := map[string]*strings.Builder{}
	started := map[string]bool{}
	var order []string
	verdict := map[string]bool{}
	cur := ""
	sc := bufio.NewScanner(bytes.NewReader(r.Out))
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
					tr.Parallel[cur] = true
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
							tr.Elapsed[name] = d
						}
					}
				}
				cur = name
			}
			continue
		}
		if strings.HasPrefix(line, "panic: test timed out") {
			tr.TimedOut = true
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
			tr.Passed = append(tr.Passed, t)
		case ok:
			tr.Failed = append(tr.Failed, t)
		default:
			tr.Unfinished = true
		}
	}
	tr.Died = r.Exit != 0 && len(tr.Failed) == 0 && !tr.TimedOut
	tr.Exit = r.Exit
	tr.Logs = map[string]string{}
	for t, b := range outs {
		tr.Logs[t] = b.String()
	}
	for _, t := range tr.Failed {
		if b := outs[t]; b != nil {
			tr.Output[t] = b.String()
		}
	}
	sort.Strings(tr.Passed)
	sort.Strings(tr.Failed)
	return tr
}

// Crashed reports that the test binary died under its tests: a test
// panicked (which kills the binary), or a test never got a verdict.
func (tr Run) Crashed() bool {
	if tr.Unfinished {
		return true
	}
	for _, t := range tr.Failed {
		if strings.Contains(tr.Output[t], "\npanic: ") || strings.HasPrefix(tr.Output[t], "panic: ") {
			return true
		}
	}
	return false
}
