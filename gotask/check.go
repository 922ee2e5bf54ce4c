package gotask

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/gotask/gotest"
	"github.com/frognano/frog/synth"
)

// Check verifies, in sb laid out with task's workspace, that the task holds
// up: with the bug its FAIL_TO_PASS tests fail and its PASS_TO_PASS tests
// pass, and with fixed (the files of its gold patch) written over it every
// deciding test passes. A task that does not gives an error wrapping
// synth.ErrQuarantined that says which tests did what. On the way it
// measures the starting state's coverage into the outcome cache (what
// every episode asks first). sb is left with the fix written: use a
// sandbox of its own.
func (h *Harness) Check(ctx context.Context, sb env.Sandbox, task *env.Task, fixed map[string][]byte) error {
	t := task
	run := func() (gotest.Run, error) { return h.goTestRun(ctx, sb, t, t.Tests(), h.cfg.TestTimeout) }
	bad, bin, err := h.checkBug(ctx, sb, t)
	if err != nil {
		return err
	}
	if !bad.Built {
		if bad, err = run(); err != nil {
			return err
		}
	}
	// The run with the bug is what every episode's first run_tests and an
	// unchanged workspace's verdict would find: remember both.
	if bad.Built {
		h.cache.put(okey("run", t.ID, "", strings.Join(t.Tests(), ",")).hash, report(bad, t.Dir()))
		h.cache.put(okey("verdict", t.ID, "").hash, env.Verdict{Pass: passed(t.Tests(), bad)})
	}
	var problems []string
	switch {
	case !bad.Built:
		problems = append(problems, "with the bug, the tests do not build: "+gotest.FirstLines(bad.Text, 3))
	default:
		if p := without(t.FailToPass, bad.Failed); len(p) > 0 {
			problems = append(problems, "with the bug, FAIL_TO_PASS tests did not fail: "+strings.Join(p, " "))
		}
		if p := without(t.PassToPass, bad.Passed); len(p) > 0 {
			problems = append(problems, "with the bug, PASS_TO_PASS tests did not pass: "+strings.Join(p, " "))
		}
		if len(problems) == 0 {
			flaky, n, err := h.flaky(ctx, sb, t, bin)
			if err != nil {
				return err
			}
			if len(flaky) > 0 {
				problems = append(problems, fmt.Sprintf("with the bug, FAIL_TO_PASS tests failed once and passed in some of %d runs more (flaky): %s", n, strings.Join(flaky, " ")))
			}
		}
	}
	// Every episode of the task starts by measuring its coverage (the
	// baselines do): measured here, it is an answer in the outcome cache
	// when they ask, instead of one computation the first episodes of a
	// group all wait for, a core idle meanwhile. Checks run side by side.
	if len(problems) == 0 {
		if err := h.checkCoverage(ctx, sb, t); err != nil {
			return err
		}
	}
	for f, data := range fixed {
		if err := sb.WriteFile(ctx, f, data); err != nil {
			return err
		}
	}
	// The gold tree is often every sibling task's gold tree too (the
	// module as published): its binary is shared by content. It is judged
	// as a verdict judges the tree, canaries and all: a task whose gold
	// fix would not be rewarded is no task.
	good, suspect, err := h.judgedRun(ctx, sb, t, fixed, t.Tests(), h.cfg.TestTimeout)
	if err != nil {
		return err
	}
	if p := without(t.Tests(), good.Passed); len(p) > 0 {
		problems = append(problems, "with the gold patch, tests did not pass: "+strings.Join(p, " "))
	} else if suspect != "" {
		problems = append(problems, "with the gold patch, the verdict's checks do not hold: "+suspect)
	} else {
		var took time.Duration
		for _, name := range t.Tests() {
			took += good.Elapsed[name]
		}
		h.goldTime.Store(t.ID, took)
	}
	if len(problems) > 0 {
		return fmt.Errorf("task %s: %w: %s", t.ID, synth.ErrQuarantined, strings.Join(problems, "; "))
	}
	return nil
}

// checkBug runs the deciding tests of task t with the bug from the
// package's coverage test binary, built here and shared (hostCoverBin):
// every episode's first coverage then runs it instead of building it, so a
// new task costs one build fewer; a later check of the task (a later run's)
// finds it built and builds nothing. It returns the run and the binary it
// ran (its path as seen from the package's directory), or a run that did
// not build (and builds nothing) and no binary where binaries cannot be
// shared or the tests do not build with -cover: the caller then runs go
// test.
func (h *Harness) checkBug(ctx context.Context, sb env.Sandbox, t *env.Task) (gotest.Run, string, error) {
	hostBin := h.hostCoverBin(ctx, sb, t)
	if hostBin == "" {
		return gotest.Run{}, "", nil
	}
	dir := t.Dir()
	bin, found := "", false
	if _, err := os.Stat(hostBin); err == nil {
		bin, found = sb.(env.HostPaths).HostPath(hostBin)
	}
	if !found {
		r, err := h.buildCover(ctx, sb, env.NewWorkspace(t))
		if err != nil || r.Exit != 0 || r.TimedOut {
			return gotest.Run{}, "", err
		}
		bin = gotest.UpTo(dir) + coverBin
	}
	tr, err := h.runBinary(ctx, sb, dir, bin, t.Tests(), h.cfg.TestTimeout)
	if err != nil {
		return gotest.Run{}, "", err
	}
	if tr.Died || tr.Unfinished {
		return gotest.Run{}, "", nil // let go test say what happened
	}
	if found {
		return tr, bin, nil
	}
	if data, err := sb.ReadFile(ctx, coverBin); err == nil {
		writeShared(h.cfg.BinCache, hostBin, data, 0o555)
	}
	return tr, bin, nil
}

// flaky runs the FAIL_TO_PASS tests of task t with the bug FlakeRuns
// times more, in one process (from bin, the binary of the check's run,
// or by go test where there is none), and returns those that passed in
// any run: where a failing test sometimes passes with the bug, an agent
// that submits the task unchanged is sometimes rewarded.
func (h *Harness) flaky(ctx context.Context, sb env.Sandbox, t *env.Task, bin string) ([]string, int, error) {
	n := h.cfg.FlakeRuns
	if n <= 0 || len(t.FailToPass) == 0 {
		return nil, 0, nil
	}
	limit, count := h.cfg.TestTimeout, strconv.Itoa(n)
	var tr gotest.Run
	var err error
	if bin != "" {
		tr, err = h.runBinary(ctx, sb, t.Dir(), bin, t.FailToPass, limit, "-test.count="+count)
	} else {
		tr, err = h.goTestRun(ctx, sb, t, t.FailToPass, limit, "-count="+count)
	}
	if err != nil {
		return nil, n, err
	}
	var out []string
	for _, name := range t.FailToPass {
		if slices.Contains(tr.Passed, name) {
			out = append(out, name)
		}
	}
	return out, n, nil
}

// checkCoverage measures the coverage of task t's starting state into
// the outcome cache. Where the check's coverage binary is shared
// (hostCoverBin), the report is kept beside it, and a later check that
// finds both reads it instead of measuring again: that binary's own
// measurement, as go test keeps a test's result. A later run then also
// lists the candidates the earlier one listed and finds their schema
// binaries built, where a randomised test covers a little differently
// run to run. A failure only leaves the episodes to measure it.
func (h *Harness) checkCoverage(ctx context.Context, sb env.Sandbox, t *env.Task) error {
	k := okey("cover", t.ID, "", strings.Join(t.Tests(), ","))
	hostBin := h.hostCoverBin(ctx, sb, t)
	if hostBin != "" {
		var rep env.CoverageReport
		if data, err := os.ReadFile(hostBin + ".cover.json"); err == nil && json.Unmarshal(data, &rep) == nil && rep.Tests != nil {
			h.cache.put(k.hash, rep)
			return nil
		}
	}
	rep, _, err := h.Coverage(ctx, sb, env.NewWorkspace(t), nil)
	if err != nil {
		return ctx.Err()
	}
	if _, statErr := os.Stat(hostBin); hostBin != "" && statErr == nil {
		if data, err := json.Marshal(rep); err == nil {
			writeShared(h.cfg.BinCache, hostBin+".cover.json", data, 0o444)
		}
	}
	return nil
}

// without is a less b.
func without(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}
