package actors

import (
	"context"
	"errors"
	"sync"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/synth"
)

// SynthStats is the synthesizer's part of a summary.
type SynthStats struct {
	Requests int64 `json:"requests"`
	// Steered are the requests answered by a steerable source's TasksFor
	// (what they brought is the curriculum's to count:
	// curriculum.FrontierStats.SteeredTasks).
	Steered int64 `json:"steered"`
	// Compound are the requests for a compound task answered by a
	// synth.Compounder; CompoundTasks the compound tasks they made.
	Compound      int64 `json:"compound,omitempty"`
	CompoundTasks int64 `json:"compound_tasks,omitempty"`
	Tasks         int64 `json:"tasks"`
	Errors        int64 `json:"errors"`
	// Yield is the tasks made per bin (synth.Knobs key).
	Yield map[string]int64 `json:"yield,omitempty"`
}

// synthesizer answers "k tasks at difficulty d" (or "k tasks of this bin",
// from a synth.Steerable source) from a synth.Source. Each
// request runs in a worker goroutine (real sources validate tasks in
// sandboxes for minutes), at most maxInflight at once; the rest wait in
// order.
type synthesizer struct {
	src         synth.Source
	maxInflight int
	root        *actor.RootContext
	runners     *sync.WaitGroup

	inflight int
	queued   []*SynthRequest
	ctx      context.Context
	cancel   context.CancelFunc
	st       SynthStats
}

// synthFinished carries a worker's answer back through the actor, which
// counts it before passing it on: the requester never sees tasks that the
// synthesizer's stats do not yet include.
type synthFinished struct {
	req       *SynthRequest
	res       *SynthTasks
	compounds int // of res.Tasks, the first compounds are compound tasks
}

func (s *synthesizer) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		s.ctx, s.cancel = context.WithCancel(context.Background())
	case *SynthRequest:
		s.st.Requests++
		if s.inflight >= s.maxInflight {
			s.queued = append(s.queued, m)
			return
		}
		s.launch(ctx, m)
	case *synthFinished:
		s.inflight--
		s.st.Tasks += int64(len(m.res.Tasks))
		s.st.CompoundTasks += int64(m.compounds)
		for i := range m.res.Tasks {
			if s.st.Yield == nil {
				s.st.Yield = make(map[string]int64)
			}
			s.st.Yield[synth.BinOf(&m.res.Tasks[i]).Key()]++
		}
		if m.res.Err != nil {
			s.st.Errors++
		}
		ctx.Send(m.req.ReplyTo, m.res)
		if len(s.queued) > 0 {
			next := s.queued[0]
			s.queued = s.queued[1:]
			s.launch(ctx, next)
		}
	case *GetStats:
		st := s.st
		st.Yield = make(map[string]int64, len(s.st.Yield))
		for k, v := range s.st.Yield {
			st.Yield[k] = v
		}
		ctx.Respond(&st)
	case *actor.Stopping:
		if s.cancel != nil {
			s.cancel()
		}
	}
}

func (s *synthesizer) launch(ctx actor.Context, m *SynthRequest) {
	s.inflight++
	self, root, src, sctx := ctx.Self(), s.root, s.src, s.ctx
	steer, ok := src.(synth.Steerable)
	if ok = ok && m.Knobs != nil; ok {
		s.st.Steered++
	}
	comp, compound := src.(synth.Compounder)
	if compound = compound && m.Base != nil; compound {
		s.st.Compound++
	}
	s.runners.Add(1)
	go func() {
		defer s.runners.Done()
		var tasks []env.Task
		var cerr, err error
		if compound {
			// A compound that fails (its base's package gone from the
			// source, say) is reported; the rest of K is made as usual.
			tasks, cerr = comp.Compound(sctx, m.K, *m.Base)
		}
		compounds := len(tasks)
		if k := m.K - len(tasks); k > 0 && sctx.Err() == nil {
			var more []env.Task
			if ok {
				more, err = steer.TasksFor(sctx, k, *m.Knobs)
			} else {
				more, err = src.Tasks(sctx, k, m.Difficulty)
			}
			tasks = append(tasks, more...)
		}
		err = errors.Join(cerr, err)
		res := &SynthTasks{Tasks: tasks, Err: err, Exhausted: errors.Is(err, synth.ErrExhausted)}
		root.Send(self, &synthFinished{req: m, res: res, compounds: compounds})
	}()
}
