package gotask

import (
	"context"
	"encoding/json"
	"fmt"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/gotask/gotest"
)

// Try runs the deciding tests with each candidate applied: through one
// schema binary per (task, state, list) when the schema holds the
// candidate, by a real build of the edited file otherwise.
func (h *Harness) Try(ctx context.Context, sb env.Sandbox, ws *env.Workspace, list []env.Candidate, ids []int) ([]env.TryResult, env.Cost, error) {
	t := ws.Task
	lkey := listKey(list)
	before, bcost, err := h.baseline(ctx, sb, ws)
	if err != nil {
		return nil, env.Cost{}, err
	}
	failing0 := before.Failing()
	limit := h.tryTimeout(t, before)
	var out []env.TryResult
	total := env.Cost{Executions: bcost.Executions, Cached: true}
	var sch *trySchema
	for _, id := range ids {
		if id < 0 || id >= len(list) {
			return nil, total, fmt.Errorf("no candidate %d", id)
		}
		c := list[id]
		res, cost, err := cached(h, okey("try", t.ID, ws.Hash(), candKey(c)), func() (env.TryResult, int, error) {
			h.st.tries.Add(1)
			if ok, err := parses(ctx, sb, ws, c); err != nil || !ok {
				return env.TryResult{Built: false, Failing: t.Tests()}, 0, err
			}
			if !h.cfg.NoSchema && (sch == nil || sch.key != lkey) {
				var err error
				if sch, err = h.schemaFor(ctx, sb, ws, list, lkey); err != nil {
					return env.TryResult{}, 0, err
				}
			}
			if !h.cfg.NoSchema && sch.holds(id) {
				tr, n, err := h.trySchema(ctx, sb, t, sch, id, limit)
				tr.Schema = true
				h.st.tryRuns.Add(int64(n))
				return tr, n, err
			}
			h.st.realTries.Add(1)
			return h.tryReal(ctx, sb, ws, c, limit)
		})
		if err != nil {
			return nil, total, err
		}
		res.Candidate, res.Cached = id, cost.Cached
		res.Fixed, res.Broken = diffFailing(failing0, res.Failing, t.Tests())
		total.Executions += cost.Executions
		total.Cached = total.Cached && cost.Cached
		out = append(out, res)
	}
	return out, total, nil
}

// baseline is the report of the deciding tests in the workspace's state,
// what tries are compared with: remembered whether the outcome cache is on
// or not (it is the reference of a try, not its outcome).
func (h *Harness) baseline(ctx context.Context, sb env.Sandbox, ws *env.Workspace) (env.TestReport, env.Cost, error) {
	t := ws.Task
	k := okey("run", t.ID, ws.Hash(), strings.Join(t.Tests(), ",")).hash
	if v, ok := h.cache.get(k); ok {
		return v.(env.TestReport), env.Cost{Cached: true}, nil
	}
	rep, cost, err := h.RunTests(ctx, sb, ws, nil)
	if err == nil {
		h.cache.put(k, rep)
	}
	return rep, cost, err
}

// tryTimeout bounds a try's test run: a candidate that loops forever is a
// failed try, found in a fraction of a second, not minutes (a loop spins
// a core, or two, until then). The bound is ten times the longer of the
// deciding tests' times at the start (before) and with the gold patch
// (measured by the task's check), plus a quarter of a second for a busy
// machine; without the gold patch's time, a whole second, since a fixed
// tree can be slower than the buggy one (a bug that returns at once where
// the fix waits). At most TestTimeout. The -test.timeout it becomes
// counts the tests' own time, not the binary's start.
func (h *Harness) tryTimeout(t *env.Task, before env.TestReport) time.Duration {
	if gold, ok := h.goldTime.Load(t.ID); ok {
		return h.limitAfter(max(testTime(before), gold.(time.Duration)), 250*time.Millisecond)
	}
	return h.limitAfter(testTime(before), time.Second)
}

// verdictTimeout bounds a verdict's test run as tryTimeout does a try's,
// with two seconds to spare: a reward is not denied to a slow machine.
func (h *Harness) verdictTimeout(t *env.Task, before env.TestReport) time.Duration {
	d := testTime(before)
	if gold, ok := h.goldTime.Load(t.ID); ok {
		d = max(d, gold.(time.Duration))
	}
	return h.limitAfter(d, 2*time.Second)
}

func (h *Harness) limitAfter(took, spare time.Duration) time.Duration {
	return min(10*took+spare, h.cfg.TestTimeout)
}

// testTime is the deciding tests' time in a report.
func testTime(rep env.TestReport) time.Duration {
	var secs float64
	for _, t := range rep.Tests {
		secs += t.Seconds
	}
	return time.Duration(secs * float64(time.Second))
}

// diffFailing says which tests a try fixed (failing before, not after) and
// broke (passing before, failing after), among the deciding tests.
func diffFailing(before, after, tests []string) (fixed, broken []string) {
	for _, t := range tests {
		was, is := slices.Contains(before, t), slices.Contains(after, t)
		switch {
		case was && !is:
			fixed = append(fixed, t)
		case !was && is:
			broken = append(broken, t)
		}
	}
	return fixed, broken
}

func listKey(list []env.Candidate) string {
	var b strings.Builder
	for _, c := range list {
		b.WriteString(candKey(c))
	}
	return key(b.String())
}

// trySchema runs candidate id through the schema: the failing tests first,
// and the rest of the deciding tests only when some failing one passes.
// The first run is served by the episode's try server where it has one
// (serve.go); a served run that shows progress (a failing test passing) is
// run again in a process of its own, whose answer stands, and so is the
// second run: tests that leave state behind for the tests after them in
// one process (pflag's global flags) judged fixes broken, 11 of 1,380
// candidates of the bench's tasks, every one of them a served run with
// progress or a second run.
func (h *Harness) trySchema(ctx context.Context, sb env.Sandbox, t *env.Task, s *trySchema, id int, limit time.Duration) (env.TryResult, int, error) {
	var procs []string // the server's environment: it sets the mutant itself
	if h.cfg.TryProcs > 0 {
		procs = []string{"GOMAXPROCS=" + strconv.Itoa(h.cfg.TryProcs)}
	}
	env1 := append([]string{"FROG_MUTANT=" + strconv.Itoa(id+1)}, procs...)
	bin := s.bin
	if !filepath.IsAbs(bin) {
		bin = gotest.UpTo(s.dir) + bin
	}
	runs := 0
	run := func(tests []string, serve bool) (gotest.Run, bool, error) {
		runs++
		r, served, err := gotest.Result{}, false, error(nil)
		if serve {
			r, served, err = h.served(ctx, sb, s, bin, procs, id+1, tests, limit)
		}
		if !served && err == nil {
			r, err = gotest.RunIn(ctx, sb, s.dir, bin, env1, limit+time.Second,
				"-test.v=test2json", "-test.count=1", "-test.timeout", limit.String(), "-test.run", gotest.RunRegexp(tests))
		}
		if err != nil {
			return gotest.Run{}, served, err
		}
		tr := gotest.ParseChatty(r)
		if tr.TimedOut {
			h.st.timedOut.Add(1)
			h.st.spent("try-timed-out", r.Wall)
		}
		return tr, served, nil
	}
	first, served, err := run(t.FailToPass, true)
	if err != nil {
		return env.TryResult{}, runs - 1, err
	}
	failing := notPassed(t.FailToPass, first)
	if served && len(failing) < len(t.FailToPass) {
		h.st.confirmed.Add(1)
		if first, _, err = run(t.FailToPass, false); err != nil {
			return env.TryResult{}, runs - 1, err
		}
		failing = notPassed(t.FailToPass, first)
	}
	if len(failing) == len(t.FailToPass) || len(t.PassToPass) == 0 {
		return env.TryResult{Built: true, Failing: failing, AllPass: len(failing) == 0}, runs, nil
	}
	second, _, err := run(t.PassToPass, false)
	if err != nil {
		return env.TryResult{}, runs - 1, err
	}
	failing = append(failing, notPassed(t.PassToPass, second)...)
	return env.TryResult{Built: true, Failing: failing, AllPass: len(failing) == 0}, runs, nil
}

// tryReal runs the deciding tests with the candidate's file laid over the
// workspace by go test's -overlay: a real build.
func (h *Harness) tryReal(ctx context.Context, sb env.Sandbox, ws *env.Workspace, c env.Candidate, limit time.Duration) (env.TryResult, int, error) {
	t := ws.Task
	cur, err := currentFile(ctx, sb, ws, c.File)
	if err != nil {
		return env.TryResult{}, 0, err
	}
	edited, err := env.Splice(cur, c.Edits)
	if err != nil {
		return env.TryResult{}, 0, fmt.Errorf("candidate %d does not apply: %v", c.ID, err)
	}
	dst := ".frog/real/" + c.File
	if err := sb.WriteFile(ctx, dst, edited); err != nil {
		return env.TryResult{}, 0, err
	}
	ov, _ := json.Marshal(map[string]map[string]string{"Replace": {c.File: dst}})
	if err := sb.WriteFile(ctx, ".frog/real.json", ov); err != nil {
		return env.TryResult{}, 0, err
	}
	tr, err := h.goTestRun(ctx, sb, t, t.Tests(), limit, "-overlay", ".frog/real.json")
	if err != nil {
		return env.TryResult{}, 0, err
	}
	if !tr.Built {
		return env.TryResult{Built: false, Failing: t.Tests()}, 1, nil
	}
	failing := notPassed(t.Tests(), tr)
	return env.TryResult{Built: true, Failing: failing, AllPass: len(failing) == 0}, 1, nil
}

// parses reports whether the candidate's file still parses with it applied
// (a candidate that does not is no build at all).
func parses(ctx context.Context, sb env.Sandbox, ws *env.Workspace, c env.Candidate) (bool, error) {
	cur, err := currentFile(ctx, sb, ws, c.File)
	if err != nil {
		return false, err
	}
	edited, err := env.Splice(cur, c.Edits)
	if err != nil {
		return false, fmt.Errorf("candidate %d does not apply: %v", c.ID, err)
	}
	_, err = parser.ParseFile(token.NewFileSet(), c.File, edited, parser.SkipObjectResolution)
	return err == nil, nil
}

// currentFile is a file as the workspace holds it now.
func currentFile(ctx context.Context, sb env.Sandbox, ws *env.Workspace, f string) ([]byte, error) {
	if data, ok := ws.Changed()[f]; ok {
		return data, nil
	}
	return sb.ReadFile(ctx, f)
}
