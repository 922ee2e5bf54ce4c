package actors

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/rs/zerolog"
	"go.uber.org/goleak"

	"github.com/frognano/frog/curriculum"
	"github.com/frognano/frog/env"
	envsim "github.com/frognano/frog/env/sim"
	"github.com/frognano/frog/policy"
	policysim "github.com/frognano/frog/policy/sim"
	"github.com/frognano/frog/synth"
	synthsim "github.com/frognano/frog/synth/sim"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

type simSetup struct {
	seed       uint64
	faultRate  float64
	timeScale  float64
	curriculum curriculum.Curriculum
	skill      float64
}

// simDeps wires the simulated parts of a run.
func simDeps(t testing.TB, s simSetup) (Deps, *envsim.Provider, *policysim.Learner) {
	t.Helper()
	cfg := envsim.DefaultConfig()
	cfg.Seed, cfg.FaultRate, cfg.TimeScale = s.seed, s.faultRate, s.timeScale
	prov, err := envsim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cur := s.curriculum
	if cur == nil {
		if cur, err = curriculum.NewTarget(0.5, 0, 0.01); err != nil {
			t.Fatal(err)
		}
	}
	oracle := policysim.NewOracle()
	l := policysim.NewLearner(s.skill, 0.001, s.seed, oracle)
	src := toldSource{synthsim.New(s.seed, 0.5), oracle}
	return Deps{Provider: prov, Learner: l, Source: src, Curriculum: cur, Log: zerolog.Nop()}, prov, l
}

// toldSource tells the simulated agent's oracle every task it serves.
type toldSource struct {
	synth.Source
	oracle *policysim.Oracle
}

func (s toldSource) Tasks(ctx context.Context, n int, d float64) ([]env.Task, error) {
	tasks, err := s.Source.Tasks(ctx, n, d)
	for i := range tasks {
		s.oracle.Add(tasks[i].ID, policysim.SimFix(&tasks[i]))
	}
	return tasks, err
}

func testConfig(episodes int64, concurrency int) Config {
	c := DefaultConfig()
	c.Episodes, c.Concurrency = episodes, concurrency
	return c
}

func checkAccounting(t testing.TB, sum Summary, want int64) {
	t.Helper()
	e := sum.Episodes
	if !e.Accounted || e.Admitted != e.Completed+e.FailedInfra+e.Cancelled {
		t.Errorf("accounting: admitted %d != completed %d + failed_infra %d + cancelled %d", e.Admitted, e.Completed, e.FailedInfra, e.Cancelled)
	}
	if want >= 0 && e.Admitted != want {
		t.Errorf("admitted %d episodes, want %d", e.Admitted, want)
	}
	if sum.Sandbox.Live != 0 || sum.Sandbox.Opened != sum.Sandbox.Closed {
		t.Errorf("sandboxes leaked: opened %d, closed %d", sum.Sandbox.Opened, sum.Sandbox.Closed)
	}
	if sum.Learner.Results != e.Admitted {
		t.Errorf("learner got %d results for %d admitted episodes", sum.Learner.Results, e.Admitted)
	}
}

func TestAccounting(t *testing.T) {
	tests := []struct {
		episodes    int64
		concurrency int
		groupSize   int
		faultRate   float64
		maxAttempts int
	}{
		{episodes: 1, concurrency: 1, groupSize: 1},
		{episodes: 101, concurrency: 7, groupSize: 3},
		{episodes: 1000, concurrency: 100, groupSize: 8, faultRate: 0.2, maxAttempts: 3},
		{episodes: 1000, concurrency: 1000, groupSize: 8, faultRate: 0.5, maxAttempts: 1},
		{episodes: 2000, concurrency: 64, groupSize: 16, faultRate: 0.9, maxAttempts: 2},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("n%d_c%d_g%d_f%v", tt.episodes, tt.concurrency, tt.groupSize, tt.faultRate), func(t *testing.T) {
			deps, _, _ := simDeps(t, simSetup{seed: 3, faultRate: tt.faultRate})
			cfg := testConfig(tt.episodes, tt.concurrency)
			cfg.GroupSize = tt.groupSize
			if tt.maxAttempts > 0 {
				cfg.MaxAttempts = tt.maxAttempts
			}
			sum, err := Run(context.Background(), cfg, deps)
			if err != nil {
				t.Fatal(err)
			}
			checkAccounting(t, sum, tt.episodes)
			if tt.faultRate == 0 && sum.Episodes.FailedInfra != 0 {
				t.Errorf("failed_infra %d without faults", sum.Episodes.FailedInfra)
			}
		})
	}
}

// faultLedger wraps a provider and records, per attempt, whether its sandbox
// suffered an infrastructure fault and what its last test run said.
type faultLedger struct {
	env.Provider
	mu      sync.Mutex
	faulted map[[2]uint64]bool
	verdict map[[2]uint64]bool // tests passed
}

func newLedger(p env.Provider) *faultLedger {
	return &faultLedger{Provider: p, faulted: map[[2]uint64]bool{}, verdict: map[[2]uint64]bool{}}
}

func (l *faultLedger) Open(ctx context.Context, o env.OpenOptions) (env.Sandbox, error) {
	key := [2]uint64{o.Episode, uint64(o.Attempt)}
	sb, err := l.Provider.Open(ctx, o)
	if err != nil {
		l.mu.Lock()
		l.faulted[key] = true
		l.mu.Unlock()
		return nil, err
	}
	return &ledgerSandbox{Sandbox: sb, l: l, key: key, task: o.Task}, nil
}

type ledgerSandbox struct {
	env.Sandbox
	l    *faultLedger
	key  [2]uint64
	task *env.Task
}

func (s *ledgerSandbox) note(err error) {
	if errors.Is(err, env.ErrInfra) {
		s.l.mu.Lock()
		s.l.faulted[s.key] = true
		s.l.mu.Unlock()
	}
}

func (s *ledgerSandbox) Exec(ctx context.Context, o env.ExecOptions) (env.ExecResult, error) {
	r, err := s.Sandbox.Exec(ctx, o)
	s.note(err)
	if err == nil && cmp.Equal(o.Cmd, s.task.TestCmd) {
		s.l.mu.Lock()
		s.l.verdict[s.key] = r.ExitCode == 0
		s.l.mu.Unlock()
	}
	return r, err
}

func (s *ledgerSandbox) ReadFile(ctx context.Context, p string) ([]byte, error) {
	b, err := s.Sandbox.ReadFile(ctx, p)
	s.note(err)
	return b, err
}

func (s *ledgerSandbox) WriteFile(ctx context.Context, p string, d []byte) error {
	err := s.Sandbox.WriteFile(ctx, p, d)
	s.note(err)
	return err
}

// recordingLearner wraps a learner and keeps every trajectory it learns from,
// with the learner's version at the time.
type recordingLearner struct {
	policy.Learner
	mu      sync.Mutex
	version int64
	seen    []*env.Trajectory
	ages    []int64
}

func (r *recordingLearner) Update(ctx context.Context, batch []policy.Group) (policy.Policy, policy.UpdateStats, error) {
	r.mu.Lock()
	for _, g := range batch {
		for _, tr := range g.Trajectories {
			r.seen = append(r.seen, tr)
			r.ages = append(r.ages, r.version-tr.MinVersion())
		}
	}
	r.version++
	r.mu.Unlock()
	return r.Learner.Update(ctx, batch)
}

func TestInfraFaultsAreNeverAgentFailures(t *testing.T) {
	for _, inline := range []bool{true, false} {
		t.Run(fmt.Sprint("inline=", inline), func(t *testing.T) { testInfraFaults(t, inline) })
	}
}

func testInfraFaults(t *testing.T, inline bool) {
	deps, prov, _ := simDeps(t, simSetup{seed: 7, faultRate: 0.2})
	ledger := newLedger(deps.Provider)
	rec := &recordingLearner{Learner: deps.Learner}
	deps.Provider, deps.Learner = ledger, rec
	if inline {
		deps.Provider = inlineOnly{ledger}
	}
	cfg := testConfig(4000, 200)
	sum, err := Run(context.Background(), cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	checkAccounting(t, sum, 4000)
	e := sum.Episodes
	st := prov.Stats()
	faults := st.Faults["crash"] + st.Faults["hang"] + st.Faults["slow_start"]
	if faults == 0 || e.Retries == 0 {
		t.Fatalf("no faults injected (%d) or no retries (%d): the test proves nothing", faults, e.Retries)
	}
	// Every attempt either completed or was ended by exactly one fault.
	if got, want := e.Admitted+e.Retries, e.Completed+faults; got != want {
		t.Errorf("attempts: admitted+retries = %d, completed+faults = %d", got, want)
	}
	if e.FailedInfra == 0 {
		t.Logf("no episode ran out of retries (faults %d)", faults)
	}
	checkLearnedOnlyCleanAttempts(t, ledger, rec, sum)
	if sum.Scheduler.Restarts != e.Retries {
		t.Errorf("supervisor restarts %d, retries %d", sum.Scheduler.Restarts, e.Retries)
	}
}

// checkLearnedOnlyCleanAttempts proves that no trajectory the learner used
// came from an attempt that suffered an infrastructure fault, that every
// reward is what that attempt's own tests said, and that every completed
// episode was either learned from or dropped as stale.
func checkLearnedOnlyCleanAttempts(t *testing.T, ledger *faultLedger, rec *recordingLearner, sum Summary) {
	t.Helper()
	ledger.mu.Lock()
	defer ledger.mu.Unlock()
	for _, tr := range rec.seen {
		key := [2]uint64{tr.Episode, uint64(tr.Attempt)}
		if ledger.faulted[key] {
			t.Fatalf("episode %d attempt %d: learned from an attempt that suffered an infrastructure fault", tr.Episode, tr.Attempt)
		}
		if passed := ledger.verdict[key]; passed != (tr.Reward == 1) {
			t.Fatalf("episode %d attempt %d: reward %v but its tests passed=%v", tr.Episode, tr.Attempt, tr.Reward, passed)
		}
	}
	if got, want := int64(len(rec.seen))+sum.Learner.StaleDropped, sum.Episodes.Completed; got != want {
		t.Errorf("learned %d + dropped stale %d trajectories, want the %d completed episodes", len(rec.seen), sum.Learner.StaleDropped, want)
	}
}

// crashFirst is a provider whose first attempt of every episode crashes at
// its first operation, and which panics on open for one episode.
type crashFirst struct {
	env.Provider
	panicOn uint64
}

func (c crashFirst) Open(ctx context.Context, o env.OpenOptions) (env.Sandbox, error) {
	if o.Episode == c.panicOn && o.Attempt == 0 {
		panic("backend bug")
	}
	sb, err := c.Provider.Open(ctx, o)
	if err != nil || o.Attempt > 0 {
		return sb, err
	}
	return crashed{sb}, nil
}

type crashed struct{ env.Sandbox }

func (crashed) ReadFile(context.Context, string) ([]byte, error) {
	return nil, env.Infra(errors.New("container died"))
}

func TestSupervisorRestartsEpisodeAfterSandboxCrash(t *testing.T) {
	for _, inline := range []bool{true, false} {
		t.Run(fmt.Sprint("inline=", inline), func(t *testing.T) { testSupervisorRestarts(t, inline) })
	}
}

func testSupervisorRestarts(t *testing.T, inline bool) {
	deps, _, _ := simDeps(t, simSetup{seed: 1})
	deps.Provider = crashFirst{Provider: deps.Provider, panicOn: 5}
	if inline {
		deps.Provider = inlineOnly{deps.Provider}
	}
	cfg := testConfig(50, 10)
	sum, err := Run(context.Background(), cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	checkAccounting(t, sum, 50)
	e := sum.Episodes
	if e.Completed != 50 || e.FailedInfra != 0 {
		t.Errorf("completed %d, failed_infra %d; want every episode completed on its second attempt", e.Completed, e.FailedInfra)
	}
	if e.Retries != 50 || sum.Scheduler.Restarts != 50 {
		t.Errorf("retries %d, supervisor restarts %d; want 50 of each", e.Retries, sum.Scheduler.Restarts)
	}
}

// runnerOnly hides a provider's env.Immediate, forcing runner goroutines.
type runnerOnly struct{ env.Provider }

// inlineOnly declares a wrapper over a never-blocking provider (the sim at
// time scale 0) never blocking too: its episodes step inline.
type inlineOnly struct{ env.Provider }

func (inlineOnly) Immediate() bool { return true }

// panicky is a policy that panics on every batch.
type panicky struct{}

func (panicky) Act(context.Context, []env.Observation, []env.Action) error { panic("model bug") }

type panickyLearner struct{ policy.Learner }

func (panickyLearner) Policy() policy.Policy { return panicky{} }

func TestPolicyPanicIsAnInfraFault(t *testing.T) {
	deps, _, _ := simDeps(t, simSetup{seed: 1})
	deps.Learner = panickyLearner{deps.Learner}
	sum, err := Run(context.Background(), testConfig(20, 4), deps)
	if err != nil {
		t.Fatal(err)
	}
	checkAccounting(t, sum, 20)
	if sum.Episodes.FailedInfra != 20 || sum.PolicyServer.Errors == 0 {
		t.Errorf("got %+v, policy server errors %d; want every episode failed_infra", sum.Episodes, sum.PolicyServer.Errors)
	}
}

func TestRetriesRunOut(t *testing.T) {
	deps, _, _ := simDeps(t, simSetup{seed: 1, faultRate: 1})
	cfg := testConfig(40, 8)
	cfg.MaxAttempts = 3
	sum, err := Run(context.Background(), cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	checkAccounting(t, sum, 40)
	if e := sum.Episodes; e.FailedInfra != 40 || e.Completed != 0 || e.Retries != 80 {
		t.Errorf("got %+v; want 40 infra failures after 2 retries each", e)
	}
	if sum.Learner.Updates != 0 || sum.Learner.Trajectories != 0 {
		t.Errorf("learner learned from infrastructure failures: %+v", sum.Learner)
	}
}

// straggler holds one episode's first sandbox operation until the rest of
// the run has moved the learner several versions on.
type straggler struct {
	env.Provider
	episode uint64
	release chan struct{}
}

func (s straggler) Open(ctx context.Context, o env.OpenOptions) (env.Sandbox, error) {
	sb, err := s.Provider.Open(ctx, o)
	if err != nil || o.Episode != s.episode {
		return sb, err
	}
	return held{Sandbox: sb, release: s.release}, nil
}

type held struct {
	env.Sandbox
	release chan struct{}
}

func (h held) WriteFile(ctx context.Context, p string, d []byte) error {
	select {
	case <-h.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	return h.Sandbox.WriteFile(ctx, p, d)
}

func TestStalenessBound(t *testing.T) {
	for _, maxStale := range []int{0, 1, 3} {
		t.Run(fmt.Sprint("max", maxStale), func(t *testing.T) {
			deps, _, _ := simDeps(t, simSetup{seed: 2})
			release := make(chan struct{})
			deps.Provider = straggler{Provider: deps.Provider, episode: 3, release: release}
			rec := &recordingLearner{Learner: deps.Learner}
			deps.Learner = rec
			// Release the straggler once it is too stale, or after a while:
			// with a bound of 0 (synchronous RL) its open group holds every
			// batch back until it ends, as a stuck sandbox would until its
			// timeout.
			var once sync.Once
			free := func() { once.Do(func() { close(release) }) }
			timer := time.AfterFunc(2*time.Second, free)
			defer timer.Stop()
			var updates atomic.Int64
			deps.OnUpdate = func(u UpdateRecord) {
				if updates.Add(1) == int64(maxStale)+3 {
					free()
				}
			}
			cfg := testConfig(3000, 64)
			cfg.GroupSize, cfg.GroupsPerUpdate, cfg.MaxStaleness = 4, 4, maxStale
			sum, err := Run(context.Background(), cfg, deps)
			if err != nil {
				t.Fatal(err)
			}
			checkAccounting(t, sum, 3000)
			if sum.Learner.MaxStalenessSeen > int64(maxStale) {
				t.Errorf("max staleness seen %d > bound %d", sum.Learner.MaxStalenessSeen, maxStale)
			}
			for i, age := range rec.ages {
				if age > int64(maxStale) {
					t.Fatalf("trajectory %d learned at age %d > %d", i, age, maxStale)
				}
			}
			if maxStale > 0 && sum.Learner.StaleDropped == 0 {
				t.Errorf("the straggler was not dropped as stale")
			}
			if sum.Episodes.Completed != 3000 {
				t.Errorf("completed %d; a stale episode is still a completed one", sum.Episodes.Completed)
			}
		})
	}
}

// TestStalenessGateThrottlesAdmission, in a new run and in one resumed at
// version 100 (whose gate once counted the versions before its start as
// batches of its own, and let admission run ahead of the learner).
func TestStalenessGateThrottlesAdmission(t *testing.T) {
	for _, start := range []int64{0, 100} {
		t.Run(fmt.Sprint("start=", start), func(t *testing.T) {
			deps, _, _ := simDeps(t, simSetup{seed: 2})
			cfg := testConfig(4000, 4000)
			cfg.GroupSize, cfg.GroupsPerUpdate, cfg.MaxStaleness = 4, 2, 1
			cfg.Start.Version, cfg.Start.Updates = start, start
			sum, err := Run(context.Background(), cfg, deps)
			if err != nil {
				t.Fatal(err)
			}
			checkAccounting(t, sum, 4000)
			// (maxStaleness+1) batches of groups may be planned ahead of the learner.
			if limit := (cfg.MaxStaleness + 1) * cfg.GroupsPerUpdate * cfg.GroupSize; sum.Scheduler.PeakConcurrency > limit {
				t.Errorf("peak concurrency %d above the staleness gate's %d", sum.Scheduler.PeakConcurrency, limit)
			}
			if sum.Scheduler.StalenessWaits == 0 {
				t.Errorf("admission never waited on the staleness gate")
			}
		})
	}
}

func TestGracefulShutdownCancelsAndRecordsEverything(t *testing.T) {
	for _, scale := range []float64{1, 0} { // real latencies (runners); none (inline)
		t.Run(fmt.Sprint("time-scale=", scale), func(t *testing.T) { testGracefulShutdown(t, scale) })
	}
}

// gate holds the inference batches that start once it is armed until it is
// opened (or the policy server stops), so that answers are outstanding when
// a run is cancelled.
type answerGate struct {
	armed   atomic.Bool
	blocked chan struct{}
	open    chan struct{}
}

type heldPolicy struct {
	policy.Policy
	g *answerGate
}

func (p heldPolicy) Act(ctx context.Context, obs []env.Observation, acts []env.Action) error {
	if p.g.armed.Load() {
		select {
		case p.g.blocked <- struct{}{}:
		default:
		}
		select {
		case <-p.g.open:
		case <-ctx.Done():
		}
	}
	return p.Policy.Act(context.WithoutCancel(ctx), obs, acts)
}

type heldLearner struct {
	policy.Learner
	g *answerGate
}

func (l heldLearner) Policy() policy.Policy { return heldPolicy{l.Learner.Policy(), l.g} }

func (l heldLearner) Update(ctx context.Context, b []policy.Group) (policy.Policy, policy.UpdateStats, error) {
	p, st, err := l.Learner.Update(ctx, b)
	return heldPolicy{p, l.g}, st, err
}

func testGracefulShutdown(t *testing.T, scale float64) {
	deps, _, _ := simDeps(t, simSetup{seed: 4, timeScale: scale})
	c := new(Counters)
	deps.Counters = c
	g := &answerGate{blocked: make(chan struct{}, 1), open: make(chan struct{})}
	deps.Learner = heldLearner{deps.Learner, g}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for c.Running.Load() < 40 {
			time.Sleep(5 * time.Millisecond)
		}
		// Hold a batch of answers, cancel while it is held, and let it go
		// only once every episode has recorded its outcome: its answers
		// are then for episodes that are gone.
		g.armed.Store(true)
		<-g.blocked
		cancel()
		for c.Recorded() < c.Admitted.Load() {
			time.Sleep(time.Millisecond)
		}
		close(g.open)
	}()
	cfg := testConfig(100000, 40)
	sum, err := Run(ctx, cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	// Run returns only when every goroutine it started has exited, also
	// protoactor's: a dead letter starts a log throttle's goroutine that
	// outlives the run by a second (goleak in TestMain waits about that
	// long, so look now).
	buf := make([]byte, 1<<20)
	if stacks := buf[:runtime.Stack(buf, true)]; bytes.Contains(stacks, []byte("NewThrottle")) {
		t.Errorf("a dead letter's throttle goroutine outlived Run: a message went to an actor that was gone")
	}
	checkAccounting(t, sum, -1)
	if sum.Episodes.Cancelled == 0 {
		t.Errorf("no episode was cancelled: %+v", sum.Episodes)
	}
	if sum.Episodes.Admitted >= 100000 {
		t.Errorf("the run was not stopped: %+v", sum.Episodes)
	}
}

func TestSeededRunsWithOneWorkerAreIdentical(t *testing.T) {
	for _, tt := range []struct {
		name     string
		seed     uint64
		episodes int64
		runner   bool
	}{
		{"inline", 11, 600, false},
		{"runner", 12, 300, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			run := func() Summary {
				deps, _, l := simDeps(t, simSetup{seed: tt.seed, faultRate: 0.1})
				if tt.runner {
					deps.Provider = runnerOnly{deps.Provider}
				}
				cfg := testConfig(tt.episodes, 1)
				cfg.GroupSize, cfg.GroupsPerUpdate = 4, 3
				sum, err := Run(context.Background(), cfg, deps)
				if err != nil {
					t.Fatal(err)
				}
				sum.Curriculum.Ability += l.Skill() // fold the skill into the comparison
				return sum
			}
			a, b := run(), run()
			ignore := []string{"ElapsedSeconds", "EpisodesPerSecond"}
			if tt.runner {
				ignore = append(ignore, "Sandbox")
			}
			if diff := cmp.Diff(a, b, cmpopts.IgnoreFields(Summary{}, ignore...), cmpopts.IgnoreFields(LearnerStats{}, "UpdateSeconds")); diff != "" {
				t.Errorf("two seeded one-worker runs differ (-first +second):\n%s", diff)
			}
			if a.Episodes.Retries == 0 || a.Learner.Updates == 0 {
				t.Errorf("the run exercised neither retries nor updates: %+v", a)
			}
		})
	}
}

func TestTargetCurriculumLearnsFasterThanFixed(t *testing.T) {
	skill := func(cur curriculum.Curriculum) float64 {
		deps, _, l := simDeps(t, simSetup{seed: 5, curriculum: cur})
		if _, err := Run(context.Background(), testConfig(20000, 500), deps); err != nil {
			t.Fatal(err)
		}
		return l.Skill()
	}
	target, err := curriculum.NewTarget(0.5, 0, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	st, sf := skill(target), skill(&curriculum.Fixed{D: 6})
	if !(st > 2*sf) || st <= 0 {
		t.Errorf("skill after target curriculum %.4f, after fixed difficulty 6 %.4f; want target well ahead", st, sf)
	}
}
