package gotask

import (
	"crypto/rand"
	"sync"
	"sync/atomic"
	"time"

	"github.com/frognano/frog/env"
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
	// RestoreList turns the restore-stmt repairs on (statements put back,
	// borrowed from the package) and caps them in one list, the most
	// suspicious lines' first, after every other candidate; 0 leaves them
	// out. They are off by default until their ceiling is measured
	// (docs/training.md).
	RestoreList int
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
