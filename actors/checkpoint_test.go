package actors

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/frognano/frog/synth"
)

func frontierCurriculum(t *testing.T, seed uint64) *synth.Replay {
	t.Helper()
	rc := synth.DefaultReplayConfig()
	rc.Seed = seed
	r, err := synth.NewReplay(rc)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestCheckpointsHoldTheCurriculum: every checkpoint carries the
// curriculum's snapshot, and the last one, stored before Run returns, is
// the curriculum as the summary reports it: restored into a new curriculum
// of the same configuration, it reports the same stats.
func TestCheckpointsHoldTheCurriculum(t *testing.T) {
	cur := frontierCurriculum(t, 5)
	deps, _, _ := simDeps(t, simSetup{seed: 5, curriculum: cur})
	sink := &memSink{}
	deps.Learner, deps.Checkpoints = &countingLearner{Learner: deps.Learner}, sink
	cfg := testConfig(600, 16)
	cfg.GroupSize, cfg.GroupsPerUpdate, cfg.CheckpointEvery = 4, 2, 5
	sum, err := runWithin(t, time.Minute, context.Background(), cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	if len(sink.saved) < 3 || int64(len(sink.saved)) != sum.Learner.Checkpoints {
		t.Fatalf("%d checkpoints saved, %d counted, for %d updates every 5", len(sink.saved), sum.Learner.Checkpoints, sum.Learner.Updates)
	}
	var observed int64
	for i, ck := range sink.saved {
		r := frontierCurriculum(t, 5)
		if err := r.Restore(ck.Curriculum); err != nil {
			t.Fatalf("checkpoint %d (version %d): %v", i, ck.Version, err)
		}
		st := r.Stats()
		if st.Observed < observed {
			t.Errorf("checkpoint %d: the curriculum observed %d outcomes, fewer than the %d of the one before", i, st.Observed, observed)
		}
		observed = st.Observed
		held := map[string]bool{}
		for _, id := range r.Held() {
			held[id] = true
		}
		for _, task := range ck.Pool {
			if held[task.ID] {
				t.Errorf("checkpoint %d: pooled task %s is in the replay buffer too: pooled tasks are the unserved ones", i, task.ID)
			}
		}
	}
	last := sink.saved[len(sink.saved)-1]
	if last.Updates != sum.Learner.Updates || last.Version != sum.Learner.Version {
		t.Errorf("last checkpoint at update %d, version %d; the run ended at %d, %d", last.Updates, last.Version, sum.Learner.Updates, sum.Learner.Version)
	}
	r := frontierCurriculum(t, 5)
	if err := r.Restore(last.Curriculum); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(r.Stats(), sum.Curriculum); diff != "" {
		t.Errorf("the last checkpoint's curriculum (-restored +summary):\n%s", diff)
	}
}

// flakySink refuses the saves that fail says.
type flakySink struct {
	mu    sync.Mutex
	calls int
	fail  func(call int) bool
	saved []Checkpoint
}

func (s *flakySink) Save(c Checkpoint) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if s.fail(s.calls) {
		return errors.New("disk full")
	}
	s.saved = append(s.saved, c)
	return nil
}

// TestRefusedCheckpointIsTriedAgainAtTheEnd: a checkpoint the sink
// refuses is not counted, the run goes on, and the end of the run tries
// once more, even when no update happened since.
func TestRefusedCheckpointIsTriedAgainAtTheEnd(t *testing.T) {
	deps, _, _ := simDeps(t, simSetup{seed: 6})
	sink := &flakySink{fail: func(call int) bool { return call == 1 }}
	deps.Learner, deps.Checkpoints = &countingLearner{Learner: deps.Learner}, sink
	cfg := testConfig(200, 8)
	cfg.GroupSize, cfg.GroupsPerUpdate, cfg.CheckpointEvery = 4, 1, 1000 // the only checkpoint is the last
	sum, err := runWithin(t, time.Minute, context.Background(), cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	// The last one is refused; nothing is tried after it.
	if sink.calls != 1 || sum.Learner.Checkpoints != 0 {
		t.Errorf("%d saves tried, %d counted; want the one last save, refused", sink.calls, sum.Learner.Checkpoints)
	}

	deps, _, _ = simDeps(t, simSetup{seed: 6})
	sink = &flakySink{fail: func(call int) bool { return call == 2 }}
	deps.Learner, deps.Checkpoints = &countingLearner{Learner: deps.Learner}, sink
	cfg.CheckpointEvery = 10
	sum, err = runWithin(t, time.Minute, context.Background(), cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(sink.saved)) != sum.Learner.Checkpoints || sink.calls != len(sink.saved)+1 {
		t.Errorf("%d saves tried, %d stored, %d counted; want one refused and the rest counted", sink.calls, len(sink.saved), sum.Learner.Checkpoints)
	}
	if last := sink.saved[len(sink.saved)-1]; last.Updates != sum.Learner.Updates {
		t.Errorf("last checkpoint stored at update %d; the run made %d", last.Updates, sum.Learner.Updates)
	}
}

// TestTaskPoolIsServedFirst: a resumed run's pooled tasks are played.
func TestTaskPoolIsServedFirst(t *testing.T) {
	deps, _, _ := simDeps(t, simSetup{seed: 7})
	pool, err := deps.Source.Tasks(context.Background(), 3, 0) // the oracle is told of them
	if err != nil {
		t.Fatal(err)
	}
	deps.TaskPool = pool
	var mu sync.Mutex
	played := map[string]bool{}
	deps.OnEpisode = func(r *EpisodeResult) {
		mu.Lock()
		played[r.Task.ID] = true
		mu.Unlock()
	}
	cfg := testConfig(12, 4) // 3 groups of 4: the pool's 3 tasks
	cfg.GroupSize = 4
	sum, err := runWithin(t, time.Minute, context.Background(), cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	checkAccounting(t, sum, 12)
	for _, task := range pool {
		if !played[task.ID] {
			t.Errorf("pooled task %s was not played; played %v", task.ID, played)
		}
	}
	if sum.Synth.Tasks != 0 {
		t.Errorf("the synthesizer made %d tasks; the pool held all 3 the run needed", sum.Synth.Tasks)
	}
}
