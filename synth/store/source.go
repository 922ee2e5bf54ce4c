package store

import (
	"cmp"
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/synth"
)

// Source serves the tasks of a store to a curriculum: a request for n
// tasks at difficulty d draws n tasks, with replacement, from the tasks
// whose difficulty estimates lie nearest d (the nearest tenth of the store,
// at least n), so that a long run cycles through many tasks of the right
// difficulty. It is safe for concurrent use.
type Source struct {
	mu    sync.Mutex
	rng   *rand.Rand
	tasks []env.Task // sorted by difficulty
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
	for _, r := range recs {
		s.tasks = append(s.tasks, r.Task)
	}
	slices.SortStableFunc(s.tasks, func(a, b env.Task) int { return cmp.Compare(a.Difficulty, b.Difficulty) })
	return s, nil
}

// Len is the number of tasks in the store.
func (s *Source) Len() int { return len(s.tasks) }

// Tasks draws n tasks near difficulty.
func (s *Source) Tasks(ctx context.Context, n int, difficulty float64) ([]env.Task, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
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
		out[j] = s.tasks[lo+s.rng.IntN(hi-lo)]
	}
	return out, nil
}

// TasksFor draws n tasks, with replacement, from those whose bins
// (synth.BinOf) match k best: every knob asked for if any task does, else
// the most of them.
func (s *Source) TasksFor(ctx context.Context, n int, k synth.Knobs) ([]env.Task, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	best := 5
	var pick []int
	for i := range s.tasks {
		switch m := k.Misses(synth.BinOf(&s.tasks[i])); {
		case m < best:
			best, pick = m, append(pick[:0], i)
		case m == best:
			pick = append(pick, i)
		}
	}
	out := make([]env.Task, n)
	for j := range out {
		out[j] = s.tasks[pick[s.rng.IntN(len(pick))]]
	}
	return out, nil
}
