package synth

import (
	"context"
	"errors"

	"github.com/frognano/frog/env"
)

// Source makes tasks. Tasks is called from the synthesizer actor's worker
// goroutines, possibly concurrently; it returns up to n validated tasks whose
// difficulty estimates lie near difficulty (fewer, with an error, when it
// runs out), and honours ctx's cancellation. A source that knows it has no
// task left to give returns ErrExhausted (wrapped), so that a run ends
// instead of asking again.
type Source interface {
	Tasks(ctx context.Context, n int, difficulty float64) ([]env.Task, error)
}

// ErrExhausted says a source has no task left to give: every task of a
// store was set aside, every module of a synthesizer was used up. Asking
// again gives nothing.
var ErrExhausted = errors.New("task source exhausted")
