package gotask

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/gotask/gotest"
	"github.com/frognano/frog/synth"
	"github.com/frognano/frog/synth/mutate"
)

// Harness is frog's env.Harness for Go tasks: go test -json for per-test
// verdicts, per-test cover profiles, the repair templates of synth/mutate
// for candidates, mutant schemata for tries (one build per candidate list,
// then a test run per try), and a real build of the edited tree, with the
// task's own test files put back, for the verdict.
//
// An outcome cache keyed by (task, workspace state, call) answers repeated
// calls: the episodes of one task's group mostly see the same states. The
// cache holds test outcomes only; a try never decides a reward, and the
// verdict it caches was reached by a real build of exactly that state.
// Harness is safe for concurrent use.
type Harness struct {
	ws  env.Workspaces
	cfg HarnessConfig

	cache    *outcomes
	st       harnessCounters
	building keyLocks
	// computing holds a lock per outcome being computed, so that the
	// episodes of a group that reach one state at once (its first run of
	// the tests, its coverage) wait for the first and take its answer.
	computing keyLocks
	// models are the token models of recent tasks' code (naturalness).
	models models
	// goldTime is, by task ID, the deciding tests' time with the gold
	// patch, measured by the task's check in this harness: how long a
	// fixed tree takes, which bounds a try tighter (tryTimeout).
	goldTime sync.Map
	// servers are the try servers running, by sandbox (serve.go).
	servers sync.Map
	// verdictKey names verdict binaries' canary tests (verdict.go).
	verdictKey []byte
	// tmplKeys are the tasks' template hashes, by task ID (templateKey).
	tmplKeys sync.Map
}

// keyLocks are mutexes by key, made on demand and dropped when free.
type keyLocks struct {
	mu sync.Mutex
	m  map[string]*keyLock
}

type keyLock struct {
	mu   sync.Mutex
	refs int
}

func (k *keyLocks) lock(key string) (unlock func()) {
	k.mu.Lock()
	if k.m == nil {
		k.m = map[string]*keyLock{}
	}
	l := k.m[key]
	if l == nil {
		l = &keyLock{}
		k.m[key] = l
	}
	l.refs++
	k.mu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		k.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(k.m, key)
		}
		k.mu.Unlock()
	}
}

// HarnessConfig tunes a Harness.
type HarnessConfig struct {
	// TestTimeout bounds one run of tests (go test's -timeout, a test
	// binary's -test.timeout); 2 minutes when zero.
	TestTimeout time.Duration
	// BuildTimeout bounds a build; 10 minutes when zero.
	BuildTimeout time.Duration
	// NoCache turns the outcome cache off; CacheEntries bounds it (100,000
	// when zero).
	NoCache      bool
	CacheEntries int
	// NoSchema makes every try a real build (go test with the candidate's
	// file laid over): the plain path schemata are measured against.
	NoSchema bool
	// NoServe starts a process for each schema try, where otherwise an
	// episode's tries are served by one process in its sandbox, when the
	// sandbox can start one (env.Starter) and the package has no TestMain
	// of its own (serve.go).
	NoServe bool
	// FlakeRuns is how many times more a task's check runs its
	// FAIL_TO_PASS tests with the bug, in one process, once they failed:
	// a task whose failing tests pass in any run is quarantined as flaky
	// (submitting it unchanged would sometimes be rewarded). 2 when zero;
	// negative turns it off.
	FlakeRuns int
	// TryProcs is the GOMAXPROCS of the test process of a schema try: 1
	// when zero, -1 for Go's default (the machine's cores). Episodes run
	// many at once, more than there are cores, so a try gets about a core
	// whatever it is given, and a Go process given more spins looking for
	// work and starts threads for the others (docs/episodes.md measures
	// it). Verdicts and run_tests keep Go's default: what the agent sees
	// and what is rewarded run as a user would run them.
	TryProcs int
	// BinCache is a directory of this machine where schema binaries are
	// kept once built, for every sandbox that can see it (env.HostPaths)
	// to run instead of building its own; "" keeps each in its sandbox.
	BinCache string
	// VerdictKey names the canary tests of verdict binaries (verdict.go);
	// keep it where no sandbox can read it, and the same across runs for
	// a later run to reuse the binaries in BinCache (LoadVerdictKey). A
	// random key of this harness's own when nil.
	VerdictKey []byte
	// NoVerdictChecks turns the verdict's screen and canaries off: for
	// measuring what they cost (frog bench tries), never for training.
	// NoScreen turns the screen alone off: for tests that show what the
	// canaries catch by themselves.
	NoVerdictChecks, NoScreen bool
}

var _ env.Harness = (*Harness)(nil)

// NewHarness returns a harness for tasks whose workspaces ws lays out.
func NewHarness(ws env.Workspaces, cfg HarnessConfig) *Harness {
	if cfg.TestTimeout <= 0 {
		cfg.TestTimeout = 2 * time.Minute
	}
	if cfg.BuildTimeout <= 0 {
		cfg.BuildTimeout = 10 * time.Minute
	}
	if cfg.CacheEntries <= 0 {
		cfg.CacheEntries = 100_000
	}
	if cfg.TryProcs == 0 {
		cfg.TryProcs = 1
	}
	if cfg.FlakeRuns == 0 {
		cfg.FlakeRuns = 2
	}
	key := cfg.VerdictKey
	if len(key) == 0 {
		key = make([]byte, 32)
		rand.Read(key)
	}
	return &Harness{ws: ws, cfg: cfg, cache: newOutcomes(cfg.CacheEntries), verdictKey: key}
}

// HarnessStats counts what a harness did, for summaries.
type HarnessStats struct {
	// Calls and Hits count the cacheable calls and those the outcome cache
	// answered; HitRate is their ratio.
	Calls   int64   `json:"calls"`
	Hits    int64   `json:"hits"`
	HitRate float64 `json:"hit_rate"`
	// Waited counts the hits that waited for another episode computing the
	// same outcome at the same time.
	Waited int64 `json:"waited"`
	// Executions counts test runs (binaries and go test); Builds the
	// schema builds; RealTries the tries that needed a real build.
	Executions int64 `json:"executions"`
	Builds     int64 `json:"schema_builds"`
	Tries      int64 `json:"tries"`
	RealTries  int64 `json:"real_tries"`
	// TryRuns counts the schema tries' runs of a test binary (one or two
	// a try: the failing tests, then the others when one was fixed).
	TryRuns int64 `json:"try_runs"`
	// Served counts the try runs a try server answered, ServerStarts the
	// servers started (one an episode and schema, and one after each try
	// that ended its process).
	Served       int64 `json:"try_runs_served"`
	ServerStarts int64 `json:"try_servers_started"`
	// Confirmed counts the served runs that showed progress and ran again
	// in a process of their own, whose answer stood.
	Confirmed int64 `json:"served_runs_confirmed"`
	// ServedEnded counts the served runs that ended their server (a
	// panic, os.Exit, a time-out): the next try starts another, and the
	// run, where a test had panicked in that server before, runs again
	// alone.
	ServedEnded int64 `json:"served_runs_ended"`
	Verdicts    int64 `json:"verdicts"`
	// Suspected counts the verdicts computed that refused a change or a
	// run as a suspected reward hack (verdict.go); each episode of such a
	// state counts in the run's reward_hack_suspected.
	Suspected int64 `json:"verdicts_suspected"`
	// RealBuilds counts the real builds (of verdicts, checks' gold runs and
	// run_tests) made into a test binary shared by the tree's content;
	// RealShared the runs that found the tree built already (by any task's
	// sandbox).
	RealBuilds int64 `json:"real_builds"`
	RealShared int64 `json:"real_shared"`
	// CoverBuilds counts the coverage test binaries built (a task's
	// check's, or a changed state's coverage).
	CoverBuilds int64 `json:"cover_builds"`
	// TimedOut counts the schema tries that ran out of time (a candidate
	// that makes a test loop): their time is Seconds["try-timed-out"].
	TimedOut int64 `json:"tries_timed_out"`
	// GoTests counts the go test runs (a build each, no binary kept).
	GoTests int64 `json:"go_test_runs"`
	// CoverShared and CoverAlone count the tests whose coverage was
	// measured in one process with the others (frog's TestMain) and in a
	// process of their own (a package with its own TestMain, a test the
	// shared process died in).
	CoverShared int64 `json:"cover_tests_shared"`
	CoverAlone  int64 `json:"cover_tests_alone"`
	// CandidatesSaved counts the candidate lists read from the binary
	// cache, where an earlier run of this frog executable left them.
	CandidatesSaved int64 `json:"candidate_lists_saved"`
	// Seconds is the time spent computing the answers of each kind of call
	// (the cache's misses; summed over concurrent episodes, so it can
	// exceed the wall time): run (run_tests), cover (coverage: its build
	// and a run per test), cover-build (of it), cand (candidates), try
	// (schema builds included), schema-build (of it), try-timed-out (the
	// tries that ran out of time), verdict (a real build and run),
	// real-build (a real build, within run or verdict), verdict-checks
	// (the verdict's screen of the change, and writing and removing its
	// canary file).
	Seconds map[string]float64 `json:"seconds,omitempty"`
}

type harnessCounters struct {
	calls, hits, waited, execs, builds, tries, realTries, verdicts     atomic.Int64
	realBuilds, realShared, timedOut, goTests, coverShared, coverAlone atomic.Int64
	candSaved, tryRuns, served, serverStarts, confirmed, servedEnded   atomic.Int64
	coverBuilds, suspected                                             atomic.Int64
	// nanos is the time computing each kind of call (run, cover, cand,
	// try, verdict, and schema-build within try), by kind.
	nanosMu sync.Mutex
	nanos   map[string]time.Duration
}

func (c *harnessCounters) spent(kind string, d time.Duration) {
	c.nanosMu.Lock()
	defer c.nanosMu.Unlock()
	if c.nanos == nil {
		c.nanos = map[string]time.Duration{}
	}
	c.nanos[kind] += d
}

// Stats reports the harness's counters.
func (h *Harness) Stats() HarnessStats {
	s := HarnessStats{Calls: h.st.calls.Load(), Hits: h.st.hits.Load(), Waited: h.st.waited.Load(), Executions: h.st.execs.Load(),
		Builds: h.st.builds.Load(), Tries: h.st.tries.Load(), RealTries: h.st.realTries.Load(), Verdicts: h.st.verdicts.Load(),
		RealBuilds: h.st.realBuilds.Load(), RealShared: h.st.realShared.Load(), TimedOut: h.st.timedOut.Load(), GoTests: h.st.goTests.Load(),
		CoverShared: h.st.coverShared.Load(), CoverAlone: h.st.coverAlone.Load(), CandidatesSaved: h.st.candSaved.Load(), TryRuns: h.st.tryRuns.Load(),
		Served: h.st.served.Load(), ServerStarts: h.st.serverStarts.Load(), Confirmed: h.st.confirmed.Load(), ServedEnded: h.st.servedEnded.Load(),
		CoverBuilds: h.st.coverBuilds.Load(), Suspected: h.st.suspected.Load()}
	if s.Calls > 0 {
		s.HitRate = float64(s.Hits) / float64(s.Calls)
	}
	h.st.nanosMu.Lock()
	defer h.st.nanosMu.Unlock()
	if len(h.st.nanos) > 0 {
		s.Seconds = make(map[string]float64, len(h.st.nanos))
		for k, d := range h.st.nanos {
			s.Seconds[k] = d.Seconds()
		}
	}
	return s
}

// cached answers key from the cache, or computes it with f and stores it.
func cached[T any](h *Harness, k outcomeKey, f func() (T, int, error)) (T, env.Cost, error) {
	h.st.calls.Add(1)
	if !h.cfg.NoCache {
		if v, ok := h.cache.get(k.hash); ok {
			h.st.hits.Add(1)
			return v.(T), env.Cost{Cached: true}, nil
		}
		unlock := h.computing.lock(k.hash)
		defer unlock()
		if v, ok := h.cache.get(k.hash); ok { // computed while this call waited
			h.st.hits.Add(1)
			h.st.waited.Add(1)
			return v.(T), env.Cost{Cached: true}, nil
		}
	}
	start := time.Now()
	v, n, err := f()
	h.st.spent(k.kind, time.Since(start))
	h.st.execs.Add(int64(n))
	if err == nil && !h.cfg.NoCache {
		h.cache.put(k.hash, v)
	}
	return v, env.Cost{Executions: n}, err
}

// outcomeKey names one outcome in the cache: the kind of call (run,
// cover, cand, try, verdict) and the hash of the call and its state.
type outcomeKey struct{ kind, hash string }

// okey is the key of a call of kind with parts (task, state, arguments).
func okey(kind string, parts ...string) outcomeKey {
	return outcomeKey{kind, key(append([]string{kind}, parts...)...)}
}

func key(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

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

var (
	failLine  = regexp.MustCompile(`^\s+([A-Za-z0-9_.\-]+\.go):([0-9]+): ?(.*)`)
	frameFile = regexp.MustCompile(`^\s+(/\S+\.go):([0-9]+)`)
)

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

// Coverage builds the package's tests with -cover and runs each named test
// alone with a cover profile.
func (h *Harness) Coverage(ctx context.Context, sb env.Sandbox, ws *env.Workspace, tests []string) (env.CoverageReport, env.Cost, error) {
	t := ws.Task
	if len(tests) == 0 {
		tests = t.Tests()
	}
	if err := checkTestNames(tests); err != nil {
		return env.CoverageReport{}, env.Cost{}, err
	}
	return cached(h, okey("cover", t.ID, ws.Hash(), strings.Join(tests, ",")), func() (env.CoverageReport, int, error) {
		dir := t.Dir()
		bin := gotest.UpTo(dir) + coverBin
		if p, ok := h.checkedCoverBin(ctx, sb, ws); ok {
			bin = p // built by the task's check
		} else {
			r, err := h.buildCover(ctx, sb, ws)
			if err != nil {
				return env.CoverageReport{}, 0, err
			}
			if r.Exit != 0 {
				return env.CoverageReport{}, 0, fmt.Errorf("the tests do not build with coverage: %s", gotest.FirstLines(string(r.Out), 8))
			}
		}
		rep := env.CoverageReport{Tests: map[string][]int{}, Passed: map[string]bool{}}
		index := map[env.Block]int{}
		runs, err := gotest.CoverTests(ctx, sb, dir, bin, ".frog/cov", gotest.UpTo(dir)+".frog/cov", tests, h.cfg.TestTimeout)
		if err != nil {
			return env.CoverageReport{}, 0, err
		}
		execs := 0
		for i, test := range tests {
			run := runs[i]
			if run.Ran {
				execs++
			}
			if run.Alone {
				h.st.coverAlone.Add(1)
			} else if run.Ran {
				h.st.coverShared.Add(1)
			}
			rep.Passed[test] = run.Ran && run.Exit == 0
			if !run.Profiled {
				continue // the binary died before writing its profile
			}
			var ix []int
			for _, b := range run.Blocks {
				eb := env.Block{File: path.Join(dir, b.File), Start: b.StartLine, End: b.EndLine}
				i, ok := index[eb]
				if !ok {
					i = len(rep.Blocks)
					index[eb] = i
					rep.Blocks = append(rep.Blocks, eb)
				}
				ix = append(ix, i)
			}
			slices.Sort(ix)
			rep.Tests[test] = slices.Compact(ix)
		}
		return rep, execs, nil
	})
}

// checkedCoverBin is the path in sb of the coverage binary the task's check
// built and shared (hostCoverBin), when ws is the task's starting state and
// the binary is there.
func (h *Harness) checkedCoverBin(ctx context.Context, sb env.Sandbox, ws *env.Workspace) (string, bool) {
	hostBin := h.hostCoverBin(ctx, sb, ws.Task)
	if hostBin == "" || ws.Hash() != "" {
		return "", false
	}
	if _, err := os.Stat(hostBin); err != nil {
		return "", false
	}
	return sb.(env.HostPaths).HostPath(hostBin)
}

// Candidates lists the repair templates of synth/mutate at lines, in the
// files as the workspace holds them. Lines outside Go files of the task's
// module are ignored.
func (h *Harness) Candidates(ctx context.Context, sb env.Sandbox, ws *env.Workspace, lines []env.Line) ([]env.Candidate, error) {
	t := ws.Task
	var lkey strings.Builder
	for _, l := range lines {
		fmt.Fprintf(&lkey, "%s:%d,", l.File, l.Line)
	}
	list, _, err := cached(h, okey("cand", t.ID, ws.Hash(), lkey.String()), func() ([]env.Candidate, int, error) {
		saved := h.savedCandidates(ctx, ws, lkey.String())
		if saved != "" {
			var out []env.Candidate
			if data, err := os.ReadFile(saved); err == nil && json.Unmarshal(data, &out) == nil {
				h.st.candSaved.Add(1)
				return out, 0, nil
			}
		}
		out, err := h.candidates(ctx, ws, lines)
		if err == nil && saved != "" {
			if data, err := json.Marshal(out); err == nil {
				writeShared(h.cfg.BinCache, saved, data, 0o444)
			}
		}
		return out, 0, err
	})
	return list, err
}

// savedCandidates is the file of the binary cache that keeps the candidate
// list at lines (lkey) of ws's task as it starts, made by this very frog
// executable (the templates and their features are its code): a later run
// on the same store reads it instead of parsing and type-checking the
// package again (a tenth of a second a task, about half of frog's own CPU
// time in a later run). "" where ws is not the starting state, the outcome
// cache is off, or there is no binary cache.
func (h *Harness) savedCandidates(ctx context.Context, ws *env.Workspace, lkey string) string {
	t := ws.Task
	if h.cfg.BinCache == "" || h.cfg.NoCache || ws.Hash() != "" {
		return ""
	}
	self := executableHash()
	tk, ok := h.templateKey(ctx, t)
	if self == "" || !ok {
		return ""
	}
	return filepath.Join(h.cfg.BinCache, key("cand", t.ID, tk, t.Repo+"@"+t.Version, lkey, self)+".cand.json")
}

// executableHash is the hash of the running executable's file, "" when it
// cannot be read.
var executableHash = sync.OnceValue(func() string {
	p, err := os.Executable()
	if err != nil {
		return ""
	}
	f, err := os.Open(p)
	if err != nil {
		return ""
	}
	defer f.Close()
	d := sha256.New()
	if _, err := io.Copy(d, f); err != nil {
		return ""
	}
	return hex.EncodeToString(d.Sum(nil))[:32]
})

// candidates computes the candidate list of Candidates.
func (h *Harness) candidates(ctx context.Context, ws *env.Workspace, lines []env.Line) ([]env.Candidate, error) {
	t := ws.Task
	tmpl, err := h.ws.Template(ctx, t)
	if err != nil {
		return nil, env.Infra(err)
	}
	byFile := map[string][]int{}
	var order []string
	for _, l := range lines {
		f := path.Clean(l.File)
		if !strings.HasSuffix(f, ".go") || strings.HasSuffix(f, "_test.go") || !filepath.IsLocal(f) {
			continue
		}
		if _, ok := byFile[f]; !ok {
			order = append(order, f)
		}
		byFile[f] = append(byFile[f], l.Line)
	}
	// Candidates come in the order of lines: gather per line first.
	perLine := map[env.Line][]env.Candidate{}
	lm := h.models.get(t.ID, tmpl)
	for _, f := range order {
		pkg, err := loadPackage(tmpl, ws, path.Dir(f))
		if err != nil {
			return nil, err
		}
		sf := pkg.Files[f]
		if sf == nil {
			continue
		}
		surprise := map[int]float64{}
		for _, r := range mutate.Repairs(pkg.Fset, sf.AST, sf.Src, pkg.info, byFile[f]) {
			l := env.Line{File: f, Line: firstHit(r.Line, r.EndLine, byFile[f])}
			s, ok := surprise[l.Line]
			if !ok {
				s = lm.Surprise(sf.Src, l.Line)
				surprise[l.Line] = s
			}
			perLine[l] = append(perLine[l], env.Candidate{File: f, Line: l.Line, Op: r.Op, Kind: r.Kind,
				Context: r.Context, Func: r.Func, Desc: r.Desc, Edits: slices.Clone(r.Edits), Affinity: r.Affinity, Local: r.Local,
				Natural: lm.Delta(sf.Src, r.Edits), Surprise: s})
		}
	}
	var out []env.Candidate
	seen := map[env.Line]bool{}
	for _, l := range lines {
		l.File = path.Clean(l.File)
		if seen[l] {
			continue
		}
		seen[l] = true
		for _, c := range perLine[l] {
			c.ID = len(out)
			out = append(out, c)
		}
	}
	return out, nil
}

// models caches the token models (mutate.LM) of the last few tasks'
// templates: a task's candidate lists share one.
type models struct {
	mu    sync.Mutex
	order []string
	m     map[string]*modelEntry
}

type modelEntry struct {
	once sync.Once
	lm   *mutate.LM
}

// maxModels bounds the models kept (one is some megabytes).
const maxModels = 8

// get is task id's model of its template tmpl's non-test Go code (the code
// as the task hands it over, bug included: never the fixed code), made on
// first use; nil if the template cannot be read.
func (ms *models) get(id, tmpl string) *mutate.LM {
	ms.mu.Lock()
	if ms.m == nil {
		ms.m = map[string]*modelEntry{}
	}
	e := ms.m[id]
	if e == nil {
		e = &modelEntry{}
		ms.m[id] = e
		ms.order = append(ms.order, id)
		if len(ms.order) > maxModels {
			delete(ms.m, ms.order[0])
			ms.order = ms.order[1:]
		}
	}
	ms.mu.Unlock()
	e.once.Do(func() { e.lm = moduleModel(tmpl) })
	return e.lm
}

// moduleModel counts the non-test Go files of the module at dir (vendored,
// testdata and hidden directories left out), up to 16 MB of them.
func moduleModel(dir string) *mutate.LM {
	var srcs [][]byte
	total := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		n := d.Name()
		if d.IsDir() {
			if p != dir && (n == "vendor" || n == "testdata" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") || total > 16<<20 {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		total += len(data)
		srcs = append(srcs, data)
		return nil
	})
	if err != nil {
		return nil
	}
	return mutate.NewLM(srcs)
}

func firstHit(lo, hi int, lines []int) int {
	for _, l := range lines {
		if lo <= l && l <= hi {
			return l
		}
	}
	return lo
}

// typedPackage is one package of a workspace, parsed and (best effort)
// type-checked.
type typedPackage struct {
	*gotest.Package
	info *types.Info
}

// loadPackage parses the non-test Go files of directory dir (module
// relative) as the workspace holds them: the task's template with the
// episode's changes laid over.
func loadPackage(tmpl string, ws *env.Workspace, dir string) (*typedPackage, error) {
	files := map[string][]byte{}
	entries, err := os.ReadDir(filepath.Join(tmpl, filepath.FromSlash(dir)))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, env.Infra(err)
	}
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(tmpl, filepath.FromSlash(dir), n))
		if err != nil {
			return nil, env.Infra(err)
		}
		files[path.Join(dir, n)] = data
	}
	for f, data := range ws.Changed() {
		if path.Dir(f) == dir && strings.HasSuffix(f, ".go") && !strings.HasSuffix(f, "_test.go") {
			files[f] = data
		}
	}
	ps, err := parseSources(dir, files)
	if err != nil {
		return nil, err
	}
	var asts []*ast.File
	for _, n := range slices.Sorted(maps.Keys(ps.Files)) {
		asts = append(asts, ps.Files[n].AST)
	}
	info, _ := mutate.Check(ps.Fset, dir, asts, importer.Default())
	return &typedPackage{Package: ps, info: info}, nil
}

// parseSources parses a package's non-test files from memory (paths module
// relative, all in dir); a file that does not parse is the agent's mistake.
func parseSources(dir string, files map[string][]byte) (*gotest.Package, error) {
	ps := &gotest.Package{Dir: strings.TrimPrefix(path.Clean(dir), "./"), Fset: token.NewFileSet(), Files: map[string]*gotest.File{}}
	if ps.Dir == "" {
		ps.Dir = "."
	}
	for _, r := range slices.Sorted(maps.Keys(files)) {
		src := files[r]
		f, err := parser.ParseFile(ps.Fset, r, src, parser.ParseComments)
		if err != nil {
			return nil, fmt.Errorf("%s does not parse: %v", r, err)
		}
		if ps.Name == "" || ps.Name == "main" {
			ps.Name = f.Name.Name
		}
		ps.Files[r] = &gotest.File{Src: src, AST: f, Tok: ps.Fset.File(f.Pos()), Uses: gotest.ImportUses(f)}
		ps.Lines += strings.Count(string(src), "\n")
	}
	if len(ps.Files) == 0 {
		return nil, fmt.Errorf("no Go files in %s", dir)
	}
	return ps, nil
}

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

func candKey(c env.Candidate) string {
	data, _ := json.Marshal(struct {
		F string
		E []env.Edit
	}{c.File, c.Edits})
	return string(data)
}

// trySchema is a schema binary of one candidate list, built in a sandbox:
// its metadata lives beside it there, so any episode's harness call finds it.
type trySchema struct {
	key string
	bin string
	dir string
	// Bad are the candidate IDs the schema could not hold.
	Bad map[int]bool `json:"bad"`
	// Serve says the binary has frog's serving TestMain (serve.go).
	Serve bool `json:"serve,omitempty"`
}

func (s *trySchema) holds(id int) bool { return !s.Bad[id] }

// share copies a schema binary built in sb to the host cache, binary first,
// each under a temporary name and renamed, so that a reader finds a whole
// binary or none. Failing to share only costs a later sandbox a build.
func (h *Harness) share(ctx context.Context, sb env.Sandbox, s *trySchema, hostBin, hostMeta string, meta []byte) {
	bin, err := sb.ReadFile(ctx, s.bin)
	switch {
	case err == nil:
		if !writeShared(h.cfg.BinCache, hostBin, bin, 0o555) {
			return
		}
	case !allBad(s):
		return // no binary to share
	}
	writeShared(h.cfg.BinCache, hostMeta, meta, 0o444)
}

// writeShared writes data to dst in directory dir (made if missing) with
// mode, whole or not at all: a temporary file renamed into place.
func writeShared(dir, dst string, data []byte, mode os.FileMode) bool {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false
	}
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return false
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil || f.Chmod(mode) != nil || f.Close() != nil {
		f.Close()
		return false
	}
	return os.Rename(f.Name(), dst) == nil
}

func allBad(s *trySchema) bool {
	for _, b := range s.Bad {
		if !b {
			return false
		}
	}
	return true
}

// schemaFor builds the schema binary of list in sb, once per sandbox and
// list: every candidate is one mutant (id = candidate ID + 1); candidates
// the schema cannot hold (edits outside a function body, build errors
// attributed to them) are tried by real builds.
func (h *Harness) schemaFor(ctx context.Context, sb env.Sandbox, ws *env.Workspace, list []env.Candidate, lkey string) (*trySchema, error) {
	t := ws.Task
	tk, named := h.templateKey(ctx, t)
	skey := key(t.ID, tk, ws.Hash(), lkey)
	s := &trySchema{key: lkey, bin: ".frog/try-" + skey[:16] + ".test", Bad: map[int]bool{}, dir: t.Dir()}
	meta := ".frog/try-" + skey[:16] + ".json"
	hp, _ := sb.(env.HostPaths)
	shared := h.cfg.BinCache != "" && hp != nil && named // a template that cannot be named shares nothing
	hostBin, hostMeta := filepath.Join(h.cfg.BinCache, skey+".test"), filepath.Join(h.cfg.BinCache, skey+".json")
	if shared {
		// One build at a time per schema: concurrent episodes of one task
		// wait for the first and run its binary.
		unlock := h.building.lock(skey)
		defer unlock()
		if data, err := os.ReadFile(hostMeta); err == nil && json.Unmarshal(data, s) == nil {
			if p, ok := hp.HostPath(hostBin); ok {
				s.bin = p
				return s, nil // built once for every sandbox of this state
			}
		}
	}
	if data, err := sb.ReadFile(ctx, meta); err == nil && json.Unmarshal(data, s) == nil {
		return s, nil // built by an earlier try of this episode
	} else if errors.Is(err, env.ErrInfra) || ctx.Err() != nil {
		return nil, err
	}
	done := func() (*trySchema, error) {
		data, err := json.Marshal(s)
		if err != nil {
			return nil, err
		}
		if err := sb.WriteFile(ctx, meta, data); err != nil {
			return nil, err
		}
		if shared {
			h.share(ctx, sb, s, hostBin, hostMeta, data)
		}
		return s, nil
	}
	tmpl, err := h.ws.Template(ctx, t)
	if err != nil {
		return nil, env.Infra(err)
	}
	byDir := map[string]bool{}
	for _, c := range list {
		byDir[path.Dir(c.File)] = true
	}
	if len(byDir) != 1 || !byDir[path.Clean(t.Dir())] {
		// Candidates outside the tests' package: every try is a real build.
		for _, c := range list {
			s.Bad[c.ID] = true
		}
		return done()
	}
	pkg, err := loadPackage(tmpl, ws, t.Dir())
	if err != nil {
		return nil, err
	}
	live := map[int]bool{}
	for _, c := range list {
		// A candidate that does not parse would only break the build.
		sf := pkg.Files[c.File]
		edited, err := env.Splice(sf.SrcOrNil(), c.Edits)
		if sf == nil || err != nil {
			s.Bad[c.ID] = true
			continue
		}
		if _, err := parser.ParseFile(token.NewFileSet(), c.File, edited, parser.SkipObjectResolution); err != nil {
			s.Bad[c.ID] = true
			continue
		}
		live[c.ID] = true
	}
	for attempt := 0; ; attempt++ {
		var muts []gotest.Mutant
		for _, c := range list {
			if live[c.ID] {
				muts = append(muts, gotest.Mutant{ID: c.ID + 1, File: c.File, Edits: slices.Clone(c.Edits)})
			}
		}
		if len(muts) == 0 {
			break
		}
		sc, bad := pkg.Build(muts)
		for id := range bad {
			s.Bad[id-1], live[id-1] = true, false
		}
		if len(bad) > 0 {
			continue
		}
		s.Serve = addServeMain(sc, tmpl, t.Dir(), pkg.Name)
		ov, err := gotest.WriteOverlay(ctx, sb, sc)
		if err != nil {
			return nil, err
		}
		h.st.builds.Add(1)
		start := time.Now()
		r, err := h.goCmd(ctx, sb, h.cfg.BuildTimeout, "test", "-c", "-vet=off", "-gcflags=-e", "-ldflags=-s -w", "-o", s.bin, "-overlay", ov, "./"+t.Dir())
		h.st.spent("schema-build", time.Since(start))
		if err != nil {
			return nil, err
		}
		if r.Exit == 0 && !r.TimedOut {
			break
		}
		blamed, unexplained := gotest.Attribute(sc, string(r.Out))
		if unexplained || attempt >= 4 {
			for id := range live {
				if live[id] {
					s.Bad[id] = true
				}
			}
			break
		}
		for id := range blamed {
			s.Bad[id-1], live[id-1] = true, false
		}
	}
	return done()
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

func notPassed(tests []string, tr gotest.Run) []string {
	var out []string
	for _, t := range tests {
		if !slices.Contains(tr.Passed, t) {
			out = append(out, t)
		}
	}
	return out
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

// goCmd runs the go command at the workspace root of sb, offline.
func (h *Harness) goCmd(ctx context.Context, sb env.Sandbox, timeout time.Duration, args ...string) (gotest.Result, error) {
	var b strings.Builder
	b.WriteString("exec env")
	for _, a := range slices.Concat(gotest.Env, []string{"go"}, args) {
		b.WriteString(" " + gotest.ShellQuote(a))
	}
	return gotest.ExecIn(ctx, sb, timeout, "sh", "-c", b.String())
}

// hostCoverBin is where the coverage test binary of task t's starting
// state is shared with the sandboxes of sb's kind ("" when it cannot be).
func (h *Harness) hostCoverBin(ctx context.Context, sb env.Sandbox, t *env.Task) string {
	if _, ok := sb.(env.HostPaths); !ok || h.cfg.BinCache == "" {
		return ""
	}
	tk, ok := h.templateKey(ctx, t)
	if !ok {
		return ""
	}
	return filepath.Join(h.cfg.BinCache, key(t.ID, tk, t.Repo+"@"+t.Version, t.Dir(), runtime.Version(), "cover-count")+".test")
}

// templateHashes is what a Workspaces says of a template's content
// (synth/source checks it against what it recorded when it made it).
type templateHashes interface {
	TemplateHash(ctx context.Context, t *env.Task) (string, error)
}

// templateKey names task t's template by its content in the keys of what
// the binary cache keeps of the task (its coverage binary, schemata,
// candidate lists): a later run whose template was made again, or
// differs, finds none of what an earlier template's tasks left. It is
// asked once per task and harness; ok is false where the template could
// not be hashed (share nothing then). Workspaces that do not hash their
// templates give "".
func (h *Harness) templateKey(ctx context.Context, t *env.Task) (string, bool) {
	th, ok := h.ws.(templateHashes)
	if !ok {
		return "", true
	}
	if v, ok := h.tmplKeys.Load(t.ID); ok {
		return v.(string), true
	}
	k, err := th.TemplateHash(ctx, t)
	if err != nil {
		return "", false
	}
	h.tmplKeys.Store(t.ID, k)
	return k, true
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

// coverBin is where a sandbox's coverage test binary is built, relative
// to the workspace.
const coverBin = ".frog/cover.test"

// buildCover builds the coverage test binary of ws's package at
// coverBin, with frog's TestMain (coverTests) unless the package has its
// own.
func (h *Harness) buildCover(ctx context.Context, sb env.Sandbox, ws *env.Workspace) (gotest.Result, error) {
	defer func(start time.Time) { h.st.spent("cover-build", time.Since(start)) }(time.Now())
	h.st.coverBuilds.Add(1)
	pkg := ""
	if src, err := currentFile(ctx, sb, ws, ws.Task.File); err == nil {
		pkg = packageName(src)
	}
	write := func(rel string, data []byte) error { return sb.WriteFile(ctx, rel, data) }
	goCmd := func(args ...string) (gotest.Result, error) { return h.goCmd(ctx, sb, h.cfg.BuildTimeout, args...) }
	return gotest.BuildCoverBinary(write, goCmd, "./"+ws.Task.Dir(), pkg, coverBin)
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
