package actors

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/frognano/frog/curriculum"
	"github.com/google/go-cmp/cmp"
)

func frontierCurriculum(t *testing.T, seed uint64) *curriculum.Replay {
	t.Helper()
	rc := curriculum.DefaultReplayConfig()
	rc.Seed = seed
	r, err := curriculum.NewReplay(rc)
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

// TestRefusedCheckpointIsTriedAgain: a checkpoint the sink refuses is not
// counted, the run goes on, and the checkpoint is tried again: at the end
// of the run at once, even when no update happened since; during the run
// after the next update, not only at the next multiple of
// CheckpointEvery.
func TestRefusedCheckpointIsTriedAgain(t *testing.T) {
	deps, _, _ := simDeps(t, simSetup{seed: 6})
	sink := &flakySink{fail: func(call int) bool { return call == 1 }}
	deps.Learner, deps.Checkpoints = &countingLearner{Learner: deps.Learner}, sink
	cfg := testConfig(200, 8)
	cfg.GroupSize, cfg.GroupsPerUpdate, cfg.CheckpointEvery = 4, 1, 1000 // the only checkpoint is the last
	sum, err := runWithin(t, time.Minute, context.Background(), cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	// The last one is refused, then stored.
	if sink.calls != 2 || sum.Learner.Checkpoints != 1 || sum.Learner.FailedCheckpoints != 1 {
		t.Errorf("%d saves tried, %d counted, %d failed; want the last save refused once, then stored", sink.calls, sum.Learner.Checkpoints, sum.Learner.FailedCheckpoints)
	}
	if last := sink.saved[len(sink.saved)-1]; last.Updates != sum.Learner.Updates {
		t.Errorf("last checkpoint stored at update %d; the run made %d", last.Updates, sum.Learner.Updates)
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
	// Tried again after the next update the learner reports to the
	// writer: 21, or a little later where updates came faster than saves;
	// never as late as the next multiple, 30.
	if len(sink.saved) < 2 || sink.saved[1].Updates <= 20 || sink.saved[1].Updates >= 30 {
		t.Errorf("stored checkpoints %v; want the one of update 20, refused, stored after a later update before 30", updatesOf(sink.saved))
	}
	if last := sink.saved[len(sink.saved)-1]; last.Updates != sum.Learner.Updates {
		t.Errorf("last checkpoint stored at update %d; the run made %d", last.Updates, sum.Learner.Updates)
	}
}

func updatesOf(cks []Checkpoint) []int64 {
	var u []int64
	for _, c := range cks {
		u = append(u, c.Updates)
	}
	return u
}

// TestCheckpointFailuresEndTheRun: a sink that refuses every checkpoint (a
// full disk) ends the run after CheckpointTries refusals in a row, with
// ErrCheckpoint naming the last checkpoint stored, instead of training on
// with nothing to resume from; every admitted episode is still accounted
// for.
func TestCheckpointFailuresEndTheRun(t *testing.T) {
	for _, stored := range []int{0, 2} {
		t.Run(fmt.Sprint("stored=", stored), func(t *testing.T) {
			deps, _, _ := simDeps(t, simSetup{seed: 8})
			sink := &flakySink{fail: func(call int) bool { return call > stored }}
			deps.Learner, deps.Checkpoints = &countingLearner{Learner: deps.Learner}, sink
			cfg := testConfig(4000, 8)
			cfg.GroupSize, cfg.GroupsPerUpdate, cfg.CheckpointEvery, cfg.CheckpointTries = 4, 1, 2, 3
			sum, err := runWithin(t, time.Minute, context.Background(), cfg, deps)
			if !errors.Is(err, ErrCheckpoint) {
				t.Fatalf("Run: %v; want ErrCheckpoint", err)
			}
			checkAccounting(t, sum, -1)
			if sum.Episodes.Admitted >= cfg.Episodes {
				t.Errorf("admitted %d of %d episodes: the run trained on without checkpoints", sum.Episodes.Admitted, cfg.Episodes)
			}
			if sum.Learner.Checkpoints != int64(stored) || sum.Learner.FailedCheckpoints < 3 {
				t.Errorf("%d checkpoints stored, %d failed; want %d stored and at least 3 failed", sum.Learner.Checkpoints, sum.Learner.FailedCheckpoints, stored)
			}
			want := "none was stored"
			if stored > 0 {
				want = fmt.Sprintf("the last stored is of version %d (update %d)", sink.saved[stored-1].Version, sink.saved[stored-1].Updates)
			}
			if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "disk full") {
				t.Errorf("Run: %v; want it to say %q and why", err, want)
			}
		})
	}
}

// TestResumedRunContinuesItsCounting: a run resumed from a checkpoint
// (Config.Start) plays what is left of the whole run's budget, numbers its
// episodes, groups, updates and versions after the checkpoint's, and sums
// up the whole run; a budget already spent plays nothing.
func TestResumedRunContinuesItsCounting(t *testing.T) {
	deps, _, _ := simDeps(t, simSetup{seed: 9})
	sink := &memSink{}
	deps.Learner, deps.Checkpoints = &countingLearner{Learner: deps.Learner}, sink
	cfg := testConfig(240, 8)
	cfg.GroupSize, cfg.GroupsPerUpdate, cfg.CheckpointEvery = 4, 1, 5
	first, err := runWithin(t, time.Minute, context.Background(), cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	if len(sink.saved) < 3 {
		t.Fatalf("%d checkpoints; the test needs one in the middle of the run", len(sink.saved))
	}
	ck := sink.saved[1]
	if !ck.Episodes.Accounted || ck.Episodes.Admitted != ck.Results || ck.Results == 0 || ck.Results >= cfg.Episodes ||
		ck.NextEpisode < uint64(ck.Results) || ck.Stats.Checkpoints != 2 || ck.Stats.Updates != ck.Updates {
		t.Fatalf("checkpoint's progress %+v", ck.Progress)
	}

	deps, _, _ = simDeps(t, simSetup{seed: 10})
	sink = &memSink{}
	deps.Learner, deps.Checkpoints = &countingLearner{Learner: deps.Learner}, sink
	var mu sync.Mutex
	var played []*EpisodeResult
	deps.OnEpisode = func(r *EpisodeResult) {
		mu.Lock()
		played = append(played, &EpisodeResult{Episode: r.Episode, Group: r.Group})
		mu.Unlock()
	}
	var updates []UpdateRecord
	deps.OnUpdate = func(u UpdateRecord) { updates = append(updates, u) }
	cfg.Start = ck.Progress
	sum, err := runWithin(t, time.Minute, context.Background(), cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	checkAccounting(t, sum, cfg.Episodes)
	if int64(len(played)) != cfg.Episodes-ck.Results {
		t.Errorf("the resumed run played %d episodes; %d of the run's %d were filed at the checkpoint", len(played), ck.Results, cfg.Episodes)
	}
	for _, r := range played {
		if r.Episode < ck.NextEpisode || r.Group < ck.NextGroup {
			t.Fatalf("the resumed run played episode %d of group %d; the checkpoint's ids go up to %d and %d", r.Episode, r.Group, ck.NextEpisode-1, ck.NextGroup-1)
		}
	}
	if len(updates) == 0 || updates[0].Update != ck.Updates+1 || updates[0].Version <= ck.Version || updates[0].Episodes <= ck.Results {
		t.Errorf("the resumed run's first update %+v; the checkpoint was at update %d, version %d, %d results", updates[0], ck.Updates, ck.Version, ck.Results)
	}
	if sum.Learner.Results != cfg.Episodes || sum.Learner.Updates != ck.Updates+int64(len(updates)) || sum.Learner.Checkpoints != 2+int64(len(sink.saved)) {
		t.Errorf("whole run's learner: %d results, %d updates, %d checkpoints; want %d, %d, %d",
			sum.Learner.Results, sum.Learner.Updates, sum.Learner.Checkpoints, cfg.Episodes, ck.Updates+int64(len(updates)), 2+len(sink.saved))
	}
	// The updates' windows of judged groups go on from the checkpoint's
	// count: none holds a group judged before it.
	var judged int64
	for _, u := range updates {
		judged += u.Judged.Groups
	}
	if since := sum.Learner.Groups - ck.Stats.Groups; judged == 0 || judged > since {
		t.Errorf("the resumed run's updates judged %d groups; %d were judged after the checkpoint", judged, since)
	}
	if sum.ElapsedSeconds < ck.Seconds {
		t.Errorf("the whole run took %v s; the checkpoint was taken after %v s", sum.ElapsedSeconds, ck.Seconds)
	}
	if first.Episodes.Admitted != cfg.Episodes {
		t.Errorf("the uninterrupted run admitted %d", first.Episodes.Admitted)
	}

	// Resumed from a checkpoint taken after an interruption, which
	// cancelled what ran: the cancelled episodes are played again.
	deps, _, _ = simDeps(t, simSetup{seed: 12})
	deps.Learner, deps.Checkpoints = &countingLearner{Learner: deps.Learner}, &memSink{}
	played = nil
	deps.OnEpisode = func(r *EpisodeResult) { played = append(played, r) }
	cfg.Start = ck.Progress
	cfg.Start.Episodes.Completed -= 3
	cfg.Start.Episodes.Cancelled += 3
	sum, err = runWithin(t, time.Minute, context.Background(), cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	checkAccounting(t, sum, cfg.Episodes+3)
	if int64(len(played)) != cfg.Episodes-ck.Results+3 || sum.Episodes.Cancelled != 3 {
		t.Errorf("resumed after 3 episodes were cancelled, the run played %d (%d cancelled); want %d", len(played), sum.Episodes.Cancelled, cfg.Episodes-ck.Results+3)
	}

	// Resumed from the run's last checkpoint: its budget is spent.
	last := sink.saved[len(sink.saved)-1]
	deps, _, _ = simDeps(t, simSetup{seed: 11})
	deps.Learner, deps.Checkpoints = &countingLearner{Learner: deps.Learner}, &memSink{}
	played = nil
	deps.OnEpisode = func(r *EpisodeResult) { played = append(played, r) }
	cfg.Start = last.Progress
	sum, err = runWithin(t, time.Minute, context.Background(), cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	checkAccounting(t, sum, cfg.Episodes)
	if len(played) != 0 || sum.Learner.Updates != last.Updates {
		t.Errorf("resumed with its budget spent, the run played %d episodes and made %d updates", len(played), sum.Learner.Updates-last.Updates)
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
