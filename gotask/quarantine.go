package gotask

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/synth"
)

// Quarantine checks each real task once, before any episode plays it, in a
// sandbox of the run's own provider: its workspace lays out, its bug makes
// its FAIL_TO_PASS tests fail and leaves its PASS_TO_PASS tests passing, and
// its gold patch makes every deciding test pass. A task that does not hold
// up is set aside with its reason and never served, so it is never scored.
// Safe for concurrent use.
type Quarantine struct {
	ws   *Workspaces
	h    *Harness
	prov env.Provider
	run  string
	log  zerolog.Logger

	mu sync.Mutex
	// checked holds each task's answer by its id and template hash: a
	// template made again with other content is checked again.
	checked map[string]error
	out     []Quarantined
}

// closeTimeout bounds the closing of a check's sandbox.
const closeTimeout = 30 * time.Second

// Quarantined is one task set aside, with why.
type Quarantined struct {
	ID     string `json:"instance_id"`
	Reason string `json:"reason"`
}

// NewQuarantine checks tasks laid out by ws, in sandboxes of prov labelled
// with run, judged by h.
func NewQuarantine(ws *Workspaces, h *Harness, prov env.Provider, run string, log zerolog.Logger) *Quarantine {
	return &Quarantine{ws: ws, h: h, prov: prov, run: run, log: log.With().Str("component", "quarantine").Logger(), checked: map[string]error{}}
}

// Check says whether t holds up: nil, an error wrapping
// synth.ErrQuarantined (the task is set aside), or a fault of the machine
// (the task is not judged, and will be checked again).
func (q *Quarantine) Check(ctx context.Context, t *env.Task) error {
	key := t.ID
	if q.ws != nil { // nil only in tests whose answers are set beforehand
		if hash, err := q.ws.TemplateHash(ctx, t); err == nil {
			key += "\x00" + hash
		}
	}
	q.mu.Lock()
	err, done := q.checked[key]
	q.mu.Unlock()
	if done {
		return err
	}
	start := time.Now()
	err = q.check(ctx, t)
	q.log.Debug().Str("task", t.ID).Dur("took", time.Since(start)).Err(err).Msg("task checked")
	if err != nil && !errors.Is(err, synth.ErrQuarantined) {
		return err // not a verdict on the task
	}
	q.mu.Lock()
	if _, again := q.checked[key]; !again {
		q.checked[key] = err
		if err != nil {
			q.out = append(q.out, Quarantined{ID: t.ID, Reason: err.Error()})
			q.log.Warn().Str("task", t.ID).Err(err).Msg("task quarantined: it is never scored")
		}
	}
	q.mu.Unlock()
	return err
}

func (q *Quarantine) check(ctx context.Context, t *env.Task) error {
	if _, err := q.ws.Template(ctx, t); err != nil {
		if errors.Is(err, env.ErrInfra) || ctx.Err() != nil {
			return err
		}
		return fmt.Errorf("%w: %v", synth.ErrQuarantined, err)
	}
	fixed, err := q.ws.Fixed(ctx, t)
	if err != nil {
		return fmt.Errorf("%w: %v", synth.ErrQuarantined, err)
	}
	sb, err := q.prov.Open(ctx, env.OpenOptions{Run: q.run, Episode: ^uint64(0), Task: t})
	if err != nil {
		return err
	}
	defer func() {
		// Closed even when ctx is cancelled, but not waited on for ever.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
		defer cancel()
		sb.Close(cctx)
	}()
	return q.h.Check(ctx, sb, t, fixed)
}

// Quarantined lists the tasks set aside so far.
func (q *Quarantine) Quarantined() []Quarantined {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]Quarantined(nil), q.out...)
}

// Source serves src's tasks that hold up; a task that does not is dropped
// from the answer, and from src when src can drop tasks (store.Source),
// which is then drawn from again rather than answer with nothing. A fault
// while checking ends the answer with the error and the tasks checked so
// far.
// The source is steerable, and a compounder, exactly when src is.
func (q *Quarantine) Source(src synth.Source) synth.Source {
	return synth.Wrap(src, quarantined{q, src}.draw)
}

// CheckAll checks tasks, n at a time (each check is a few test runs in a
// sandbox), and returns each one's Check error: nil, one wrapping
// synth.ErrQuarantined, or a fault. A task that is not real has nothing
// to check (nil).
func (q *Quarantine) CheckAll(ctx context.Context, tasks []*env.Task, n int) []error {
	errs := make([]error, len(tasks))
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(n, 1))
	for i, t := range tasks {
		if !t.Real() {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			errs[i] = q.Check(ctx, t)
		}()
	}
	wg.Wait()
	return errs
}

type quarantined struct {
	q   *Quarantine
	src synth.Source
}

// dropper is a source that can take tasks out for good (store.Source).
type dropper interface {
	Drop(ids ...string) int
}

// draw serves what next draws, less the tasks that do not hold up. From
// a source that can drop tasks, those are dropped and, when nothing drawn
// held up, it draws again: each round drops at least one task, so it ends
// with a task, or with the source's error once none is left
// (synth.ErrExhausted), never with an empty answer that asking again
// would repeat.
func (s quarantined) draw(ctx context.Context, next func() ([]env.Task, error)) ([]env.Task, error) {
	d, drops := s.src.(dropper)
	for {
		tasks, err := next()
		kept, bad, err := s.check(ctx, tasks, err)
		if !drops || len(bad) == 0 {
			return kept, err
		}
		if d.Drop(bad...) == 0 || len(kept) > 0 || err != nil || ctx.Err() != nil {
			return kept, err
		}
	}
}

// check splits tasks into those that hold up and the ids of those set
// aside; a fault while checking is joined to err.
func (s quarantined) check(ctx context.Context, tasks []env.Task, err error) ([]env.Task, []string, error) {
	ptrs := make([]*env.Task, len(tasks))
	for i := range tasks {
		ptrs[i] = &tasks[i]
	}
	errs := s.q.CheckAll(ctx, ptrs, 4)
	kept := tasks[:0]
	var bad []string
	var faults []error
	for i := range tasks {
		switch cerr := errs[i]; {
		case cerr == nil:
			kept = append(kept, tasks[i])
		case errors.Is(cerr, synth.ErrQuarantined):
			bad = append(bad, tasks[i].ID)
		default:
			faults = append(faults, cerr)
		}
	}
	if len(faults) > 0 {
		return kept, bad, errors.Join(append([]error{err}, faults...)...)
	}
	return kept, bad, err
}
