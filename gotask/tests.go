package gotask

import (
	"context"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/gotask/gotest"
)

// RunTests runs the named tests (the deciding tests when none) with go test,
// or from the test binary of the same tree when one is shared (sharedRun).
func (h *Harness) RunTests(ctx context.Context, sb env.Sandbox, ws *env.Workspace, tests []string) (env.TestReport, env.Cost, error) {
	t := ws.Task
	if len(tests) == 0 {
		tests = t.Tests()
	}
	if err := checkTestNames(tests); err != nil {
		return env.TestReport{}, env.Cost{}, err
	}
	return cached(h, okey("run", t.ID, ws.Hash(), strings.Join(tests, ",")), func() (env.TestReport, int, error) {
		// The starting state runs the coverage binary the task's check
		// built, as the check's own run did; a tree some sandbox built
		// before (any task's) runs its binary; where a binary died, go test
		// says what happened, as in Check.
		tr, ok, err := h.checkedRun(ctx, sb, ws, tests, h.cfg.TestTimeout)
		if err == nil && (!ok || tr.Died || tr.Unfinished) {
			tr, ok, err = h.sharedRun(ctx, sb, t, ws.Changed(), tests, h.cfg.TestTimeout)
		}
		if err == nil && (!ok || tr.Died || tr.Unfinished) {
			tr, err = h.goTestRun(ctx, sb, t, tests, h.cfg.TestTimeout)
		}
		if err != nil {
			return env.TestReport{}, 0, err
		}
		return report(tr, t.Dir()), 1, nil
	})
}

var testName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func checkTestNames(tests []string) error {
	for _, t := range tests {
		if !testName.MatchString(t) {
			return fmt.Errorf("test %q: want the name of a top-level test (TestX)", t)
		}
	}
	return nil
}

// report turns a go test run into the agent's test report.
func report(tr gotest.Run, dir string) env.TestReport {
	rep := env.TestReport{Built: tr.Built, TimedOut: tr.TimedOut}
	if !tr.Built {
		rep.BuildOutput = strings.TrimSpace(tr.Text)
		if rep.BuildOutput == "" {
			rep.BuildOutput = strings.TrimSpace(tr.Raw)
		}
		return rep
	}
	add := func(name string, st env.TestStatus, out string) {
		res := env.TestResult{Name: name, Status: st, Seconds: tr.Elapsed[name].Seconds()}
		if st != env.TestPass && st != env.TestSkip {
			res.Message, res.File, res.Line, res.Frames = failure(out, dir)
			if strings.Contains(out, "panic: test timed out") {
				res.Status = env.TestTimeout
			} else if strings.Contains(out, "panic: ") || strings.Contains(out, "[recovered]") {
				res.Status = env.TestPanic
			}
		}
		rep.Tests = append(rep.Tests, res)
		if res.Status == env.TestPass {
			rep.Passed++
		} else {
			rep.Failed++
		}
	}
	for _, n := range tr.Passed {
		add(n, env.TestPass, "")
	}
	for _, n := range tr.Failed {
		add(n, env.TestFail, tr.Output[n])
	}
	return rep
}

// failure reads a failed test's output: its message (the lines that are not
// go test's framing, cut to 2 KiB), where the test said it failed, and a
// panic's frames inside the workspace.
func failure(out, dir string) (msg, file string, line int, frames []env.Frame) {
	var keep []string
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "=== ") || strings.HasPrefix(l, "--- ") || l == "" {
			continue
		}
		if m := failLine.FindStringSubmatch(l); m != nil && file == "" {
			file = path.Join(dir, m[1])
			line, _ = strconv.Atoi(m[2])
		}
		if m := frameFile.FindStringSubmatch(l); m != nil && i > 0 {
			if ws := workspaceRel(m[1]); ws != "" {
				n, _ := strconv.Atoi(m[2])
				fn := strings.TrimSpace(lines[i-1])
				if j := strings.LastIndexByte(fn, '('); j > 0 {
					fn = fn[:j]
				}
				if !strings.HasSuffix(ws, "_test.go") || len(frames) == 0 {
					frames = append(frames, env.Frame{Func: fn, File: ws, Line: n})
				}
			}
			continue
		}
		if len(keep) < 60 {
			keep = append(keep, strings.TrimRight(l, " \t"))
		}
	}
	return env.CutMiddle(strings.Join(keep, "\n"), 2<<10), file, line, frames
}

// workspaceRel maps an absolute path of a stack frame to the workspace, or
// "" when it is outside (the standard library, the module cache). Sandboxes
// keep the workspace in a directory named workspace.
func workspaceRel(p string) string {
	i := strings.LastIndex(p, "/workspace/")
	if i < 0 {
		return ""
	}
	return p[i+len("/workspace/"):]
}

func notPassed(tests []string, tr gotest.Run) []string {
	var out []string
	for _, t := range tests {
		if !slices.Contains(tr.Passed, t) {
			out = append(out, t)
		}
	}
	return out
}

// goCmd runs the go command at the workspace root of sb, offline.
func (h *Harness) goCmd(ctx context.Context, sb env.Sandbox, timeout time.Duration, args ...string) (gotest.Result, error) {
	var b strings.Builder
	b.WriteString("exec env")
	for _, a := range slices.Concat(gotest.Env, []string{"go"}, args) {
		b.WriteString(" " + gotest.ShellQuote(a))
	}
	return gotest.ExecIn(ctx, sb, timeout, "sh", "-c", b.String())
}

// goTestRun builds the tests of task t's package for real with go test and
// runs the named ones, with a time limit, reporting in JSON. The binary
// is linked without its symbol table and DWARF (-s -w), as the schema and
// coverage binaries are: a panic's trace keeps its functions and lines, and
// the link costs about a fifth less.
func (h *Harness) goTestRun(ctx context.Context, sb env.Sandbox, t *env.Task, tests []string, limit time.Duration, extra ...string) (gotest.Run, error) {
	h.st.goTests.Add(1)
	args := []string{"test", "-json", "-count=1", "-vet=off", "-ldflags=-s -w", "-timeout", limit.String()}
	args = append(append(args, extra...), "-run", gotest.RunRegexp(tests), "./"+t.Dir())
	r, err := h.goCmd(ctx, sb, limit+h.cfg.BuildTimeout, args...)
	if err != nil {
		return gotest.Run{}, err
	}
	return gotest.ParseJSON(r), nil
}

// runBinary runs the named tests from test binary bin (as seen from dir)
// in directory dir of sb, within limit, as go test's -json reports them;
// extra test flags come after chattyArgs' and override them.
func (h *Harness) runBinary(ctx context.Context, sb env.Sandbox, dir, bin string, tests []string, limit time.Duration, extra ...string) (gotest.Run, error) {
	r, err := gotest.RunIn(ctx, sb, dir, bin, nil, limit+time.Second, append(gotest.ChattyArgs(limit, tests), extra...)...)
	if err != nil {
		return gotest.Run{}, err
	}
	return gotest.ParseChatty(r), nil
}

// checkedRun runs the named tests from the coverage binary of the task's
// check, when ws is the task's starting state and the binary is shared
// (checkedCoverBin); ok is false when it is not.
func (h *Harness) checkedRun(ctx context.Context, sb env.Sandbox, ws *env.Workspace, tests []string, limit time.Duration) (tr gotest.Run, ok bool, err error) {
	bin, ok := h.checkedCoverBin(ctx, sb, ws)
	if !ok {
		return gotest.Run{}, false, nil
	}
	tr, err = h.runBinary(ctx, sb, ws.Task.Dir(), bin, tests, limit)
	return tr, err == nil, err
}

var (
	failLine  = regexp.MustCompile(`^\s+([A-Za-z0-9_.\-]+\.go):([0-9]+): ?(.*)`)
	frameFile = regexp.MustCompile(`^\s+(/\S+\.go):([0-9]+)`)
)
