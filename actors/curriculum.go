package actors

import (
	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/synth"
)

// curriculum serves tasks to the scheduler from a pool that it refills from
// the synthesizer at the difficulty its synth.Curriculum asks for, and feeds
// the curriculum the outcomes of completed episodes. At most one request to
// the synthesizer is in flight, and the pool is refilled only when a request
// of the scheduler cannot be served from it: the tasks served then depend
// only on the order of the scheduler's messages, which keeps seeded runs
// reproducible.
type curriculum struct {
	cur    synth.Curriculum
	synth  *actor.PID
	refill int
	log    zerolog.Logger

	pool        []*env.Task
	waiting     []*NextTasks
	outstanding bool
	failures    int
}

func (c *curriculum) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *NextTasks:
		c.waiting = append(c.waiting, m)
		c.serve(ctx)
	case *SynthTasks:
		c.outstanding = false
		if m.Err != nil {
			c.failures++
			c.log.Error().Err(m.Err).Int("tasks", len(m.Tasks)).Msg("synthesizer failed")
		}
		for i := range m.Tasks {
			c.pool = append(c.pool, &m.Tasks[i])
		}
		if len(m.Tasks) == 0 && m.Err != nil && c.failures >= 3 {
			// Give the scheduler what there is rather than spin on a broken
			// source; it stops asking once its budget cannot be met.
			for _, w := range c.waiting {
				ctx.Send(w.ReplyTo, &Tasks{})
			}
			c.waiting = nil
			return
		}
		c.serve(ctx)
	case *Outcome:
		if m.Kind == Completed && m.Task != nil {
			c.cur.Observe(m.Task.Difficulty, m.Reward)
		}
	case *GetStats:
		st := c.cur.Stats()
		ctx.Respond(&st)
	}
}

func (c *curriculum) serve(ctx actor.Context) {
	for len(c.waiting) > 0 && len(c.pool) >= c.waiting[0].N {
		w := c.waiting[0]
		c.waiting = c.waiting[1:]
		out := make([]*env.Task, w.N)
		copy(out, c.pool)
		c.pool = c.pool[w.N:]
		ctx.Send(w.ReplyTo, &Tasks{Tasks: out})
	}
	if len(c.waiting) > 0 && !c.outstanding {
		need := -len(c.pool)
		for _, w := range c.waiting {
			need += w.N
		}
		c.outstanding = true
		ctx.Send(c.synth, &SynthRequest{K: max(need, c.refill), Difficulty: c.cur.Difficulty(), ReplyTo: ctx.Self()})
	}
}
