// Package sim is a simulated task source: tasks with a difficulty drawn
// around the one asked for, a buggy file and its gold patch, for `frog sim`
// and the actors' tests. Its tasks run in env/sim sandboxes, and in real
// sandboxes too: the deciding test command checks the file's content with
// the shell.
package sim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/synth"
)

// Source makes simulated tasks. It is safe for concurrent use; its output
// depends only on the seed and the order of the calls.
type Source struct {
	// Spread is the standard deviation of a task's difficulty around the
	// difficulty asked for.
	Spread float64
	mu     sync.Mutex
	rng    *rand.Rand
	next   uint64
}

var _ synth.Source = (*Source)(nil)

// New returns a source seeded with seed.
func New(seed uint64, spread float64) *Source {
	return &Source{Spread: spread, rng: rand.New(rand.NewPCG(seed, seedTag))}
}

// File is the buggy file of every simulated task.
const File = "bug.go"

// Tasks returns n tasks around difficulty.
func (s *Source) Tasks(ctx context.Context, n int, difficulty float64) ([]env.Task, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]env.Task, n)
	for i := range out {
		id := s.next
		s.next++
		patch := fmt.Sprintf("// fixed %d\n", id)
		out[i] = env.Task{
			ID:         fmt.Sprintf("sim-%08d", id),
			Repo:       "sim",
			Difficulty: difficulty + s.Spread*s.rng.NormFloat64(),
			File:       File,
			Patch:      patch,
			TestCmd:    []string{"sh", "-c", fmt.Sprintf("test \"$(cat %s)\" = %q", File, patch[:len(patch)-1])},
		}
	}
	return out, nil
}

const seedTag = 0x73796e7468 // "synth"
