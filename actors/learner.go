package actors

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/frognano/frog/policy"
)

// UpdateRecord is one line of metrics.jsonl: what one learner update did.
type UpdateRecord struct {
	Update  int64 `json:"update"`
	Version int64 `json:"version"`
	// Episodes is how many results the learner had received by then.
	Episodes int64 `json:"episodes"`
	// Seconds is the wall time of the update.
	Seconds float64 `json:"update_seconds"`
	policy.UpdateStats
	// Judged counts the groups the learner judged since the previous
	// update. UpdateStats counts only the groups of this update's batch,
	// and with Config.RefillZeroVariance a group without signal is dropped
	// before it can reach a batch: its ZeroSignalGroups stays at 0 however
	// many were dropped.
	Judged GroupsJudged `json:"judged"`
}

// GroupsJudged counts GRPO groups as the learner judged them: all of them,
// those whose rewards were all equal (no signal), and of those the ones
// dropped and refilled (Config.RefillZeroVariance). LearnerStats counts
// the same over the run (Groups, ZeroSignalGroups, RefilledGroups).
type GroupsJudged struct {
	Groups     int64 `json:"groups"`
	ZeroSignal int64 `json:"zero_signal"`
	Refilled   int64 `json:"refilled"`
}

// since is what g counted beyond prev.
func (g GroupsJudged) since(prev GroupsJudged) GroupsJudged {
	return GroupsJudged{Groups: g.Groups - prev.Groups, ZeroSignal: g.ZeroSignal - prev.ZeroSignal, Refilled: g.Refilled - prev.Refilled}
}

// LearnerStats is the learner's part of a summary.
type LearnerStats struct {
	Updates int64 `json:"updates"`
	// FailedUpdates are updates whose learner returned an error or
	// panicked; their batch is dropped (DroppedGroups) and the version
	// advances, as past an empty batch.
	FailedUpdates int64 `json:"failed_updates"`
	// InterruptedUpdates are updates cut short, or never started, because
	// the run was cancelled.
	InterruptedUpdates int64 `json:"interrupted_updates"`
	// DroppedGroups are the groups of failed and interrupted updates.
	DroppedGroups int64 `json:"dropped_groups"`
	// EmptyBatches are batches with nothing to learn from; they advance the
	// version without an update.
	EmptyBatches int64 `json:"empty_batches"`
	Version      int64 `json:"version"`
	Results      int64 `json:"results"`
	Trajectories int64 `json:"trajectories"`
	Groups       int64 `json:"groups"`
	// ZeroSignalGroups are groups whose rewards were all equal.
	ZeroSignalGroups int64   `json:"zero_signal_groups"`
	ZeroSignalShare  float64 `json:"zero_signal_share"`
	// RefilledGroups are zero-signal groups dropped when they closed and
	// replaced by new ones (Config.RefillZeroVariance).
	RefilledGroups   int64 `json:"refilled_groups,omitempty"`
	StaleDropped     int64 `json:"stale_dropped"`
	MaxStalenessSeen int64 `json:"max_staleness_seen"`
	MaxStaleness     int   `json:"max_staleness"`
	// UpdateSeconds is the wall time spent in updates.
	UpdateSeconds float64 `json:"update_seconds"`
	// Checkpoints counts the checkpoints saved, FailedCheckpoints those
	// that were not.
	Checkpoints       int64 `json:"checkpoints"`
	FailedCheckpoints int64 `json:"failed_checkpoints,omitempty"`
	// Error says why the learner ended the run (Config.MaxUpdateFailures).
	Error string `json:"error,omitempty"`
	// CheckpointError says why the run ended for want of a stored
	// checkpoint (Config.CheckpointTries), and which was the last stored.
	CheckpointError string `json:"checkpoint_error,omitempty"`
}

// pendingBatch is a batch of closed groups waiting for its update, with the
// result that closed it: that result's outcome is passed on only once the
// update is done and its policy published. The last batch of a run has no
// trigger.
type pendingBatch struct {
	groups  []policy.Group
	trigger *EpisodeResult
}

// updateDone is an update goroutine's report to the learner actor.
type updateDone struct {
	batch   pendingBatch
	pol     policy.Policy
	st      policy.UpdateStats
	err     error
	elapsed time.Duration
}

// abortRun tells the scheduler that the run cannot go on (learner →
// scheduler): it stops admitting and cancels what runs, as on a shutdown.
type abortRun struct{ reason string }

// learner collects episode results into GRPO groups (a batcher) and applies
// an update every groupsPerUpdate closed groups. An update runs in a
// goroutine of its own, one at a time, under a context that the run's
// cancellation reaches, so the learner's mailbox stays open while it runs:
// results that close no batch are filed and passed on meanwhile, batches
// that close queue behind it. Each new policy is published to the policy
// server before the outcome of the result that triggered its batch is passed
// on, so with one worker every step happens in an order fixed by the seed.
//
// A failed or panicking update is counted, logged once, and its batch
// dropped; the version still advances (the scheduler's staleness gate counts
// batches). After maxFailures failures in a row the learner asks the
// scheduler to end the run.
//
// A checkpoint is the learner's bytes and the run's progress, taken between
// updates and sent as plain data to the curriculum actor (saveTo), which
// adds the curriculum's state and stores it, then answers with a
// CheckpointSaved: neither mailbox waits on the other. A checkpoint that
// is not stored is tried again after the next update; after saveTries in a
// row the learner asks the scheduler to end the run (a run that cannot
// checkpoint would train on with nothing to resume from). The answer to a
// Flush waits for the checkpoints on their way and the last one, tried up
// to saveTries times, so that a run ends with its final checkpoint stored.
type learner struct {
	l           policy.Learner
	server      *actor.PID
	b           *batcher
	maxFailures int
	onUpdate    func(UpdateRecord)
	// judged is the batcher's count of groups at the last update: an
	// UpdateRecord counts those judged since.
	judged    GroupsJudged
	onEpisode func(*EpisodeResult)
	log       zerolog.Logger
	root      *actor.RootContext
	runners   *sync.WaitGroup
	// runCtx is the run's context; the updates' context derives from it.
	runCtx context.Context
	// Every every updates and at the end a checkpoint goes to saveTo (the
	// curriculum actor; nil: none); sent is the update count of the last
	// one sent, pending the ones not yet answered, retry says the last
	// answer was a failure (the next chance sends again), failedSaves
	// counts those in a row (saveTries of them end the run), saved is the
	// last stored; finalSent says the last checkpoint of a Flush was sent,
	// final that it is done with (stored, or given up on).
	every       int
	saveTo      *actor.PID
	saveTries   int
	sent        int64
	pending     int
	retry       bool
	failedSaves int
	saved       *CheckpointSaved
	finalSent   bool
	final       bool

	// The run's progress beyond the learner's tallies (Progress): the
	// accounting of the results filed, the ids above theirs, the time
	// before this part of the run started and when it did; sched is the
	// scheduler the results report to.
	eps          EpisodeCounts
	nextEpisode  uint64
	nextGroup    uint64
	startSeconds float64
	started      time.Time
	sched        *actor.PID

	ctx     context.Context
	cancel  context.CancelFunc
	pol     policy.Policy // the last policy published
	version int64
	queue   []pendingBatch
	busy    bool
	inRow   int // consecutive failed updates
	flushTo *actor.PID
	st      LearnerStats
}

func (l *learner) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		l.ctx, l.cancel = context.WithCancel(l.runCtx)
		l.pol = l.l.Policy()
		l.started = time.Now()
	case *EpisodeResult:
		if l.onEpisode != nil {
			l.onEpisode(m)
		}
		l.count(m)
		due := l.b.add(m)
		refill := l.b.takeRefill()
		if due && !refill {
			l.queue = append(l.queue, pendingBatch{groups: l.b.take(), trigger: m})
			l.next(ctx)
			return
		}
		if due {
			// Not a batch's trigger: a dropped group closes no batch.
			l.queue = append(l.queue, pendingBatch{groups: l.b.take()})
			l.next(ctx)
		}
		l.reportAs(ctx, m, refill)
	case *updateDone:
		l.busy = false
		l.finish(ctx, m)
		l.next(ctx)
	case *Flush:
		if l.b.closeAll() {
			l.queue = append(l.queue, pendingBatch{groups: l.b.take()})
		}
		l.flushTo = ctx.Sender()
		l.next(ctx)
	case *CheckpointSaved:
		l.pending--
		if m.Err != "" {
			l.refused(ctx, m.Version, m.Err)
		} else {
			l.st.Checkpoints++
			l.failedSaves, l.saved = 0, m
		}
		l.next(ctx)
	case *actor.Stopping:
		if l.cancel != nil {
			l.cancel()
		}
	}
}

// next starts the next queued update unless one runs, settling batches that
// need no update on the way, and answers a waiting Flush once all are done.
func (l *learner) next(ctx actor.Context) {
	for !l.busy && len(l.queue) > 0 {
		p := l.queue[0]
		l.queue = l.queue[1:]
		p.groups = l.b.fresh(p.groups, l.version)
		switch {
		case len(p.groups) == 0:
			// Nothing to learn from (every member failed or was stale), but
			// the version still advances: the scheduler's staleness gate
			// counts batches, and would otherwise stall admission for good.
			l.st.EmptyBatches++
			l.advance(ctx, l.pol)
			l.report(ctx, p.trigger)
		case l.ctx.Err() != nil || l.st.Error != "" || l.st.CheckpointError != "":
			// The run is ending: cancelled, or given up on.
			l.st.InterruptedUpdates++
			l.st.DroppedGroups += int64(len(p.groups))
			l.advance(ctx, l.pol)
			l.report(ctx, p.trigger)
		default:
			l.launch(ctx, p)
		}
	}
	if l.busy || l.flushTo == nil || l.pending > 0 {
		return
	}
	if !l.final {
		// After the checkpoints on their way are answered, and even when
		// no update happened since the last: the curriculum has moved on
		// (the outcomes since), and the last checkpoint is the run's state
		// at its end. A refused one is sent again at once, until it is
		// stored or saveTries in a row were refused.
		if l.finalSent && !l.retry || l.st.CheckpointError != "" {
			l.final = true
		} else {
			l.finalSent = true
			if l.checkpoint(ctx, l.st.Updates > 0); l.pending > 0 {
				return // answered when it is stored
			}
			l.final = true
		}
	}
	st := l.stats()
	ctx.Send(l.flushTo, &st)
	l.flushTo = nil
}

// launch runs one update in a goroutine of its own.
func (l *learner) launch(ctx actor.Context, p pendingBatch) {
	l.busy = true
	lrn, uctx, self, root := l.l, l.ctx, ctx.Self(), l.root
	l.runners.Add(1)
	go func() {
		defer l.runners.Done()
		start := time.Now()
		pol, st, err := updateSafely(uctx, lrn, p.groups)
		root.Send(self, &updateDone{batch: p, pol: pol, st: st, err: err, elapsed: time.Since(start)})
	}()
}

// finish applies what an update did and passes on its trigger's outcome.
func (l *learner) finish(ctx actor.Context, m *updateDone) {
	l.st.UpdateSeconds += m.elapsed.Seconds()
	groups := len(m.batch.groups)
	switch {
	case m.err != nil && l.ctx.Err() != nil:
		l.st.InterruptedUpdates++
		l.st.DroppedGroups += int64(groups)
		l.advance(ctx, l.pol)
	case m.err != nil:
		l.st.FailedUpdates++
		l.st.DroppedGroups += int64(groups)
		l.inRow++
		l.log.Error().Err(m.err).Int("groups", groups).Int("consecutive", l.inRow).Msg("learner update failed; batch dropped")
		l.advance(ctx, l.pol)
		if l.maxFailures > 0 && l.inRow >= l.maxFailures && l.st.Error == "" {
			l.st.Error = fmt.Sprintf("%d consecutive updates failed (max update failures %d); last: %v", l.inRow, l.maxFailures, m.err)
			if t := m.batch.trigger; t != nil && t.ReportTo != nil {
				ctx.Send(t.ReportTo, &abortRun{reason: l.st.Error})
			}
		}
	default:
		l.inRow = 0
		l.st.Updates++
		l.advance(ctx, m.pol)
		judged := l.b.judged()
		if l.onUpdate != nil {
			l.onUpdate(UpdateRecord{Update: l.st.Updates, Version: l.version, Episodes: l.b.st.results,
				Seconds: m.elapsed.Seconds(), UpdateStats: m.st, Judged: judged.since(l.judged)})
		}
		l.judged = judged
		if l.every > 0 && (l.st.Updates%int64(l.every) == 0 || l.retry) {
			l.checkpoint(ctx, false)
		}
	}
	l.report(ctx, m.batch.trigger)
}

// checkpoint sends the learner's state to be completed and stored, unless
// it cannot be, the run gave up on checkpoints, or, when not forced, it was
// sent already (and not refused). It runs between updates (never while one
// is in flight).
func (l *learner) checkpoint(ctx actor.Context, force bool) {
	c, ok := l.l.(policy.Checkpointer)
	if !ok || l.saveTo == nil || l.busy || l.st.CheckpointError != "" || (l.st.Updates == l.sent && !l.retry && !force) {
		return
	}
	l.sent = l.st.Updates
	data, err := c.Checkpoint()
	if err != nil {
		l.refused(ctx, l.version, err.Error())
		return
	}
	l.retry = false
	l.pending++
	ctx.Send(l.saveTo, &SaveCheckpoint{ReplyTo: ctx.Self(), Checkpoint: Checkpoint{Progress: l.progress(), Learner: data}})
}

// refused notes a checkpoint that was not stored: the next chance tries
// again, and after saveTries in a row the learner asks the scheduler to
// end the run, naming the last checkpoint stored.
func (l *learner) refused(ctx actor.Context, version int64, why string) {
	l.retry = true
	l.failedSaves++
	l.st.FailedCheckpoints++
	l.log.Error().Str("error", why).Int64("version", version).Int("in_a_row", l.failedSaves).Int("tries", l.saveTries).
		Msg("checkpoint not saved; the previous one stands")
	if l.failedSaves < l.saveTries || l.st.CheckpointError != "" {
		return
	}
	last := "none was stored by this run"
	if s := l.saved; s != nil {
		last = fmt.Sprintf("the last stored is of version %d (update %d)", s.Version, s.Updates)
	}
	l.st.CheckpointError = fmt.Sprintf("%d checkpoints in a row not stored, the last of version %d: %s; %s", l.failedSaves, version, why, last)
	if l.sched != nil {
		ctx.Send(l.sched, &abortRun{reason: l.st.CheckpointError})
	}
}

// count adds a filed result to the run's progress: its outcome, and its
// ids, above which a run resumed from a checkpoint numbers its own.
func (l *learner) count(m *EpisodeResult) {
	var reward float64
	suspected := false
	if m.Trajectory != nil {
		reward, suspected = m.Trajectory.Reward, m.Trajectory.RewardHackSuspected != ""
	}
	l.eps.add(m.Kind, reward, m.Attempts, suspected)
	l.nextEpisode = max(l.nextEpisode, m.Episode+1)
	l.nextGroup = max(l.nextGroup, m.Group+1)
	if m.ReportTo != nil {
		l.sched = m.ReportTo
	}
}

// progress is the run's progress now, for a checkpoint (counted among its
// checkpoints: a run resumed from it knows it was stored).
func (l *learner) progress() Progress {
	st := l.stats()
	st.Checkpoints++
	return Progress{Version: l.version, Updates: l.st.Updates, Results: l.b.st.results, Episodes: l.eps,
		NextEpisode: l.nextEpisode, NextGroup: l.nextGroup, Seconds: l.startSeconds + time.Since(l.started).Seconds(), Stats: st}
}

// resume takes up the counting of the run a resumed run continues, at its
// checkpoint's progress (zero for a new run).
func (l *learner) resume(p Progress) {
	l.st = p.Stats
	l.st.Error, l.st.CheckpointError = "", ""
	l.st.Updates = p.Updates
	l.version, l.sent = p.Version, p.Updates
	l.b.resume(p.Stats, p.Results)
	l.judged = l.b.judged()
	l.eps, l.nextEpisode, l.nextGroup, l.startSeconds = p.Episodes, p.NextEpisode, p.NextGroup, p.Seconds
	if p.Version > 0 {
		l.saved = &CheckpointSaved{Version: p.Version, Updates: p.Updates}
	}
}

// advance moves to the next version and publishes pol as it.
func (l *learner) advance(ctx actor.Context, pol policy.Policy) {
	l.version++
	l.pol = pol
	ctx.Send(l.server, &PolicyUpdate{Version: l.version, Policy: pol})
}

// report passes a filed result's outcome on to the scheduler.
func (l *learner) report(ctx actor.Context, m *EpisodeResult) { l.reportAs(ctx, m, false) }

// reportAs passes a filed result's outcome on; refill says its group was
// dropped for want of signal and another should be planned in its place.
func (l *learner) reportAs(ctx actor.Context, m *EpisodeResult, refill bool) {
	if m == nil || m.ReportTo == nil {
		return
	}
	o := &Outcome{Refill: refill, Episode: m.Episode, Group: m.Group, Task: m.Task, Kind: m.Kind, Attempts: m.Attempts, Version: l.version}
	if m.Trajectory != nil {
		o.Reward, o.Suspected = m.Trajectory.Reward, m.Trajectory.RewardHackSuspected != ""
		o.Return = policy.Return(m.Trajectory, l.b.tryCost)
	}
	ctx.Send(m.ReportTo, o)
}

func (l *learner) stats() LearnerStats {
	st := l.st
	l.b.fill(&st)
	st.Version = l.version
	return st
}

// updateSafely runs one update; a panic of the learner is an error of that
// update, not a crash of the learner actor (whose restart would lose its
// groups and reset its version).
func updateSafely(ctx context.Context, l policy.Learner, batch []policy.Group) (pol policy.Policy, st policy.UpdateStats, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("learner panicked on a batch of %d groups: %v", len(batch), r)
		}
	}()
	pol, st, err = l.Update(ctx, batch)
	if err == nil && pol == nil {
		err = errors.New("learner returned no policy")
	}
	return pol, st, err
}
