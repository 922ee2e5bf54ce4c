package actors

import (
	"fmt"
	"sync"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/frognano/frog/curriculum"
	"github.com/frognano/frog/env"
	"github.com/frognano/frog/synth"
)

// CurriculumRecord is a metrics.jsonl line of the curriculum: its state
// when the policy reached Version.
type CurriculumRecord struct {
	Kind    string `json:"kind"` // "curriculum"
	Version int64  `json:"version"`
	curriculum.CurriculumStats
}

// curriculumActor serves the scheduler's requests for tasks as its
// curriculum.Curriculum plans them: tasks served before, replayed, and fresh
// tasks from a pool that it refills from the synthesizer with what the
// curriculum asks for. It feeds the curriculum the outcomes of completed
// episodes and the policy versions they report. At most one request to the
// synthesizer is in flight, and the pool is refilled only when a plan
// cannot be served from it: the tasks served then depend only on the order
// of the scheduler's messages, which keeps seeded runs reproducible. A
// synthesizer that has no task left (synth.ErrExhausted), or answers
// maxEmptyAnswers times in a row with none, is asked no more: plans are
// served with their replays and what the pool holds, and an answer with
// no task tells the scheduler why (Tasks.RanOut), which ends admission.
//
// It completes the learner's checkpoints: a SaveCheckpoint gets the
// curriculum's snapshot (curriculum.Snapshotter) and the pool as they are when
// it arrives, and the whole is stored through sink, so that a kill leaves
// the learner's and the curriculum's states of one moment in one file.
type curriculumActor struct {
	cur      curriculum.Curriculum
	synth    *actor.PID
	refill   int
	log      zerolog.Logger
	onRecord func(CurriculumRecord)
	sink     CheckpointSink

	pool        []*env.Task
	waiting     []*waitingPlan
	outstanding bool
	lastReq     synth.Request
	// empty counts the synthesizer's answers in a row that brought no
	// task; dry, once set, says why it is asked no more.
	empty   int
	dry     string
	version int64
	records int64

	// saves feeds the checkpoint writer (one goroutine, started by the
	// first checkpoint, so that checkpoints are stored in order and the
	// disk's latency, fsyncs included, never holds up the curriculum's
	// mailbox); saving waits for it when the actor stops.
	saves  chan saveJob
	saving sync.WaitGroup
}

// saveJob is one checkpoint to store, and who to tell.
type saveJob struct {
	ck      Checkpoint
	replyTo *actor.PID
}

// maxEmptyAnswers is how many answers in a row without a task the
// synthesizer may give (failures, or a source with nothing to give)
// before the curriculum stops asking it: asking again at once would
// spin.
const maxEmptyAnswers = 3

// ranOut stops asking the synthesizer: requests are answered from the
// pool and the plans' replays, and an answer with no task says why.
func (c *curriculumActor) ranOut(reason string) {
	if c.dry == "" {
		c.dry = reason
		c.log.Error().Str("reason", reason).Int("pool", len(c.pool)).Msg("no more tasks from the task source: serving replays and the pool only")
	}
}

// waitingPlan is a request of the scheduler and, once made, its plan.
type waitingPlan struct {
	req  *NextTasks
	plan *curriculum.Plan
}

func (c *curriculumActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *NextTasks:
		c.waiting = append(c.waiting, &waitingPlan{req: m})
		c.serve(ctx)
	case *SynthTasks:
		c.outstanding = false
		c.cur.Synthesized(c.lastReq, m.Tasks)
		if m.Err != nil {
			c.log.Error().Err(m.Err).Int("tasks", len(m.Tasks)).Msg("synthesizer failed")
		}
		for i := range m.Tasks {
			c.pool = append(c.pool, &m.Tasks[i])
		}
		switch {
		case len(m.Tasks) > 0:
			c.empty = 0
		case m.Exhausted:
			c.ranOut(fmt.Sprintf("the task source has no task left (%v)", m.Err))
		default:
			if c.empty++; c.empty >= maxEmptyAnswers {
				reason := fmt.Sprintf("the task source gave no task %d times in a row", c.empty)
				if m.Err != nil {
					reason += fmt.Sprintf(" (last: %v)", m.Err)
				}
				c.ranOut(reason)
			}
		}
		c.serve(ctx)
	case *Outcome:
		if m.Version > c.version {
			c.cur.Advance(m.Version)
			c.version = m.Version
			c.record()
		}
		if m.Kind == Completed && m.Task != nil {
			if ro, ok := c.cur.(curriculum.ReturnObserver); ok {
				ro.ObserveReturn(m.Task, m.Return, m.Group)
			}
			c.cur.Observe(m.Task, m.Reward, m.Group)
		}
	case *GetStats:
		st := c.cur.Stats()
		ctx.Respond(&st)
	case *SaveCheckpoint:
		ck := m.Checkpoint
		c.addState(&ck) // on the actor: the state as of this message
		if c.sink == nil {
			ctx.Send(m.ReplyTo, &CheckpointSaved{Version: ck.Version, Updates: ck.Updates, Err: "no checkpoint sink"})
			return
		}
		if c.saves == nil {
			c.saves = make(chan saveJob, 16)
			c.saving.Add(1)
			go c.write(ctx.ActorSystem().Root)
		}
		c.saves <- saveJob{ck, m.ReplyTo}
	case *actor.Stopping:
		if c.saves != nil {
			close(c.saves)
			c.saving.Wait() // a checkpoint sent is stored before the run ends
			c.saves = nil
		}
	}
}

// write stores the checkpoints sent to it, in order, and answers each
// with a CheckpointSaved.
func (c *curriculumActor) write(root *actor.RootContext) {
	defer c.saving.Done()
	for j := range c.saves {
		done := &CheckpointSaved{Version: j.ck.Version, Updates: j.ck.Updates}
		if err := c.sink.Save(j.ck); err != nil {
			done.Err = err.Error()
		}
		root.Send(j.replyTo, done)
	}
}

// addState adds the curriculum's snapshot and the pool to a learner's
// checkpoint. A curriculum that cannot snapshot leaves the checkpoint
// without its state (a run resumed from it starts its curriculum fresh).
func (c *curriculumActor) addState(ck *Checkpoint) {
	s, ok := c.cur.(curriculum.Snapshotter)
	if !ok {
		return
	}
	data, err := s.Snapshot()
	if err != nil {
		c.log.Warn().Err(err).Int64("version", ck.Version).Msg("checkpoint saved without the curriculum's state: a run resumed from it starts its curriculum fresh")
		return
	}
	ck.Curriculum = data
	ck.Pool = make([]env.Task, len(c.pool))
	for i, t := range c.pool {
		ck.Pool[i] = *t
	}
}

// record writes the curriculum's state to the metrics hook; the per-bin
// and per-round tables only every tenth record, to keep the lines short.
func (c *curriculumActor) record() {
	if c.onRecord == nil {
		return
	}
	st := c.cur.Stats()
	st.Bins = nil
	if st.Frontier != nil && c.records%10 != 0 {
		f := *st.Frontier
		f.Bins = nil
		st.Frontier = &f
	}
	if st.Rounds != nil && c.records%10 != 0 {
		r := *st.Rounds
		r.PerRound = nil
		st.Rounds = &r
	}
	c.records++
	c.onRecord(CurriculumRecord{Kind: "curriculum", Version: c.version, CurriculumStats: st})
}

func (c *curriculumActor) serve(ctx actor.Context) {
	for len(c.waiting) > 0 {
		w := c.waiting[0]
		if w.plan == nil {
			p := c.cur.Plan(w.req.N)
			w.plan = &p
		}
		n := w.plan.Fresh
		if len(c.pool) < n {
			if c.dry == "" {
				break
			}
			n = len(c.pool) // what there is
		}
		c.waiting = c.waiting[1:]
		fresh := make([]*env.Task, n)
		copy(fresh, c.pool)
		c.pool = c.pool[n:]
		c.cur.Admit(fresh)
		out := append(append(make([]*env.Task, 0, w.req.N), w.plan.Replay...), fresh...)
		res := &Tasks{Tasks: out}
		if len(out) == 0 {
			res.RanOut = c.dry
		}
		ctx.Send(w.req.ReplyTo, res)
	}
	if len(c.waiting) > 0 && !c.outstanding {
		need := -len(c.pool)
		for _, w := range c.waiting {
			if w.plan != nil {
				need += w.plan.Fresh
			} else {
				need += w.req.N
			}
		}
		c.outstanding = true
		c.lastReq = c.cur.Request()
		ctx.Send(c.synth, &SynthRequest{K: max(need, c.refill), Difficulty: c.lastReq.Difficulty, Knobs: c.lastReq.Knobs, Base: c.lastReq.Base, ReplyTo: ctx.Self()})
	}
}
