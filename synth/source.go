package synth

import (
	"context"

	"github.com/frognano/frog/env"
)

// Source makes tasks. Tasks is called from the synthesizer actor's worker
// goroutines, possibly concurrently; it returns up to n validated tasks whose
// difficulty estimates lie near difficulty (fewer, with an error, when it
// runs out), and honours ctx's cancellation.
type Source interface {
	Tasks(ctx context.Context, n int, difficulty float64) ([]env.Task, error)
}
