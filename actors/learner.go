package actors

import (
	"context"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/policy"
)

// UpdateRecord is one line of metrics.jsonl: what one learner update did.
type UpdateRecord struct {
	Update  int64 `json:"update"`
	Version int64 `json:"version"`
	// Episodes is how many results the learner had received by then.
	Episodes int64 `json:"episodes"`
	policy.UpdateStats
}

// LearnerStats is the learner's part of a summary.
type LearnerStats struct {
	Updates       int64 `json:"updates"`
	FailedUpdates int64 `json:"failed_updates"`
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
	StaleDropped     int64   `json:"stale_dropped"`
	MaxStalenessSeen int64   `json:"max_staleness_seen"`
	MaxStaleness     int     `json:"max_staleness"`
}

type groupAcc struct {
	task               *env.Task
	expected, received int
	trajs              []*env.Trajectory
}

// learner collects episode results into GRPO groups, applies an update every
// groupsPerUpdate closed groups, and publishes each new policy to the policy
// server before it passes on the outcome of the result that triggered it.
type learner struct {
	l               policy.Learner
	server          *actor.PID
	groupsPerUpdate int
	maxStaleness    int
	onUpdate        func(UpdateRecord)
	log             zerolog.Logger

	version int64
	groups  map[uint64]*groupAcc
	ready   []policy.Group
	closed  int // groups closed since the last update
	st      LearnerStats
}

func (l *learner) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		l.groups = make(map[uint64]*groupAcc)
	case *EpisodeResult:
		l.add(m)
		if l.closed >= l.groupsPerUpdate {
			l.update(ctx)
		}
		if m.ReportTo != nil {
			o := &Outcome{Episode: m.Episode, Task: m.Task, Kind: m.Kind, Attempts: m.Attempts, Version: l.version}
			if m.Trajectory != nil {
				o.Reward = m.Trajectory.Reward
			}
			ctx.Send(m.ReportTo, o)
		}
	case *Flush:
		for id, g := range l.groups {
			l.close(g)
			delete(l.groups, id)
		}
		if l.closed > 0 {
			l.update(ctx)
		}
		st := l.st
		st.Version = l.version
		st.MaxStaleness = l.maxStaleness
		if st.Groups > 0 {
			st.ZeroSignalShare = float64(st.ZeroSignalGroups) / float64(st.Groups)
		}
		ctx.Respond(&st)
	}
}

// add files one result under its group and closes the group when all its
// members have reported.
func (l *learner) add(m *EpisodeResult) {
	l.st.Results++
	g := l.groups[m.Group]
	if g == nil {
		g = &groupAcc{task: m.Task, expected: m.GroupSize}
		l.groups[m.Group] = g
	}
	g.received++
	if m.Kind == Completed && m.Trajectory != nil {
		g.trajs = append(g.trajs, m.Trajectory)
	}
	if g.received >= g.expected {
		l.close(g)
		delete(l.groups, m.Group)
	}
}

// close moves a group to the next batch. A group counts toward the batch
// even when none of its members completed, so the learner keeps the pace the
// scheduler's staleness gate assumes.
func (l *learner) close(g *groupAcc) {
	l.closed++
	if len(g.trajs) > 0 {
		l.ready = append(l.ready, policy.Group{Task: g.task, Trajectories: g.trajs})
	}
}

// fresh drops the trajectories older than the staleness bound from the
// groups of a batch, and the groups left empty.
func (l *learner) fresh(groups []policy.Group) []policy.Group {
	out := groups[:0]
	for _, g := range groups {
		kept := g.Trajectories[:0]
		for _, t := range g.Trajectories {
			v := t.MinVersion()
			if v >= 0 && policy.StalenessWeight(v, l.version, l.maxStaleness) == 0 {
				l.st.StaleDropped++
				continue
			}
			if v >= 0 {
				l.st.MaxStalenessSeen = max(l.st.MaxStalenessSeen, l.version-v)
			}
			kept = append(kept, t)
		}
		if len(kept) == 0 {
			continue
		}
		g.Trajectories = kept
		l.st.Groups++
		l.st.Trajectories += int64(len(kept))
		if policy.Variance(g.Rewards()) == 0 {
			l.st.ZeroSignalGroups++
		}
		out = append(out, g)
	}
	return out
}

// update applies the ready groups. Trajectories are judged for staleness
// here, when they are used: a member that reported early may have waited in
// its open group while the learner moved on.
func (l *learner) update(ctx actor.Context) {
	batch := l.fresh(l.ready)
	l.ready, l.closed = nil, 0
	if len(batch) == 0 {
		// Nothing to learn from (every member failed or was stale), but the
		// version still advances: the scheduler's staleness gate counts
		// batches, and would otherwise stall admission for good.
		l.version++
		l.st.EmptyBatches++
		ctx.Send(l.server, &PolicyUpdate{Version: l.version, Policy: l.l.Policy()})
		return
	}
	pol, st, err := l.l.Update(context.Background(), batch)
	if err != nil {
		l.st.FailedUpdates++
		l.log.Error().Err(err).Int("groups", len(batch)).Msg("learner update failed; batch dropped")
		return
	}
	l.version++
	l.st.Updates++
	ctx.Send(l.server, &PolicyUpdate{Version: l.version, Policy: pol})
	if l.onUpdate != nil {
		l.onUpdate(UpdateRecord{Update: l.st.Updates, Version: l.version, Episodes: l.st.Results, UpdateStats: st})
	}
}
