package actors

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/frognano/frog/env"
)

// Counters are the scheduler's running tallies, readable from any goroutine
// (a progress bar polls them). Only the scheduler writes them.
type Counters struct {
	Admitted  atomic.Int64
	Completed atomic.Int64
	Solved    atomic.Int64
	// Suspected counts the completed episodes whose verdict suspected a
	// reward hack (rewarded 0).
	Suspected   atomic.Int64
	FailedInfra atomic.Int64
	Cancelled   atomic.Int64
	Retries     atomic.Int64
	Running     atomic.Int64
}

// resume starts the tallies at a resumed run's (Config.Start).
func (c *Counters) resume(e EpisodeCounts) {
	c.Admitted.Add(e.Admitted)
	c.Completed.Add(e.Completed)
	c.Solved.Add(e.Solved)
	c.Suspected.Add(e.RewardHackSuspected)
	c.FailedInfra.Add(e.FailedInfra)
	c.Cancelled.Add(e.Cancelled)
	c.Retries.Add(e.Retries)
}

// Recorded is the number of episodes with a recorded outcome.
func (c *Counters) Recorded() int64 {
	return c.Completed.Load() + c.FailedInfra.Load() + c.Cancelled.Load()
}

// shutdown tells the scheduler to stop admitting and cancel what runs.
type shutdown struct{}

// deadline tells the scheduler that the run's duration is over: it stops
// admitting and lets running episodes finish.
type deadline struct{}

type schedulerConfig struct {
	episodes        int64 // 0: until the deadline or a shutdown
	concurrency     int
	groupSize       int
	groupsPerUpdate int
	maxStaleness    int
}

// member is one admitted-to-be episode of a planned group.
type member struct {
	group     uint64
	groupSize int
	task      *env.Task
}

// running is an admitted episode that has not ended.
type running struct {
	// pid is the episode's actor in this process; nil on a worker.
	pid  *actor.PID
	spec *episodeSpec
	// w is the worker the episode runs on (nil: this process); attempts
	// the sandboxes it used on workers lost before.
	w        *workerRef
	attempts int
	// placement is the episode's on its worker (placements).
	placement uint64
}

// scheduler admits episodes: at most concurrency at once, in GRPO groups of
// groupSize episodes of one task, no further ahead of the learner than the
// staleness bound allows, until the episode budget or the deadline is
// reached. It spawns the episodes as its children and supervises them, and
// keeps the accounting: every admitted episode ends in exactly one outcome.
type scheduler struct {
	cfg        schedulerConfig
	deps       *episodeDeps
	curriculum *actor.PID
	c          *Counters
	log        zerolog.Logger
	done       chan struct{}

	byID   map[uint64]*running
	queue  []member
	qhead  int
	nextEp uint64

	// planned counts the whole run's episodes (a resumed run's start with
	// those its checkpoint filed, but for the cancelled ones, which are
	// played again), groupsPlanned this part's groups, whose
	// ids begin at firstGroup; the staleness gate counts this part's
	// versions, from startVersion on.
	planned       int64 // episodes assigned to groups (admitted + queued)
	groupsPlanned int64
	firstGroup    uint64
	refunded      int64 // groups dropped for want of signal, planned anew
	version       int64
	startVersion  int64
	outstanding   bool // a NextTasks is in flight
	draining      bool // no more admission
	finished      bool
	// starved says the curriculum's last answer held no task: it is asked
	// again after the next outcome, not at once. ranOut, once set, says
	// why no task will come: admission ends when the queue is admitted.
	starved bool
	ranOut  string

	peakRunning int
	gateWaits   int64 // times admission waited on the staleness bound
	maxRestarts int
	restarts    int64
	self        *actor.PID
	pumpLater   bool
	// childrenGone is who waits for every episode actor to have stopped.
	childrenGone []*actor.PID

	// remote is set in a run open to workers (Deps.Remote): localSlots
	// of the concurrency run here, localRunning do now; retry holds the
	// admitted episodes of lost workers waiting for a slot. cancelling
	// says the run is being cancelled (not only drained).
	remote       *remoteState
	localSlots   int
	localRunning int
	retry        []*running
	cancelling   bool
}

// awaitChildren asks the scheduler to answer (with itself) once none of its
// episode actors is left. An episode stops itself after its outcome is
// sent; stopping the scheduler while one is still on its way out would
// send that one a Stop it no longer has a mailbox for (a dead letter).
type awaitChildren struct{}

// SchedulerStats is the scheduler's part of a summary.
type SchedulerStats struct {
	PeakConcurrency int `json:"peak_concurrency"`
	// Restarts counts episode actors restarted by their supervisor after an
	// infrastructure fault.
	Restarts        int64 `json:"restarts"`
	StalenessWaits  int64 `json:"staleness_waits"`
	Groups          int64 `json:"groups"`
	GroupsPerUpdate int   `json:"groups_per_update"`
	// TasksRanOut, when set, says why admission ended before the budget
	// was spent: the task source had no task left (Run returns
	// ErrNoTasks).
	TasksRanOut string `json:"tasks_ran_out,omitempty"`
	// Remote is a run's workers and links, when it was open to them.
	Remote *RemoteStats `json:"remote,omitempty"`
}

func (s *scheduler) Receive(ctx actor.Context) {
	if s.remote != nil && s.remoteReceive(ctx, ctx.Message()) {
		return
	}
	switch m := ctx.Message().(type) {
	case *actor.Started:
		s.self = ctx.Self()
		if s.remote != nil {
			s.remote.started = time.Now()
			s.tickLater()
		}
		s.pump(ctx)
	case *Tasks:
		s.outstanding = false
		switch {
		case len(m.Tasks) > 0:
			s.starved = false
		case m.RanOut != "":
			s.runOut(m.RanOut)
		case len(s.byID) == 0 && s.qhead == len(s.queue):
			// No outcome is on its way that could change the plan.
			s.runOut("the curriculum planned no task")
		default:
			s.starved = true
		}
		s.plan(m.Tasks)
		s.pump(ctx)
	case *Outcome:
		s.record(ctx, m)
	case *deadline:
		s.log.Info().Msg("duration or budget reached; draining running episodes")
		s.draining = true
		s.queue, s.qhead = nil, 0 // planned but never admitted
		s.pump(ctx)
	case *shutdown:
		s.stop(ctx)
	case *abortRun:
		s.log.Error().Str("reason", m.reason).Msg("ending the run: cancelling running episodes")
		s.stop(ctx)
	case *pumpNow:
		s.pumpLater = false
		s.pump(ctx)
	case *awaitChildren:
		if len(ctx.Children()) == 0 {
			ctx.Respond(m)
		} else {
			s.childrenGone = append(s.childrenGone, ctx.Sender())
		}
	case *actor.Terminated:
		if len(ctx.Children()) == 0 {
			for _, w := range s.childrenGone {
				ctx.Send(w, &awaitChildren{})
			}
			s.childrenGone = nil
		}
	case *GetStats:
		st := &SchedulerStats{PeakConcurrency: s.peakRunning, Restarts: s.restarts, StalenessWaits: s.gateWaits, Groups: s.groupsPlanned,
			GroupsPerUpdate: s.cfg.groupsPerUpdate, TasksRanOut: s.ranOut}
		if s.remote != nil {
			st.Remote = s.remote.stats()
		}
		ctx.Respond(st)
	}
}

// runOut ends admission for want of tasks: what is queued is still
// admitted, and the run ends when the last episode is recorded.
func (s *scheduler) runOut(reason string) {
	if s.ranOut == "" {
		s.ranOut = reason
		s.log.Error().Str("reason", reason).Int64("planned", s.planned).Msg("no more tasks: the run ends when the running episodes are recorded")
	}
}

// stop ends admission and cancels every running episode; each still
// reports its outcome.
func (s *scheduler) stop(ctx actor.Context) {
	s.draining = true
	s.cancelling = true
	s.queue, s.qhead = nil, 0
	for _, r := range s.retry {
		s.endUnplaced(r.spec, Cancelled, r.attempts, fmt.Errorf("episode %d: cancelled while waiting to be re-admitted: %w", r.spec.id, context.Canceled))
	}
	s.retry = nil
	for _, r := range s.byID {
		if r.w != nil {
			s.cancelRemote(ctx, r)
		} else {
			ctx.Send(r.pid, &Cancel{})
		}
	}
	s.pump(ctx)
}

// plan turns tasks into queued groups of episodes.
func (s *scheduler) plan(tasks []*env.Task) {
	for _, t := range tasks {
		n := int64(s.cfg.groupSize)
		if s.cfg.episodes > 0 {
			n = min(n, s.cfg.episodes-s.planned)
		}
		if n <= 0 || s.draining {
			return
		}
		g := s.firstGroup + uint64(s.groupsPlanned)
		s.groupsPlanned++
		s.planned += n
		for range n {
			s.queue = append(s.queue, member{group: g, groupSize: int(n), task: t})
		}
	}
}

// gateHeadroom is how many more groups may be planned within the staleness
// bound: groups planned < (version + maxStaleness + 1) × batch, where a
// group dropped for want of signal (refilled) no longer counts as planned.
// A resumed run counts its own groups and the versions since its start.
func (s *scheduler) gateHeadroom() int64 {
	return (s.version-s.startVersion+int64(s.cfg.maxStaleness)+1)*int64(s.cfg.groupsPerUpdate) - (s.groupsPlanned - s.refunded)
}

func (s *scheduler) budgetLeft() bool {
	return !s.draining && s.ranOut == "" && (s.cfg.episodes == 0 || s.planned < s.cfg.episodes)
}

// pump admits what it may and asks for tasks when it needs them.
func (s *scheduler) pump(ctx actor.Context) {
	for len(s.retry) > 0 && s.freeSlots() > 0 {
		r := s.retry[0]
		s.retry = s.retry[1:]
		s.place(ctx, r.spec, r.attempts)
	}
	for !s.draining && s.freeSlots() > 0 && s.qhead < len(s.queue) {
		m := s.queue[s.qhead]
		s.queue[s.qhead] = member{}
		s.qhead++
		s.spawn(ctx, m)
	}
	if s.qhead == len(s.queue) {
		s.queue, s.qhead = s.queue[:0], 0
	}
	if s.remote != nil && len(s.remote.dirty) > 0 {
		s.flush(ctx)
	}
	if free := s.freeSlots() - (len(s.queue) - s.qhead); free > 0 && s.budgetLeft() && !s.outstanding && !s.starved {
		if head := s.gateHeadroom(); head <= 0 {
			s.gateWaits++
		} else {
			n := int(min(groupsLeft(int64(free), s.cfg.groupSize), head))
			if s.cfg.episodes > 0 {
				n = int(min(int64(n), groupsLeft(s.cfg.episodes-s.planned, s.cfg.groupSize)))
			}
			s.outstanding = true
			ctx.Send(s.curriculum, &NextTasks{N: n, ReplyTo: ctx.Self()})
		}
	}
	// A request on its way is not waited for once admission has ended: its
	// answer would be planned for nothing, and a source that never answers
	// must not hold the run open.
	if len(s.byID) == 0 && len(s.retry) == 0 && s.qhead == len(s.queue) && (!s.outstanding || s.draining) && !s.budgetLeft() && !s.finished && !s.pumpLater {
		s.finished = true
		close(s.done)
	}
}

// groupsLeft is how many groups of size g hold n more episodes, rounded up,
// without overflowing for any n (a budget of math.MaxInt64 is "forever").
func groupsLeft(n int64, g int) int64 {
	left := n / int64(g)
	if n%int64(g) != 0 {
		left++
	}
	return left
}

func (s *scheduler) spawn(ctx actor.Context, m member) {
	spec := &episodeSpec{id: s.nextEp, group: m.group, groupSize: m.groupSize, task: m.task}
	s.nextEp++
	s.c.Admitted.Add(1)
	s.place(ctx, spec, 0)
}

// place starts an admitted episode: on this process, or in a remote run on
// the pool pick chooses (warm caches for its task first, then the most
// free slots). attempts is the sandboxes it used on workers lost before.
func (s *scheduler) place(ctx actor.Context, spec *episodeSpec, attempts int) {
	r := &running{spec: spec, attempts: attempts}
	if s.remote != nil {
		r.w = s.remote.pick(s.localSlots-s.localRunning, spec.task.ID)
	}
	if r.w == nil {
		r.pid = ctx.Spawn(newEpisodePropsAfter(spec, s.deps, attempts))
		s.localRunning++
		if s.remote != nil {
			s.remote.local++
			s.remote.localTasks.add(spec.task.ID)
		}
	} else {
		r.w.tasks.add(spec.task.ID)
		placement, err := s.placeRemote(spec, r.w, attempts)
		if err != nil {
			s.log.Error().Err(err).Msg("episode not sent to its worker; recorded as an infrastructure failure")
			s.endUnplaced(spec, FailedInfra, attempts, env.Infra(err))
			return
		}
		r.placement = placement
	}
	s.byID[spec.id] = r
	s.c.Running.Store(int64(len(s.byID)))
	s.peakRunning = max(s.peakRunning, len(s.byID))
}

// release frees the slot an episode held.
func (s *scheduler) release(r *running) {
	if r.w != nil {
		r.w.running--
	} else {
		s.localRunning--
	}
}

func (s *scheduler) record(ctx actor.Context, o *Outcome) {
	r, ok := s.byID[o.Episode]
	if !ok {
		s.log.Error().Uint64("episode", o.Episode).Msg("outcome of an episode that is not running")
		return
	}
	s.release(r)
	delete(s.byID, o.Episode)
	s.count(o.Kind, o.Reward, o.Attempts)
	if o.Suspected {
		s.c.Suspected.Add(1)
	}
	s.version = max(s.version, o.Version)
	if o.Refill {
		s.refunded++
	}
	if o.Kind == Completed {
		ctx.Send(s.curriculum, o)
	}
	s.starved = false
	s.pump(ctx)
}

func (s *scheduler) count(kind OutcomeKind, reward float64, attempts int) {
	switch kind {
	case Completed:
		s.c.Completed.Add(1)
		if reward > 0 {
			s.c.Solved.Add(1)
		}
	case FailedInfra:
		s.c.FailedInfra.Add(1)
	case Cancelled:
		s.c.Cancelled.Add(1)
	}
	if attempts > 1 {
		s.c.Retries.Add(int64(attempts - 1))
	}
	s.c.Running.Store(int64(len(s.byID)))
}

// HandleFailure makes the scheduler the supervisor strategy of its episodes
// (protoactor asks the parent actor first). It runs on the scheduler's own
// goroutine, between its messages. An infrastructure fault restarts the
// episode: a new attempt in a fresh sandbox (the episode itself gives up
// after its last attempt and reports a failure). Anything else is a bug in
// the episode: it is stopped and recorded as an infrastructure failure, and
// the learner is told so that the episode's group can close.
func (s *scheduler) HandleFailure(_ *actor.ActorSystem, sup actor.Supervisor, child *actor.PID, rs *actor.RestartStatistics, reason, _ any) {
	if f, ok := reason.(*infraFault); ok && rs.FailureCount() < s.maxRestarts {
		rs.Fail()
		s.restarts++
		s.log.Debug().Uint64("episode", f.episode).Int("attempt", f.attempt).Err(f.err).Msg("restarting episode after an infrastructure fault")
		sup.RestartChildren(child)
		return
	}
	sup.StopChildren(child)
	for id, r := range s.byID {
		if r.w != nil || !r.pid.Equal(child) {
			continue
		}
		s.log.Error().Uint64("episode", id).Interface("reason", reason).Msg("episode actor crashed; recorded as an infrastructure failure")
		s.release(r)
		delete(s.byID, id)
		s.count(FailedInfra, 0, 0)
		s.deps.root.Send(s.deps.learner, &EpisodeResult{
			Episode: id, Group: r.spec.group, GroupSize: r.spec.groupSize, Task: r.spec.task,
			Kind: FailedInfra, Err: fmt.Errorf("episode %d: actor crashed: %v: %w", id, reason, env.ErrInfra),
		})
		s.pumpLater = true
		s.deps.root.Send(s.self, &pumpNow{})
		return
	}
}

// pumpNow asks the scheduler to admit what it may (after a crash was handled
// outside Receive).
type pumpNow struct{}
