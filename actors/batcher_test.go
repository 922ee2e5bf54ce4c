package actors

import (
	"testing"

	"github.com/frognano/frog/env"
)

// TestBatcherJudgesSignalByReturns: a group whose rollouts all fix the task
// has no signal in 0/1 rewards and is refilled; with a try cost, rollouts
// that fixed it at different tries do have signal, reach the batch, and
// carry the cost to the learner.
func TestBatcherJudgesSignalByReturns(t *testing.T) {
	task := &env.Task{ID: "t"}
	for _, c := range []struct {
		cost          float64
		tries         []int
		wantRefilled  bool
		wantInTheNext int
	}{
		{0, []int{1, 3}, true, 0},
		{0.1, []int{1, 3}, false, 1},
		{0.1, []int{2, 2}, true, 0}, // equal tries: equal returns
	} {
		b := newRefillBatcher(1, 4, true, c.cost)
		for i, n := range c.tries {
			b.add(&EpisodeResult{Task: task, Group: 7, GroupSize: len(c.tries), Kind: Completed,
				Trajectory: &env.Trajectory{Task: "t", Episode: uint64(i), Reward: 1, Tries: n}})
		}
		got, refilled := b.take(), b.takeRefill()
		if refilled != c.wantRefilled || len(got) != c.wantInTheNext {
			t.Errorf("try cost %v, tries %v: refilled %v, %d groups batched; want %v, %d", c.cost, c.tries, refilled, len(got), c.wantRefilled, c.wantInTheNext)
		}
		if len(got) == 1 && got[0].TryCost != c.cost {
			t.Errorf("try cost %v: the batched group carries %v", c.cost, got[0].TryCost)
		}
	}
}
