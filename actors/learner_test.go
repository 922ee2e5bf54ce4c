package actors

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/frognano/frog/policy"
)

// faultyLearner fails (or panics in) the updates that fail says, and passes
// the others to the learner it wraps.
type faultyLearner struct {
	policy.Learner
	calls atomic.Int64
	fail  func(call int64) bool
	panic bool
}

func (f *faultyLearner) Update(ctx context.Context, batch []policy.Group) (policy.Policy, policy.UpdateStats, error) {
	n := f.calls.Add(1)
	if f.fail(n) {
		if f.panic {
			panic(fmt.Sprintf("update %d: the GPU fell over", n))
		}
		return nil, policy.UpdateStats{}, fmt.Errorf("update %d: out of memory", n)
	}
	return f.Learner.Update(ctx, batch)
}

// runWithin runs the system and fails the test, instead of hanging it, when
// Run does not return in time.
func runWithin(t testing.TB, d time.Duration, ctx context.Context, cfg Config, deps Deps) (Summary, error) {
	t.Helper()
	type result struct {
		sum Summary
		err error
	}
	done := make(chan result, 1)
	go func() {
		sum, err := Run(ctx, cfg, deps)
		done <- result{sum, err}
	}()
	select {
	case r := <-done:
		return r.sum, r.err
	case <-time.After(d):
		t.Fatalf("Run did not return within %v", d)
		return Summary{}, nil
	}
}

func TestLearnerFailures(t *testing.T) {
	tests := []struct {
		name string
		fail func(int64) bool
		// panic makes the failing updates panic instead of returning an error.
		panic bool
		// maxFailures ends the run after that many consecutive failures.
		maxFailures int
		wantErr     bool
	}{
		{name: "fails once", fail: func(n int64) bool { return n == 2 }},
		{name: "panics once", fail: func(n int64) bool { return n == 2 }, panic: true},
		{name: "panics always, no limit", fail: func(int64) bool { return true }, panic: true},
		{name: "fails always, no limit", fail: func(int64) bool { return true }},
		{name: "fails always, limit 3", fail: func(int64) bool { return true }, maxFailures: 3, wantErr: true},
	}
	for _, tt := range tests {
		for _, runner := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/runner=%v", tt.name, runner), func(t *testing.T) {
				deps, _, _ := simDeps(t, simSetup{seed: 9})
				if runner {
					deps.Provider = runnerOnly{deps.Provider}
				}
				fl := &faultyLearner{Learner: deps.Learner, fail: tt.fail, panic: tt.panic}
				deps.Learner = fl
				var records atomic.Int64
				deps.OnUpdate = func(UpdateRecord) { records.Add(1) }
				cfg := testConfig(400, 16)
				cfg.GroupSize, cfg.GroupsPerUpdate, cfg.MaxStaleness = 4, 2, 1
				cfg.MaxUpdateFailures = tt.maxFailures
				sum, err := runWithin(t, time.Minute, context.Background(), cfg, deps)
				checkAccounting(t, sum, -1)
				l := sum.Learner
				if tt.wantErr {
					if !errors.Is(err, ErrLearner) || !strings.Contains(err.Error(), "3 consecutive") {
						t.Fatalf("Run error %v; want ErrLearner after 3 consecutive failures", err)
					}
					if l.FailedUpdates != 3 || sum.Episodes.Admitted >= 400 {
						t.Errorf("failed updates %d, admitted %d; want the run ended after 3 failures", l.FailedUpdates, sum.Episodes.Admitted)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if sum.Episodes.Admitted != 400 {
					t.Errorf("admitted %d of 400 episodes: failed updates stalled admission", sum.Episodes.Admitted)
				}
				calls := fl.calls.Load()
				failed := int64(0)
				for n := int64(1); n <= calls; n++ {
					if tt.fail(n) {
						failed++
					}
				}
				if l.FailedUpdates != failed || l.Updates != calls-failed {
					t.Errorf("learner counted %d updates and %d failures; the learner saw %d calls, %d failing", l.Updates, l.FailedUpdates, calls, failed)
				}
				if l.DroppedGroups == 0 {
					t.Errorf("the failed batches' groups were not counted as dropped")
				}
				if records.Load() != l.Updates {
					t.Errorf("%d metrics records for %d updates", records.Load(), l.Updates)
				}
				// The version advances past a failed batch as past an empty
				// one: the staleness gate counts batches.
				if l.Version < l.Updates+l.FailedUpdates {
					t.Errorf("version %d after %d updates and %d failures", l.Version, l.Updates, l.FailedUpdates)
				}
			})
		}
	}
}

// blockingLearner blocks every update until its context is cancelled.
type blockingLearner struct {
	policy.Learner
	started chan struct{}
}

func (b *blockingLearner) Update(ctx context.Context, _ []policy.Group) (policy.Policy, policy.UpdateStats, error) {
	select {
	case b.started <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return nil, policy.UpdateStats{}, ctx.Err()
}

func TestLearnerUpdateSeesRunCancellation(t *testing.T) {
	for _, runner := range []bool{false, true} {
		t.Run(fmt.Sprint("runner=", runner), func(t *testing.T) {
			deps, _, _ := simDeps(t, simSetup{seed: 5})
			if runner {
				deps.Provider = runnerOnly{deps.Provider}
			}
			bl := &blockingLearner{Learner: deps.Learner, started: make(chan struct{}, 1)}
			deps.Learner = bl
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() {
				<-bl.started
				cancel()
			}()
			cfg := testConfig(2000, 16)
			cfg.GroupSize, cfg.GroupsPerUpdate = 4, 1
			sum, err := runWithin(t, time.Minute, ctx, cfg, deps)
			if err != nil {
				t.Fatal(err)
			}
			checkAccounting(t, sum, -1)
			if sum.Episodes.Admitted >= 2000 {
				t.Errorf("admitted %d: the run went on after cancellation", sum.Episodes.Admitted)
			}
		})
	}
}

// countingLearner is a learner that can checkpoint: its bytes are its
// update count.
type countingLearner struct {
	policy.Learner
	n int
}

func (c *countingLearner) Update(ctx context.Context, b []policy.Group) (policy.Policy, policy.UpdateStats, error) {
	c.n++
	return c.Learner.Update(ctx, b)
}

func (c *countingLearner) Checkpoint() ([]byte, error) { return []byte(fmt.Sprint(c.n)), nil }
func (c *countingLearner) Restore([]byte) error        { return nil }

type memSink struct{ saved []Checkpoint }

func (m *memSink) Save(c Checkpoint) error {
	m.saved = append(m.saved, c)
	return nil
}

func TestLearnerCheckpoints(t *testing.T) {
	deps, _, _ := simDeps(t, simSetup{seed: 4})
	cl := &countingLearner{Learner: deps.Learner}
	sink := &memSink{}
	deps.Learner, deps.Checkpoints = cl, sink
	cfg := testConfig(200, 4)
	cfg.GroupSize, cfg.GroupsPerUpdate, cfg.CheckpointEvery = 4, 1, 10
	cfg.Start.Version, cfg.Start.Updates = 100, 50
	sum, err := runWithin(t, time.Minute, context.Background(), cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	if len(sink.saved) < 5 {
		t.Fatalf("%d checkpoints for %d updates every 10", len(sink.saved), sum.Learner.Updates)
	}
	// The resumed run's counting goes on from its start: updates and
	// versions, and checkpoints every 10 updates of the whole run.
	last := sink.saved[len(sink.saved)-1]
	if string(last.Learner) != fmt.Sprint(cl.n) || sum.Learner.Updates != 50+int64(cl.n) || last.Updates != sum.Learner.Updates ||
		last.Version != sum.Learner.Version || last.Version < 100 {
		t.Errorf("last checkpoint %+v (learner bytes %q); the learner made %d updates from update 50, the run ends at update %d, version %d",
			last.Progress, last.Learner, cl.n, sum.Learner.Updates, sum.Learner.Version)
	}
	for i, c := range sink.saved[:len(sink.saved)-1] {
		if c.Updates%10 != 0 {
			t.Errorf("checkpoint %d at update %d, not a multiple of 10", i, c.Updates)
		}
	}
}
