package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/synth"
)

// Source serves the tasks of a store to a curriculum: a request for n
// tasks at difficulty d draws n tasks from those whose difficulty
// estimates lie nearest d (the nearest tenth of the store, at least n); a
// request for a bin (TasksFor) draws from the tasks that match it best.
// Either way a draw takes the tasks served least often first, so that a
// curriculum asking for fresh tasks gets tasks it has not seen while the
// store has some, and a long run cycles through all of them (a curriculum
// that wants a task again replays it itself). Tasks dropped (Drop: a
// quarantine set them aside) are never drawn again; once every task is
// dropped a draw returns synth.ErrExhausted. It is safe for concurrent use.
type Source struct {
	mu     sync.Mutex
	rng    *rand.Rand
	tasks  []env.Task // sorted by difficulty
	served []int      // per task, how often a draw returned it
}

var (
	_ synth.Source    = (*Source)(nil)
	_ synth.Steerable = (*Source)(nil)
)

// NewSource serves recs, drawing with a generator seeded by seed.
func NewSource(recs []synth.TaskRecord, seed uint64) (*Source, error) {
	if len(recs) == 0 {
		return nil, errors.New("task store: no tasks")
	}
	s := &Source{rng: rand.New(rand.NewPCG(seed, seed^0x5bd1e995))}
	for i := range recs {
		t := recs[i].Task
		if t.Bin == "" {
			t.Bin = synth.RecordBin(&recs[i]).Key() // with the rank the record knows
		}
		s.tasks = append(s.tasks, t)
	}
	slices.SortStableFunc(s.tasks, func(a, b env.Task) int { return cmp.Compare(a.Difficulty, b.Difficulty) })
	s.served = make([]int, len(s.tasks))
	return s, nil
}

// Len is the number of tasks in the store.
func (s *Source) Len() int { return len(s.tasks) }

// Drop takes the tasks of ids out of the store for good (a quarantine
// found that they do not hold up) and returns how many it held.
func (s *Source) Drop(ids ...string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	drop := make(map[string]bool, len(ids))
	for _, id := range ids {
		drop[id] = true
	}
	n := 0
	for i := range s.tasks {
		if drop[s.tasks[i].ID] {
			n++
			continue
		}
		s.tasks[i-n], s.served[i-n] = s.tasks[i], s.served[i]
	}
	s.tasks, s.served = s.tasks[:len(s.tasks)-n], s.served[:len(s.served)-n]
	return n
}

// exhausted is the error of a draw of n tasks from a store with no task
// left. s.mu is held.
func (s *Source) exhausted(n int) error {
	if n > 0 && len(s.tasks) == 0 {
		return fmt.Errorf("task store: every task was set aside: %w", synth.ErrExhausted)
	}
	return nil
}

// Tasks draws n tasks near difficulty.
func (s *Source) Tasks(ctx context.Context, n int, difficulty float64) ([]env.Task, error) {
	if err := ctx.Err(); err != nil || n <= 0 {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.exhausted(n); err != nil {
		return nil, err
	}
	// The window: the k tasks nearest difficulty, a contiguous run of the
	// sorted slice.
	k := min(len(s.tasks), max(n, len(s.tasks)/10, 1))
	i, _ := slices.BinarySearchFunc(s.tasks, difficulty, func(t env.Task, d float64) int { return cmp.Compare(t.Difficulty, d) })
	lo, hi := i, i // [lo, hi)
	for hi-lo < k {
		switch {
		case lo == 0:
			hi++
		case hi == len(s.tasks):
			lo--
		case math.Abs(s.tasks[lo-1].Difficulty-difficulty) <= math.Abs(s.tasks[hi].Difficulty-difficulty):
			lo--
		default:
			hi++
		}
	}
	out := make([]env.Task, n)
	for j := range out {
		out[j] = s.tasks[s.leastServed(hi-lo, func(c int) (int, int) { return lo + c, 0 })]
	}
	return out, nil
}

// leastServed draws one of n candidates: cand(c) gives the c-th one's
// task index and its rank (lower is a better match). It takes the
// candidates served least often, then the best ranked of those, at random
// among ties, and counts the draw. s.mu is held.
func (s *Source) leastServed(n int, cand func(c int) (i, rank int)) int {
	pick, ties := -1, 0
	bestServed, bestRank := 0, 0
	for c := range n {
		i, rank := cand(c)
		switch {
		case pick < 0 || s.served[i] < bestServed || (s.served[i] == bestServed && rank < bestRank):
			pick, ties, bestServed, bestRank = i, 1, s.served[i], rank
		case s.served[i] == bestServed && rank == bestRank:
			ties++
			if s.rng.IntN(ties) == 0 { // reservoir: each tie equally likely
				pick = i
			}
		}
	}
	s.served[pick]++
	return pick
}

// TasksFor draws n tasks for the bin k asks for: of the tasks served
// least often, those whose bins (synth.BinOf) match k best (every knob
// asked for if any does, else the most of them). A fresh request is
// answered with an unseen task of the nearest bin before a seen one of
// the bin itself.
func (s *Source) TasksFor(ctx context.Context, n int, k synth.Knobs) ([]env.Task, error) {
	if err := ctx.Err(); err != nil || n <= 0 {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.exhausted(n); err != nil {
		return nil, err
	}
	misses := make([]int, len(s.tasks))
	for i := range s.tasks {
		misses[i] = k.Misses(synth.BinOf(&s.tasks[i]))
	}
	out := make([]env.Task, n)
	for j := range out {
		out[j] = s.tasks[s.leastServed(len(s.tasks), func(c int) (int, int) { return c, misses[c] })]
	}
	return out, nil
}

// MarkServed counts the tasks of ids (each once) as served, as if a draw
// had returned them, and returns how many of them the store holds (ids it
// does not hold are ignored). A resumed run tells its store this way which
// tasks its restored curriculum holds already, so that its requests for
// fresh tasks get tasks the curriculum has not seen before those it has.
func (s *Source) MarkServed(ids []string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	want := make(map[string]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	n := 0
	for i := range s.tasks {
		if want[s.tasks[i].ID] {
			s.served[i]++
			delete(want, s.tasks[i].ID)
			n++
		}
	}
	return n
}
