package actors

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/frognano/frog/actors/wire"
	"github.com/frognano/frog/env"
	"github.com/frognano/frog/policy"
)

// deliverChunk is the least number of answers worth a goroutine of their own.
const deliverChunk = 64

// PolicyServerStats is the policy server's part of a summary.
type PolicyServerStats struct {
	Requests  int64   `json:"requests"`
	Batches   int64   `json:"batches"`
	MeanBatch float64 `json:"mean_batch"`
	MaxBatch  int     `json:"max_batch"`
	Version   int64   `json:"version"`
	// Errors counts requests answered with an error.
	Errors int64 `json:"errors"`
	// Dropped counts answers for episodes that were gone (cancelled or
	// crashed) by the time their batch finished.
	Dropped int64 `json:"dropped_answers"`
}

// policyServer batches act requests from many episodes and runs each batch
// on the current policy in an inference goroutine, at most maxInflight at
// once. A batch is run when it reaches maxBatch, or when maxWait has passed
// since its first request; with maxWait 0 it is run as soon as the server has
// taken every request already waiting in its mailbox (natural batching:
// under load batches grow, with one episode there is no waiting). Every
// action is tagged with the version of the policy that chose it.
type policyServer struct {
	pol         policy.Policy
	version     int64
	maxBatch    int
	maxWait     time.Duration
	maxInflight int
	root        *actor.RootContext
	runners     *sync.WaitGroup

	pending []*ActRequest
	// obs holds the inference goroutines' observation slices between
	// batches (*[]env.Observation): a batch copies each request's
	// observation into one, and the policy is done with it when Act returns.
	obs       sync.Pool
	gen       uint64
	scheduled bool
	inflight  int
	queued    [][]*ActRequest
	ctx       context.Context
	cancel    context.CancelFunc
	st        PolicyServerStats
	// errors counts failed requests. The worker counts before it answers, so
	// an episode that saw the error never finds it missing from the stats.
	errors  atomic.Int64
	dropped atomic.Int64
	// codec, in a run open to workers, encodes the policy they pull; blob
	// is the last encoding, kept until the version changes.
	codec Codec
	blob  *wire.PolicyBlob
}

func (s *policyServer) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		s.ctx, s.cancel = context.WithCancel(context.Background())
	case *ActRequest:
		s.pending = append(s.pending, m)
		switch {
		case len(s.pending) >= s.maxBatch:
			s.dispatch(ctx)
		case !s.scheduled:
			s.scheduled = true
			gen, self := s.gen, ctx.Self()
			if s.maxWait <= 0 {
				ctx.Send(self, &flushBatch{gen: gen})
			} else {
				time.AfterFunc(s.maxWait, func() { s.root.Send(self, &flushBatch{gen: gen}) })
			}
		}
	case *flushBatch:
		if m.gen == s.gen && len(s.pending) > 0 {
			s.dispatch(ctx)
		}
	case *batchDone:
		s.inflight--
		switch {
		case len(s.queued) > 0:
			b := s.queued[0]
			s.queued = s.queued[1:]
			s.launch(ctx, b)
		case len(s.pending) > 0:
			s.dispatch(ctx)
		}
	case *wire.PullPolicy:
		s.answerPull(ctx)
	case *PolicyUpdate:
		if m.Version > s.version {
			s.pol, s.version = m.Policy, m.Version
		}
	case *GetStats:
		st := s.st
		st.Errors, st.Dropped = s.errors.Load(), s.dropped.Load()
		if st.Batches > 0 {
			st.MeanBatch = float64(st.Requests) / float64(st.Batches)
		}
		st.Version = s.version
		ctx.Respond(&st)
	case *actor.Stopping:
		if s.cancel != nil {
			s.cancel()
		}
	}
}

// dispatch runs the pending batch if an inference worker is free. While
// all are busy, requests keep accumulating (up to maxBatch, beyond which full
// batches queue), so batches grow with load.
func (s *policyServer) dispatch(ctx actor.Context) {
	s.gen++
	s.scheduled = false
	if s.inflight >= s.maxInflight {
		if len(s.pending) >= s.maxBatch {
			s.queued = append(s.queued, s.pending)
			s.pending = make([]*ActRequest, 0, s.maxBatch)
		}
		return
	}
	batch := s.pending
	s.pending = make([]*ActRequest, 0, len(batch))
	s.launch(ctx, batch)
}

func (s *policyServer) launch(ctx actor.Context, batch []*ActRequest) {
	s.inflight++
	s.st.Batches++
	s.st.Requests += int64(len(batch))
	s.st.MaxBatch = max(s.st.MaxBatch, len(batch))
	pol, version, self, root, ictx := s.pol, s.version, ctx.Self(), s.root, s.ctx
	registry := ctx.ActorSystem().ProcessRegistry
	s.runners.Add(1)
	go func() {
		defer s.runners.Done()
		obs := s.observations(len(batch))
		for i, r := range batch {
			(*obs)[i] = r.Obs
		}
		acts := make([]env.Action, len(batch))
		err := actSafely(ictx, pol, *obs, acts)
		if err == nil {
			// Act has returned without error: nothing of the policy's runs
			// on. (The actions are not reused: the answers point into them.)
			clear(*obs)
			s.obs.Put(obs)
		}
		errs := itemErrors(ictx, err, len(batch))
		for _, err := range errs {
			if err != nil {
				s.errors.Add(1)
			}
		}
		itemErr := func(i int) error {
			if errs == nil {
				return nil
			}
			return errs[i]
		}
		deliver := func(lo, hi int) {
			for i := lo; i < hi; i++ {
				r := batch[i]
				if gone := r.Gone; gone != nil && gone.Load() || gone == nil && !registered(registry, r.ReplyTo) {
					// The episode is gone (cancelled, crashed, its runner
					// done): its answer would only feed the dead letters.
					s.dropped.Add(1)
					continue
				}
				acts[i].Version = version
				root.Send(r.ReplyTo, &ActResponse{Attempt: r.Obs.Attempt, Step: r.Obs.Step, Action: &acts[i], Err: itemErr(i)})
			}
		}
		// Episodes that step inline do their sandbox work on the goroutine
		// that delivers their answer: split a large batch across the cores.
		parts := min(runtime.GOMAXPROCS(0), len(batch)/deliverChunk)
		if parts <= 1 {
			deliver(0, len(batch))
		} else {
			var wg sync.WaitGroup
			for p := range parts {
				wg.Add(1)
				go func() {
					defer wg.Done()
					deliver(p*len(batch)/parts, (p+1)*len(batch)/parts)
				}()
			}
			wg.Wait()
		}
		root.Send(self, &batchDone{})
	}()
}

// observations returns a slice of n observations for a batch, reused from
// an earlier batch when one is free.
func (s *policyServer) observations(n int) *[]env.Observation {
	if obs, ok := s.obs.Get().(*[]env.Observation); ok && cap(*obs) >= n {
		*obs = (*obs)[:n]
		return obs
	}
	obs := make([]env.Observation, n)
	return &obs
}

// registered reports whether pid's process is still in the registry.
func registered(registry *actor.ProcessRegistryValue, pid *actor.PID) bool {
	_, ok := registry.Get(pid)
	return ok
}

// actSafely runs a batch on pol; a panic of the policy is an
// infrastructure fault of every episode in the batch, not a crash of frog.
func actSafely(ctx context.Context, pol policy.Policy, obs []env.Observation, acts []env.Action) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = env.Infra(fmt.Errorf("policy panicked on a batch of %d: %v", len(obs), r))
		}
	}()
	return pol.Act(ctx, obs, acts)
}

// itemErrors splits the error of a batch of n into each item's: an
// ItemErrors gives each its own entry, any other error is every item's. A
// cancellation of the server's context stays a cancellation; every other
// error is an infrastructure fault (the agent's own mistakes are actions,
// never errors: env.Action.Mistake). It is nil when err is.
func itemErrors(ctx context.Context, err error, n int) []error {
	if err == nil {
		return nil
	}
	errs := make([]error, n)
	for i := range errs {
		e := policy.Item(err, i)
		if e != nil && !(ctx.Err() != nil && errors.Is(e, ctx.Err())) {
			e = env.Infra(e)
		}
		errs[i] = e
	}
	return errs
}
