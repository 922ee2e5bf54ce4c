package synth

import (
	"context"
	"slices"

	"github.com/frognano/frog/env"
)

// Request is what a curriculum asks the synthesizer for: tasks near
// Difficulty, or, from a Steerable source, tasks that match Knobs; or,
// from a Compounder, Base made harder by one more mutation (the rest from
// Knobs or Difficulty when it makes fewer than asked for).
type Request struct {
	Difficulty float64   `json:"difficulty"`
	Knobs      *Knobs    `json:"knobs,omitempty"`
	Base       *env.Task `json:"base,omitempty"`
}

// Steerable is a Source that can be asked for tasks of a bin (found by type
// assertion). TasksFor is called as Source.Tasks is; an empty field of k
// means any.
type Steerable interface {
	TasksFor(ctx context.Context, n int, k Knobs) ([]env.Task, error)
}

// Compounder is a Source that can make a task harder (found by type
// assertion): Compound returns up to n validated tasks made of base's
// mutations and one more in the same package, fewer or none (with no
// error) when few such were valid. It is called as Source.Tasks is.
type Compounder interface {
	Compound(ctx context.Context, n int, base env.Task) ([]env.Task, error)
}

// CompoundOf reports whether t is base with one more mutation: a task of
// base's package whose mutations are base's and one other.
func CompoundOf(t, base *env.Task) bool {
	if t.Repo != base.Repo || t.Package != base.Package || len(t.Mutations) != len(base.Mutations)+1 {
		return false
	}
	for _, bm := range base.Mutations {
		if !slices.ContainsFunc(t.Mutations, func(m env.Mutation) bool {
			return m.File == bm.File && m.Op == bm.Op && slices.Equal(m.Edits, bm.Edits)
		}) {
			return false
		}
	}
	return true
}
