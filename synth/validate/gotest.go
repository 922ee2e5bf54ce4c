package validate

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"sort"
	"strings"
	"syscall"
	"time"
)

// runResult is what one go command did.
type runResult struct {
	exit     int
	out      []byte
	timedOut bool
	wall     time.Duration
}

// goCmd runs the go tool (or another binary) in dir with a clean environment
// for building a foreign module, killing its process group when ctx ends.
func (v *Validator) goCmd(ctx context.Context, dir string, timeout time.Duration, name string, args ...string) (runResult, error) {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=", "GOTOOLCHAIN=local", "GOPROXY=off", "CGO_ENABLED=0")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	start := v.now()
	err := cmd.Run()
	res := runResult{out: buf.Bytes(), wall: v.now().Sub(start)}
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case ctx.Err() != nil:
		if parentDone(ctx) {
			return res, ctx.Err()
		}
		res.timedOut = true
		res.exit = -1
	case errors.As(err, &exitErr):
		res.exit = exitErr.ExitCode()
	default:
		return res, err
	}
	return res, nil
}

// parentDone reports whether ctx ended for a reason other than its own
// deadline.
func parentDone(ctx context.Context) bool {
	return !errors.Is(context.Cause(ctx), context.DeadlineExceeded)
}

// testEvent is one line of `go test -json`.
type testEvent struct {
	Action string
	Test   string
	Output string
}

// testRun is the outcome of one `go test -json` run, by top-level test.
type testRun struct {
	passed, failed []string
	// output holds each failed test's output.
	output   map[string]string
	timedOut bool
	// built is false when the package or its tests did not compile.
	built bool
	wall  time.Duration
	raw   string
}

func parseTestJSON(r runResult) testRun {
	tr := testRun{output: map[string]string{}, timedOut: r.timedOut, wall: r.wall, raw: string(r.out)}
	outs := map[string]*strings.Builder{}
	sc := bufio.NewScanner(bytes.NewReader(r.out))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var e testEvent
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		if strings.Contains(e.Output, "panic: test timed out") {
			tr.timedOut = true
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
		q[i] = regexpQuote(t)
	}
	return "^(" + strings.Join(q, "|") + ")$"
}

func regexpQuote(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`\.+*?()|[]{}^$`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
