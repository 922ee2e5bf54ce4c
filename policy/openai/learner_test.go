package openai_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/policy"
	"github.com/frognano/frog/policy/openai"
)

// chanSink is a sink of one batch's room: a second Put blocks until the
// consumer takes the first.
type chanSink chan []openai.Record

func (s chanSink) Put(ctx context.Context, recs []openai.Record) error {
	select {
	case s <- recs:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func trajAt(ep uint64, reward float64, trainerVersion int64) *env.Trajectory {
	call := env.ToolCall{ID: "c1", Name: "submit", Arguments: "{}"}
	return &env.Trajectory{Episode: ep, Reward: reward, Submitted: true, Steps: []env.Step{{
		Action: env.Action{Tool: env.ToolSubmit, Turn: &env.Turn{Call: 0, ToolCalls: []env.ToolCall{call}, TrainerVersion: trainerVersion, Server: "s"}},
	}}}
}

func TestExportLearner(t *testing.T) {
	vf := filepath.Join(t.TempDir(), "version")
	os.WriteFile(vf, []byte("10\n"), 0o644)
	p := newPolicy(t, []string{"http://127.0.0.1:1/v1"}, func(c *openai.Config) { c.VersionFile = vf })
	if v := p.TrainerVersion(); v != 10 {
		t.Fatalf("TrainerVersion = %d, want 10 from the file", v)
	}
	sink := make(chanSink, 1)
	l := openai.NewExportLearner(p, sink, 4)
	task := &env.Task{ID: "task-1"}
	batch := []policy.Group{{Task: task, Trajectories: []*env.Trajectory{trajAt(1, 1, 10), trajAt(2, 0, 9), trajAt(3, 1, 3)}}}
	if _, st, err := l.Update(context.Background(), batch); err != nil || st.Trajectories != 2 {
		t.Fatalf("Update: %v, %d trajectories; want 2 (one 7 versions stale, dropped)", err, st.Trajectories)
	}
	if l.StaleDropped() != 1 {
		t.Errorf("stale dropped %d, want 1", l.StaleDropped())
	}
	// The sink is full: the next update blocks (backpressure) until the
	// consumer takes a batch, or its context ends.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, _, err := l.Update(ctx, batch); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Update into a full sink: %v; want it to block until its context ended", err)
	}
	recs := <-sink
	if len(recs) != 2 || *recs[0].Advantage <= 0 || *recs[1].Advantage >= 0 || recs[0].TrainerVersion != 10 || recs[0].TaskID != "task-1" {
		t.Fatalf("records %+v; want advantages over the whole group (+ for the solved, − for the failed) and trainer version 10", recs)
	}
	done := make(chan error, 1)
	go func() { _, _, err := l.Update(context.Background(), batch); done <- err }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Update stayed blocked after the sink was drained")
	}
	// A newer version makes the old trajectories staler.
	time.Sleep(10 * time.Millisecond)
	os.WriteFile(vf, []byte("14"), 0o644)
	if v := p.TrainerVersion(); v != 14 {
		t.Errorf("TrainerVersion = %d after the trainer wrote 14", v)
	}
}

// TestExportLearnerAppliesTryCost: the exported advantages compare the
// group's returns, so two rollouts that both fix the task differ by how
// many tries they took when the group has a TryCost (frog train
// --try-cost), and are equal without one.
func TestExportLearnerAppliesTryCost(t *testing.T) {
	p := newPolicy(t, []string{"http://127.0.0.1:1/v1"}, nil)
	for _, tt := range []struct {
		cost float64
		same bool
	}{{0, true}, {0.1, false}} {
		sink := make(chanSink, 1)
		l := openai.NewExportLearner(p, sink, 4)
		first, third := trajAt(1, 1, -1), trajAt(2, 1, -1)
		first.Tries, third.Tries = 1, 3
		batch := []policy.Group{{Task: &env.Task{ID: "t"}, TryCost: tt.cost, Trajectories: []*env.Trajectory{first, third}}}
		if _, _, err := l.Update(context.Background(), batch); err != nil {
			t.Fatal(err)
		}
		recs := <-sink
		a, b := *recs[0].Advantage, *recs[1].Advantage
		if (a == b) != tt.same || (!tt.same && a <= b) {
			t.Errorf("try cost %v: advantages %v (1 try) and %v (3 tries); want them equal %v, else the fewer tries ahead", tt.cost, a, b, tt.same)
		}
	}
}
