package curriculum

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/synth"
	"github.com/google/go-cmp/cmp"
)

// roundsTask is a task of module m with k mutations of family token in
// one function, or of the recorded bin when bin is set.
func roundsTask(id string, k int, bin string) *env.Task {
	t := &env.Task{ID: id, Repo: "example.com/m", Package: "p", Difficulty: 2, Bin: bin}
	for i := range k {
		t.Mutations = append(t.Mutations, env.Mutation{Family: "token", File: "a.go", Func: "F", Op: fmt.Sprintf("op%d", i)})
	}
	return t
}

func newTestRounds(t *testing.T, edit func(*RoundsConfig)) *Rounds {
	t.Helper()
	cfg := DefaultRoundsConfig()
	cfg.Size, cfg.GroupSize, cfg.Updates, cfg.Seed = 4, 4, 3, 1
	if edit != nil {
		edit(&cfg)
	}
	r, err := NewRounds(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// playGroup observes one group of t: passes of the group's outcomes pass.
func playGroup(r *Rounds, t *env.Task, group uint64, passes int) {
	for i := range r.cfg.GroupSize {
		reward := 0.0
		if i < passes {
			reward = 1
		}
		r.Observe(t, reward, group)
	}
}

// calibrateRound plans and admits the round's four candidates and plays
// their calibration groups with the passes given.
func calibrateRound(t *testing.T, r *Rounds, tasks []*env.Task, passes []int, group uint64) {
	t.Helper()
	p := r.Plan(len(tasks))
	if len(p.Replay) != 0 || p.Fresh != len(tasks) {
		t.Fatalf("first plan of a round: %d replays, %d fresh; want %d fresh", len(p.Replay), p.Fresh, len(tasks))
	}
	r.Admit(tasks)
	for i, tk := range tasks {
		playGroup(r, tk, group+uint64(i), passes[i])
	}
}

// A round admits its in-band candidates, refines those outside the band
// that can be (a compound of a too-easy task, an easier sibling of a
// too-hard one), drops the others, and only then trains on what it
// admitted; the calibration episodes are counted.
func TestRoundsAdmitRefineDrop(t *testing.T) {
	r := newTestRounds(t, nil)
	mid := roundsTask("mid", 1, "")
	easy := roundsTask("easy", 1, "")
	hard2 := roundsTask("hard2", 2, "")
	hard1 := roundsTask("hard1", 1, "") // no easier sibling: k = 1, no rank
	tasks := []*env.Task{mid, easy, hard2, hard1}
	calibrateRound(t, r, tasks, []int{2, 4, 0, 0}, 100)

	st := r.Stats().Rounds
	want := RoundReport{Round: 1, Band: [2]float64{0.25, 0.75}, Candidates: 4, Admitted: 1, TooEasy: 1, TooHard: 2,
		Refined: 2, Dropped: 1, CalibrationEpisodes: 16}
	if diff := cmp.Diff(st.PerRound[0], want); diff != "" {
		t.Errorf("round 1 (-got +want):\n%s", diff)
	}
	if st.Phase != "training" || st.CalibrationEpisodes != 16 || st.TrainingEpisodes != 0 {
		t.Errorf("phase %s, calibration %d, training %d: want training, 16, 0", st.Phase, st.CalibrationEpisodes, st.TrainingEpisodes)
	}
	// The refine requests come first: a compound of easy, then the
	// sibling of hard2 with one mutation fewer; then the synthesizer's mix.
	q := r.Request()
	if q.Base == nil || q.Base.ID != "easy" {
		t.Errorf("first request %+v: want a compound of easy", q)
	}
	q = r.Request()
	if q.Base != nil || q.Knobs == nil || q.Knobs.K != 1 || q.Knobs.Locality != "single" || q.Knobs.Module != "example.com/m" {
		t.Errorf("second request %+v: want the sibling bin of hard2 with k = 1", q)
	}
	if q = r.Request(); q.Base != nil || q.Knobs == nil || *q.Knobs != (synth.Knobs{}) {
		t.Errorf("third request %+v: want the synthesizer's own mix", q)
	}
	// Training: only the admitted task, in every group of the plan.
	p := r.Plan(3)
	if p.Fresh != 0 || len(p.Replay) != 3 {
		t.Fatalf("training plan: %d replays, %d fresh; want 3 replays", len(p.Replay), p.Fresh)
	}
	for _, tk := range p.Replay {
		if tk.ID != "mid" {
			t.Errorf("training replays %s: want only mid", tk.ID)
		}
	}
	playGroup(r, mid, 200, 1)
	if st := r.Stats(); st.Rounds.TrainingEpisodes != 4 || st.Observed != 20 {
		t.Errorf("after a training group: %d training episodes, %d observed; want 4 and 20", st.Rounds.TrainingEpisodes, st.Observed)
	}
}

// Without refinement every candidate outside the band is dropped, and a
// candidate all of whose calibration passed or failed is never admitted,
// even in a band that holds its pass rate.
func TestRoundsDropWithoutRefine(t *testing.T) {
	r := newTestRounds(t, func(c *RoundsConfig) { c.Refine, c.Band = false, [2]float64{0, 1} })
	tasks := []*env.Task{roundsTask("a", 1, ""), roundsTask("b", 1, ""), roundsTask("c", 2, ""), roundsTask("d", 1, "")}
	calibrateRound(t, r, tasks, []int{1, 4, 0, 3}, 0)
	got := r.Stats().Rounds.PerRound[0]
	if got.Admitted != 2 || got.Refined != 0 || got.Dropped != 2 || got.TooEasy != 1 || got.TooHard != 1 {
		t.Errorf("round %+v: want 2 admitted, 2 dropped (1 too easy, 1 too hard), none refined", got)
	}
	if q := r.Request(); q.Base != nil {
		t.Errorf("request %+v: want no compound without refinement", q)
	}
}

// A round's training lasts Updates policy versions; then the next round
// calibrates fresh tasks, in the last band from LastRound on, and its
// candidates waiting to be decided are served the round's admitted
// tasks, or the previous round's while none is admitted.
func TestRoundsAdvanceAfterUpdates(t *testing.T) {
	r := newTestRounds(t, func(c *RoundsConfig) { c.LastRound = 2 })
	r.Advance(5) // updates before the training do not count
	first := []*env.Task{roundsTask("a", 1, ""), roundsTask("b", 1, ""), roundsTask("c", 1, ""), roundsTask("d", 1, "")}
	calibrateRound(t, r, first, []int{2, 2, 1, 3}, 0)
	for v := int64(6); v < 8; v++ {
		r.Advance(v)
		if p := r.Plan(2); p.Fresh != 0 {
			t.Fatalf("after %d updates of 3: a plan of %d fresh tasks", v-5, p.Fresh)
		}
	}
	r.Advance(8)
	st := r.Stats().Rounds
	if st.Round != 2 || st.Phase != "calibrating" || st.PerRound[0].Updates != 3 {
		t.Fatalf("after 3 updates: round %d %s, round 1 made %d updates; want round 2 calibrating after 3", st.Round, st.Phase, st.PerRound[0].Updates)
	}
	if got := st.PerRound[1].Band; got != [2]float64{0, 0.5} {
		t.Errorf("round 2's band %v: want the last band [0 0.5]", got)
	}
	// Six asked: four fresh candidates, two replays of round 1's tasks
	// while round 2 has admitted none.
	p := r.Plan(6)
	if p.Fresh != 4 || len(p.Replay) != 2 {
		t.Fatalf("round 2's first plan: %d fresh, %d replays; want 4 and 2", p.Fresh, len(p.Replay))
	}
	for _, tk := range p.Replay {
		if !strings.Contains("abcd", tk.ID) {
			t.Errorf("round 2 replays %s while calibrating: want one of round 1's", tk.ID)
		}
	}
	second := []*env.Task{roundsTask("e", 1, ""), roundsTask("f", 1, ""), roundsTask("g", 1, ""), roundsTask("h", 1, "")}
	r.Admit(second)
	// 3 of 4 is above the last band; 2 of 4 within it.
	for i, passes := range []int{3, 2, 2, 1} {
		playGroup(r, second[i], uint64(50+i), passes)
	}
	if got := r.Stats().Rounds.PerRound[1]; got.Admitted != 3 || got.TooEasy != 1 {
		t.Errorf("round 2 %+v: want 3 admitted, 1 too easy", got)
	}
}

// A round with no candidate admitted goes straight to the next; a
// calibration group whose outcomes were lost (infrastructure failures,
// never observed) is decided on what arrived, lostAfter plans later.
func TestRoundsEmptyRoundAndLostOutcomes(t *testing.T) {
	r := newTestRounds(t, func(c *RoundsConfig) { c.Refine = false })
	tasks := []*env.Task{roundsTask("a", 1, ""), roundsTask("b", 1, ""), roundsTask("c", 1, ""), roundsTask("d", 1, "")}
	calibrateRound(t, r, tasks, []int{0, 0, 4, 4}, 0)
	if st := r.Stats().Rounds; st.Round != 2 || st.PerRound[0].Admitted != 0 {
		t.Fatalf("round %d, round 1 admitted %d: want round 2 after none admitted", st.Round, st.PerRound[0].Admitted)
	}
	p := r.Plan(4)
	more := []*env.Task{roundsTask("e", 1, ""), roundsTask("f", 1, ""), roundsTask("g", 1, ""), roundsTask("h", 1, "")}
	if p.Fresh != 4 {
		t.Fatalf("round 2's plan: %d fresh; want 4", p.Fresh)
	}
	r.Admit(more)
	r.Observe(more[0], 1, 10) // one outcome of e's group, one of f's
	r.Observe(more[1], 0, 11)
	for i := range 2 {
		playGroup(r, more[2+i%2], uint64(12+i%2), 1+i%2)
	}
	for range lostAfter + 1 {
		r.Plan(1)
	}
	got := r.Stats().Rounds.PerRound[1]
	if got.Candidates < 4 || got.Admitted != 2 || got.TooEasy != 1 || got.TooHard != 1 {
		t.Errorf("round 2 %+v: want e (1 of 1) too easy, f (0 of 1) too hard, g and h admitted", got)
	}
}

// A refine request's replacement is calibrated in the round on top of its
// size.
func TestRoundsRefineTaskJoinsTheRound(t *testing.T) {
	r := newTestRounds(t, func(c *RoundsConfig) { c.Size = 2 })
	a, b := roundsTask("a", 1, ""), roundsTask("b", 1, "")
	if p := r.Plan(2); p.Fresh != 2 {
		t.Fatalf("plan: %d fresh; want 2", p.Fresh)
	}
	r.Admit([]*env.Task{a, b})
	playGroup(r, a, 0, 4) // too easy: a compound of a is asked for
	q := r.Request()
	if q.Base == nil {
		t.Fatalf("request %+v: want a compound", q)
	}
	c := *roundsTask("c", 2, "")
	other := *roundsTask("x", 1, "")
	other.Mutations[0].Op = "other"
	r.Synthesized(q, []env.Task{other, c})
	playGroup(r, b, 1, 2)
	st := r.Stats().Rounds
	if st.RefineTasks != 1 || st.Phase != "calibrating" {
		t.Fatalf("refine tasks %d, phase %s: want 1, calibrating (the replacement owed)", st.RefineTasks, st.Phase)
	}
	if p := r.Plan(1); p.Fresh != 1 {
		t.Errorf("plan: %d fresh; want the replacement's place", p.Fresh)
	}
}

// Restore takes back a snapshot of a curriculum configured alike, and
// refuses one configured otherwise.
func TestRoundsSnapshot(t *testing.T) {
	r := newTestRounds(t, nil)
	calibrateRound(t, r, []*env.Task{roundsTask("a", 1, ""), roundsTask("b", 1, ""), roundsTask("c", 2, ""), roundsTask("d", 1, "")}, []int{2, 4, 0, 1}, 0)
	data, err := r.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	r2 := newTestRounds(t, nil)
	if err := r2.Restore(data); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(r2.Stats(), r.Stats()); diff != "" {
		t.Errorf("restored stats (-got +want):\n%s", diff)
	}
	if diff := cmp.Diff(describe(r2.Request()), describe(r.Request())); diff != "" {
		t.Errorf("restored request (-got +want):\n%s", diff)
	}
	other := newTestRounds(t, func(c *RoundsConfig) { c.Updates = 9 })
	if err := other.Restore(data); !errors.Is(err, ErrSnapshot) {
		t.Errorf("restore into another configuration: %v; want ErrSnapshot", err)
	}
}

// NewRounds refuses settings that cannot run, naming them.
func TestRoundsConfigRefused(t *testing.T) {
	for _, tc := range []struct {
		edit func(*RoundsConfig)
		want string
	}{
		{func(c *RoundsConfig) { c.Size = 0 }, "round size"},
		{func(c *RoundsConfig) { c.CalibrationGroups = 0 }, "calibration"},
		{func(c *RoundsConfig) { c.Updates = 0 }, "updates per round"},
		{func(c *RoundsConfig) { c.Band = [2]float64{0.6, 0.4} }, "band"},
		{func(c *RoundsConfig) { c.LastBand = [2]float64{0, 1.5} }, "last band"},
		{func(c *RoundsConfig) { c.LastRound = -1 }, "last round"},
	} {
		cfg := DefaultRoundsConfig()
		tc.edit(&cfg)
		_, err := NewRounds(cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v; want an error about %s", cfg, err, tc.want)
		}
	}
}

// describe is a request as text: its difficulty, base and knobs.
func describe(q synth.Request) string {
	s := fmt.Sprintf("difficulty %v", q.Difficulty)
	if q.Base != nil {
		s += " base " + q.Base.ID
	}
	if q.Knobs != nil {
		s += " knobs " + q.Knobs.Key()
	}
	return s
}
