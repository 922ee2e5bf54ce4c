package synth

import (
	"context"

	"github.com/frognano/frog/env"
)

// Around is what a wrapping source does with each answer of the source it
// wraps: next asks that source (Tasks, TasksFor or Compound, whichever
// was called) and may be called again to draw more. It runs on the
// caller's goroutine.
type Around func(ctx context.Context, next func() ([]env.Task, error)) ([]env.Task, error)

// Wrap returns a source whose every answer is src's passed through around.
// It keeps src's capabilities: the result is Steerable exactly when src
// is, and a Compounder exactly when src is. A wrapper written by hand
// must list every capability and can drop one without a word; this one
// cannot.
func Wrap(src Source, around Around) Source {
	w := wrapped{src: src, around: around}
	steer, isSteer := src.(Steerable)
	comp, isComp := src.(Compounder)
	switch {
	case isSteer && isComp:
		return steeredCompounder{steered{w, steer}, comp}
	case isSteer:
		return steered{w, steer}
	case isComp:
		return compounder{w, comp}
	}
	return w
}

type wrapped struct {
	src    Source
	around Around
}

func (w wrapped) Tasks(ctx context.Context, n int, d float64) ([]env.Task, error) {
	return w.around(ctx, func() ([]env.Task, error) { return w.src.Tasks(ctx, n, d) })
}

type steered struct {
	wrapped
	steer Steerable
}

func (w steered) TasksFor(ctx context.Context, n int, k Knobs) ([]env.Task, error) {
	return w.around(ctx, func() ([]env.Task, error) { return w.steer.TasksFor(ctx, n, k) })
}

type compounder struct {
	wrapped
	comp Compounder
}

func (w compounder) Compound(ctx context.Context, n int, base env.Task) ([]env.Task, error) {
	return w.around(ctx, func() ([]env.Task, error) { return w.comp.Compound(ctx, n, base) })
}

type steeredCompounder struct {
	steered
	comp Compounder
}

func (w steeredCompounder) Compound(ctx context.Context, n int, base env.Task) ([]env.Task, error) {
	return w.around(ctx, func() ([]env.Task, error) { return w.comp.Compound(ctx, n, base) })
}
