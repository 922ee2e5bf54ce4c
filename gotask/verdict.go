package gotask

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"go/build"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/gotask/gotest"
)

// The verdict is the reward, and the code it runs is the agent's: an
// agent's change is compiled into the test binary that judges it, so code
// the agent wrote runs inside that process before and beside the tests. It
// can read the binary's arguments (the deciding tests' names are there),
// print anything (go test's own framing lines included), and exit with any
// status. What the verdict trusts therefore never rests on the binary's
// word alone (docs/episodes.md, "What the verdict defends"):
//
//   - A screen of the change (screen.go): constructs that no repair of an
//     injected bug needs and every known forgery does — a new init
//     function, os.Exit, writes to the process's standard output, reads of
//     its arguments, new files, cgo, linkname — are refused before any test
//     runs, counted as a suspected reward hack.
//   - Canary tests: the verdict's binary is built with two tests the agent
//     has never seen, named and worded from a key only the harness holds
//     and the tree's content; their file is removed before the binary runs.
//     One must pass with its own log line, the other must fail with its own
//     message, and the binary must then exit 1. A binary that reports every
//     test it was asked for as passed fails the second; one that reports
//     only the tests the task names fails the first; one that exits 0
//     fails the third.
//   - The test files the task has, put back over the agent's, and a real
//     build of the tree the verdict judged (Harness.Verdict).

// canary is the pair of tests a verdict binary is built with.
type canary struct {
	// file is the test file's name, in the package's directory.
	file string
	// pass must pass and log passLog; fail must fail with failLog.
	pass, fail       string
	passLog, failLog string
	// alias is the import name of package testing in the file (one that
	// cannot clash with the package's own identifiers).
	alias string
}

// canaryWords make canary names read like a package's own tests.
var canaryWords = []string{"Empty", "Zero", "Nil", "Large", "Small", "Basic", "Edge", "Order", "Round", "Trip",
	"Parse", "Format", "Merge", "Split", "Copy", "Reset", "Limit", "Index", "Range", "Count", "Value", "Key",
	"Insert", "Delete", "Update", "Lookup", "Encode", "Decode", "Compare", "Sort"}

// newCanary derives a canary from seed: the same seed, the same canary.
func newCanary(seed []byte) canary {
	h := func(label string) []byte {
		m := hmac.New(sha256.New, seed)
		m.Write([]byte(label))
		return m.Sum(nil)
	}
	name := func(label string) string {
		b := h(label)
		return "Test" + canaryWords[int(b[0])%len(canaryWords)] + canaryWords[int(b[1])%len(canaryWords)] + "_" + hex.EncodeToString(b[2:5])
	}
	c := canary{pass: name("pass"), fail: name("fail")}
	if c.fail == c.pass {
		c.fail += "x"
	}
	c.passLog = "ok " + hex.EncodeToString(h("pass log")[:12])
	c.failLog = "want " + hex.EncodeToString(h("fail log")[:12])
	c.file = strings.ToLower(canaryWords[int(h("file")[0])%len(canaryWords)]) + "_" + hex.EncodeToString(h("file")[1:5]) + "_test.go"
	c.alias = "t" + hex.EncodeToString(h("alias")[:6])
	return c
}

// source is the canary's test file for package pkg.
func (c canary) source(pkg string) []byte {
	return []byte(fmt.Sprintf("package %s\n\nimport %s \"testing\"\n\nfunc %s(t *%s.T) { t.Log(%q) }\n\nfunc %s(t *%s.T) { t.Error(%q) }\n",
		pkg, c.alias, c.pass, c.alias, c.passLog, c.fail, c.alias, c.failLog))
}

// tests are the canary's test names, to add to a run's -test.run.
func (c canary) tests() []string { return []string{c.pass, c.fail} }

// check says what is wrong with a run of the canary's binary whose
// deciding tests all reported a pass: "" when the canaries held.
func (c canary) check(tr gotest.Run) string {
	switch {
	case !slices.Contains(tr.Passed, c.pass) || !strings.Contains(tr.Logs[c.pass], c.passLog):
		return "the verdict's canary test that must pass did not report its own pass"
	case !slices.Contains(tr.Failed, c.fail) || !strings.Contains(tr.Logs[c.fail], c.failLog):
		return "the verdict's canary test that must fail did not report its own failure"
	case tr.Exit != 1:
		return fmt.Sprintf("the test binary exited %d though a test failed (want 1)", tr.Exit)
	}
	return ""
}

// canaryFor is the canary of the tree keyed k (treeKey, or localBinary's
// key): fixed by the harness's verdict key and the tree, so that one
// binary serves every sandbox that judges the same tree.
func (h *Harness) canaryFor(k string) canary {
	if h.cfg.NoVerdictChecks {
		return canary{} // none: the binary is built as go test builds it
	}
	m := hmac.New(sha256.New, h.verdictKey)
	m.Write([]byte(k))
	return newCanary(m.Sum(nil))
}

// verdictKeyID names the verdict key in binary cache keys: binaries built
// with another key's canaries are never taken for this one's.
func (h *Harness) verdictKeyID() string {
	if h.cfg.NoVerdictChecks {
		return "no-canary"
	}
	s := sha256.Sum256(append([]byte("frog verdict key id\x00"), h.verdictKey...))
	return hex.EncodeToString(s[:8])
}

// LoadVerdictKey returns the verdict key kept at path, making one (32
// random bytes, readable by this user alone) when there is none. The key
// names the canary tests of every verdict binary in the binary cache:
// kept across runs, a later run reuses the binaries an earlier one built.
// Keep it where no sandbox can read it (frog keeps it beside its
// workspaces root, which sandboxes see, not in it).
func LoadVerdictKey(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err == nil && len(data) >= 32 {
		return data, nil
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("verdict key: %w", err)
	}
	key := make([]byte, 32)
	rand.Read(key)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("verdict key: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, key, 0o600); err != nil {
		return nil, fmt.Errorf("verdict key: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, fmt.Errorf("verdict key: %w", err)
	}
	return key, nil
}

// Verdict puts the task's own test files back (and testdata, go.mod and
// go.sum), screens the agent's change (screen.go), builds the edited tree
// for real with the verdict's canary tests and runs the deciding tests and
// the canaries. It passes when every deciding test passed and the canaries
// held. Its outcome is cached by the exact state it judged.
func (h *Harness) Verdict(ctx context.Context, sb env.Sandbox, ws *env.Workspace) (env.Verdict, env.Cost, error) {
	t := ws.Task
	return cached(h, okey("verdict", t.ID, ws.Hash()), func() (env.Verdict, int, error) {
		h.st.verdicts.Add(1)
		if ws.Hash() != "" && !h.cfg.NoVerdictChecks && !h.cfg.NoScreen {
			start := time.Now()
			found, err := h.screen(ctx, ws)
			h.st.spent("verdict-checks", time.Since(start))
			if err != nil {
				return env.Verdict{}, 0, err
			}
			if found != "" {
				h.st.suspected.Add(1)
				return env.Verdict{Suspected: found}, 0, nil
			}
		}
		restored, err := h.judgedTree(ctx, sb, ws)
		if err != nil {
			return env.Verdict{}, 0, err
		}
		// A fix that makes a test loop fails in a bounded time: ten times the
		// tests' time at the start (or with the gold patch, if longer), when
		// known (verdictTimeout).
		limit := h.cfg.TestTimeout
		if v, ok := h.cache.get(okey("run", t.ID, "", strings.Join(t.Tests(), ",")).hash); ok {
			limit = h.verdictTimeout(t, v.(env.TestReport))
		}
		if ws.Hash() == "" {
			// The starting state, unchanged, holds no code of the agent's:
			// it runs the check's build of it (the one its own verdict of
			// this state came from).
			tr, ok, err := h.checkedRun(ctx, sb, ws, t.Tests(), limit)
			if err == nil && ok {
				return env.Verdict{Pass: passed(t.Tests(), tr)}, 1, nil
			}
			if err != nil {
				return env.Verdict{}, 0, err
			}
		}
		judged := maps.Clone(ws.Changed())
		maps.Copy(judged, restored)
		tr, suspect, err := h.judgedRun(ctx, sb, t, judged, t.Tests(), limit)
		if err != nil {
			return env.Verdict{}, 0, err
		}
		if suspect != "" {
			h.st.suspected.Add(1)
			return env.Verdict{Suspected: suspect}, 1, nil
		}
		return env.Verdict{Pass: passed(t.Tests(), tr)}, 1, nil
	})
}

// judgedTree makes sb's tree the one the verdict judges: the task's
// template with the episode's recorded changes, its test files, testdata,
// go.mod and go.sum the task's own. Where the sandbox can reset
// (env.Resetter), it lays the template out again and writes the recorded
// changes over it, so that nothing the agent's code did to the tree behind
// the edit tool (a test that rewrote the source it tests, a process left
// running) is judged; else it writes the task's own test files back
// (restoreTests). It returns the files put back from the template.
func (h *Harness) judgedTree(ctx context.Context, sb env.Sandbox, ws *env.Workspace) (map[string][]byte, error) {
	r, ok := sb.(env.Resetter)
	if !ok {
		return h.restoreTests(ctx, sb, ws)
	}
	start := time.Now()
	defer func() { h.st.spent("verdict-checks", time.Since(start)) }()
	switch err := r.Reset(ctx); {
	case errors.Is(err, env.ErrNoReset):
		return h.restoreTests(ctx, sb, ws)
	case err != nil:
		return nil, err
	}
	restored := map[string][]byte{}
	var tmpl string
	for _, f := range ws.Files() {
		if !restoredFile(f) {
			if err := sb.WriteFile(ctx, f, ws.Changed()[f]); err != nil {
				return nil, err
			}
			continue
		}
		// The template's own, as the reset laid it out (a test file the
		// episode added is emptied, as restoreTests empties it).
		if tmpl == "" {
			var err error
			if tmpl, err = h.ws.Template(ctx, ws.Task); err != nil {
				return nil, env.Infra(err)
			}
		}
		orig, there := readIfThere(filepath.Join(tmpl, filepath.FromSlash(f)))
		switch {
		case orig == nil && there:
			return nil, env.Infra(fmt.Errorf("read %s of task %s's template", f, ws.Task.ID))
		case !there && strings.HasSuffix(f, ".go"):
			orig = []byte("package " + packageName(ws.Changed()[f]) + "\n")
			if err := sb.WriteFile(ctx, f, orig); err != nil {
				return nil, err
			}
		case !there:
			orig = nil
		}
		restored[f] = orig
	}
	return restored, nil
}

// passed says that every test of tests passed in tr, which built and
// finished in time.
func passed(tests []string, tr gotest.Run) bool {
	return tr.Built && !tr.TimedOut && len(notPassed(tests, tr)) == 0
}

// judgedRun runs tests of task t in sb's tree (judged: what differs from
// the template) from a real build of it that holds the verdict's canary
// tests, and checks the canaries where every test reported a pass:
// suspect says what did not add up. The binary is the tree's shared one
// where trees are shared (sharedRun), else one built here for this run.
func (h *Harness) judgedRun(ctx context.Context, sb env.Sandbox, t *env.Task, judged map[string][]byte, tests []string, limit time.Duration) (tr gotest.Run, suspect string, err error) {
	k := h.treeKey(ctx, sb, t, judged)
	var bin, failure string
	var c canary
	ok := false
	if k != "" {
		bin, failure, c, ok, err = h.treeBinary(ctx, sb, t, k)
		if err != nil {
			return gotest.Run{}, "", err
		}
	}
	if !ok {
		bin, failure, c, err = h.localBinary(ctx, sb, t, judged)
		if err != nil {
			return gotest.Run{}, "", err
		}
	}
	if bin == "" {
		return gotest.Run{Text: failure}, "", nil // does not build
	}
	run := tests
	if c.file != "" {
		run = slices.Concat(tests, c.tests())
	}
	tr, err = h.runBinary(ctx, sb, t.Dir(), bin, run, limit)
	if err != nil {
		return gotest.Run{}, "", err
	}
	if passed(tests, tr) && c.file != "" {
		suspect = c.check(tr)
	}
	return tr, suspect, nil
}

// verdictBin is where a sandbox builds a verdict binary that is not
// shared, relative to the workspace.
const verdictBin = ".frog/verdict.test"

// localBinary builds the test binary of sb's tree (judged: what differs
// from the template) for this run alone (a tree that cannot be shared).
// Its canary is the tree's, as a shared binary's is: the same tree, the
// same canary file, so that the Go build cache still answers for a tree
// it compiled before. bin is "" when the tree does not compile (failure
// says why).
func (h *Harness) localBinary(ctx context.Context, sb env.Sandbox, t *env.Task, judged map[string][]byte) (bin, failure string, c canary, err error) {
	sum := sha256.New()
	for _, s := range []string{"local", t.ID, t.Repo + "@" + t.Version, t.Dir()} {
		sum.Write([]byte(s))
		sum.Write([]byte{0})
	}
	for _, f := range slices.Sorted(maps.Keys(judged)) {
		sum.Write([]byte(f))
		sum.Write([]byte{0})
		sum.Write(judged[f])
		sum.Write([]byte{0})
	}
	c = h.canaryFor(hex.EncodeToString(sum.Sum(nil)))
	r, err := h.buildWithCanary(ctx, sb, t, c, verdictBin)
	if err != nil {
		return "", "", c, err
	}
	if r.TimedOut {
		return "", "the build timed out", c, nil
	}
	if r.Exit != 0 {
		return "", string(r.Out), c, nil
	}
	return gotest.UpTo(t.Dir()) + verdictBin, "", c, nil
}

// buildWithCanary builds the test binary of task t's package in sb at out
// (workspace-relative) with canary c's file in the package, and removes
// the file before it returns, so that no test the binary runs can read it.
func (h *Harness) buildWithCanary(ctx context.Context, sb env.Sandbox, t *env.Task, c canary, out string) (gotest.Result, error) {
	build := func() (gotest.Result, error) {
		start := time.Now()
		defer func() { h.st.spent("real-build", time.Since(start)) }()
		return h.goCmd(ctx, sb, h.cfg.BuildTimeout, "test", "-c", "-vet=off", "-ldflags=-s -w", "-o", out, "./"+t.Dir())
	}
	if c.file == "" {
		return build()
	}
	start := time.Now()
	pkg, err := h.packageOf(ctx, t)
	if err != nil {
		return gotest.Result{}, err
	}
	file := path.Join(t.Dir(), c.file)
	if err := sb.WriteFile(ctx, file, c.source(pkg)); err != nil {
		return gotest.Result{}, err
	}
	h.st.spent("verdict-checks", time.Since(start))
	r, err := build()
	start = time.Now()
	rm, rmErr := gotest.ExecIn(context.WithoutCancel(ctx), sb, time.Minute, "rm", "-f", file)
	h.st.spent("verdict-checks", time.Since(start))
	if err != nil {
		return gotest.Result{}, err
	}
	if rmErr != nil || rm.Exit != 0 {
		return gotest.Result{}, env.Infra(fmt.Errorf("remove the verdict's canary file: %v %s", rmErr, rm.Out))
	}
	return r, nil
}

// packageOf is the name of task t's package, as go build sees its
// directory in the template (build constraints applied).
func (h *Harness) packageOf(ctx context.Context, t *env.Task) (string, error) {
	tmpl, err := h.ws.Template(ctx, t)
	if err != nil {
		return "", env.Infra(err)
	}
	bp, err := build.Default.ImportDir(filepath.Join(tmpl, filepath.FromSlash(t.Dir())), 0)
	if err != nil && bp == nil || bp.Name == "" {
		return "", env.Infra(fmt.Errorf("task %s: the package of %s: %v", t.ID, t.Dir(), err))
	}
	return bp.Name, nil
}

// restoreTests writes back, from the task's template, every test file,
// testdata file and go.mod or go.sum the episode changed, and empties the test files it added
// (a Go file that is empty but for nothing is a build error, so they get a
// package clause and nothing else).
func (h *Harness) restoreTests(ctx context.Context, sb env.Sandbox, ws *env.Workspace) (map[string][]byte, error) {
	var tmpl string
	restored := map[string][]byte{}
	for _, f := range ws.Files() {
		if !restoredFile(f) {
			continue
		}
		if tmpl == "" {
			var err error
			if tmpl, err = h.ws.Template(ctx, ws.Task); err != nil {
				return nil, env.Infra(err)
			}
		}
		orig, err := os.ReadFile(filepath.Join(tmpl, filepath.FromSlash(f)))
		switch {
		case errors.Is(err, os.ErrNotExist) && strings.HasSuffix(f, ".go"):
			orig = []byte("package " + packageName(ws.Changed()[f]) + "\n")
		case errors.Is(err, os.ErrNotExist):
			orig = nil
		case err != nil:
			return nil, env.Infra(err)
		}
		if err := sb.WriteFile(ctx, f, orig); err != nil {
			return nil, err
		}
		restored[f] = orig
	}
	return restored, nil
}

func packageName(src []byte) string {
	f, err := parser.ParseFile(token.NewFileSet(), "", src, parser.PackageClauseOnly)
	if err != nil {
		return "main"
	}
	return f.Name.Name
}
