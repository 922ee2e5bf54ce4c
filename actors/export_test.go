package actors

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/frognano/frog/policy/openai"
	"github.com/frognano/frog/policy/openai/openaitest"
)

// heldSink takes nothing until released: an export that has fallen behind.
type heldSink struct {
	release chan struct{}
	batches atomic.Int64
}

func (s *heldSink) Put(ctx context.Context, recs []openai.Record) error {
	select {
	case <-s.release:
		s.batches.Add(1)
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TestExportBackpressurePausesAdmission: while the export sink takes
// nothing, the learner's update waits, the version stands, and the
// scheduler stops admitting within the staleness bound; once the sink
// drains, the run finishes with every episode recorded.
func TestExportBackpressurePausesAdmission(t *testing.T) {
	srv := openaitest.New(func(openaitest.Request) openaitest.Reply {
		return openaitest.Reply{ToolCalls: []openaitest.ToolCall{openaitest.Call("submit", "{}")}}
	})
	defer srv.Close()
	cfg := openai.DefaultConfig()
	cfg.BaseURLs, cfg.Model = []string{srv.BaseURL()}, "test-model"
	pol, err := openai.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pol.Close()
	sink := &heldSink{release: make(chan struct{})}
	deps, _, _ := simDeps(t, simSetup{seed: 1})
	deps.Learner = openai.NewExportLearner(pol, sink, 1)
	deps.Counters = new(Counters)
	run := testConfig(60, 8)
	run.GroupSize, run.GroupsPerUpdate, run.MaxStaleness, run.MaxBatch, run.InferenceWorkers = 2, 1, 1, 1, 8
	done := make(chan Summary, 1)
	go func() {
		sum, err := Run(context.Background(), run, deps)
		if err != nil {
			t.Error(err)
		}
		done <- sum
	}()
	// Wait for admission to stand still while the sink is held.
	var plateau int64
	giveUp := time.Now().Add(time.Minute)
	for still := 0; still < 5; {
		if time.Now().After(giveUp) {
			t.Fatalf("admission never stood still in a minute with the export held (%d admitted)", deps.Counters.Admitted.Load())
		}
		time.Sleep(50 * time.Millisecond)
		if a := deps.Counters.Admitted.Load(); a == plateau && a > 0 {
			still++
		} else {
			plateau, still = a, 0
		}
	}
	// Groups planned < (version + staleness + 1) × batch: with the first
	// update held at version 0, at most 2 groups of 2 (plus the batch the
	// held update took).
	if plateau > 3*2 || plateau >= 60 {
		t.Errorf("admitted %d episodes while the export took nothing; want admission paused within the staleness bound", plateau)
	}
	close(sink.release)
	select {
	case sum := <-done:
		checkAccounting(t, sum, 60)
		if sum.Scheduler.StalenessWaits == 0 {
			t.Errorf("the scheduler never waited on the staleness bound")
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the run did not finish after the sink drained")
	}
}
