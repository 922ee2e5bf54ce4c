package actors

import (
	"github.com/frognano/frog/env"
	"github.com/frognano/frog/policy"
)

// batcher files episode results under their GRPO groups and hands out
// batches of closed groups, judging staleness when a batch is used. It is
// plain synchronous code: the learner actor drives it, and so does
// RunBaseline, with nothing of either's concurrency in it.
type batcher struct {
	groupsPerUpdate int
	maxStaleness    int
	// refill drops groups whose rewards are all equal when they close:
	// they count toward no batch, and the learner tells the scheduler to
	// plan another group in their place.
	refill  bool
	dropped bool // a group was dropped since the last takeRefill
	// tryCost shapes the returns a group's rollouts are compared by
	// (policy.Return): signal is variance of those.
	tryCost float64

	groups map[uint64]*groupAcc
	ready  []policy.Group
	closed int // groups closed since the last take
	st     batchStats
}

type groupAcc struct {
	task               *env.Task
	expected, received int
	trajs              []*env.Trajectory
}

// batchStats are the batcher's tallies, copied into LearnerStats.
type batchStats struct {
	results, groups, trajectories, zeroSignal, staleDropped, maxStalenessSeen, refilled int64
}

func newBatcher(groupsPerUpdate, maxStaleness int) *batcher {
	return newRefillBatcher(groupsPerUpdate, maxStaleness, false, 0)
}

func newRefillBatcher(groupsPerUpdate, maxStaleness int, refill bool, tryCost float64) *batcher {
	return &batcher{groupsPerUpdate: groupsPerUpdate, maxStaleness: maxStaleness, refill: refill, tryCost: tryCost, groups: make(map[uint64]*groupAcc)}
}

// add files one result under its group, closes the group when all its
// members have reported, and says whether a batch is due.
func (b *batcher) add(m *EpisodeResult) (due bool) {
	b.st.results++
	g := b.groups[m.Group]
	if g == nil {
		g = &groupAcc{task: m.Task, expected: m.GroupSize}
		b.groups[m.Group] = g
	}
	g.received++
	if m.Kind == Completed && m.Trajectory != nil {
		g.trajs = append(g.trajs, m.Trajectory)
	}
	if g.received >= g.expected {
		b.close(g)
		delete(b.groups, m.Group)
	}
	return b.closed >= b.groupsPerUpdate
}

// closeAll closes every open group, as at the end of a run, and says whether
// any closed group waits for a batch.
func (b *batcher) closeAll() bool {
	for id, g := range b.groups {
		b.close(g)
		delete(b.groups, id)
	}
	return b.closed > 0
}

// close moves a group to the next batch. A group counts toward the batch
// even when none of its members completed, so the learner keeps the pace the
// scheduler's staleness gate assumes.
func (b *batcher) close(g *groupAcc) {
	pg := policy.Group{Task: g.task, Trajectories: g.trajs, TryCost: b.tryCost}
	if b.refill && len(g.trajs) > 0 && policy.Variance(pg.Returns()) == 0 {
		b.st.groups++
		b.st.trajectories += int64(len(g.trajs))
		b.st.zeroSignal++
		b.st.refilled++
		b.dropped = true
		return
	}
	b.closed++
	if len(g.trajs) > 0 {
		b.ready = append(b.ready, pg)
	}
}

// takeRefill says whether a group was dropped for want of signal since the
// last call.
func (b *batcher) takeRefill() bool {
	d := b.dropped
	b.dropped = false
	return d
}

// take hands out the closed groups; fresh judges them when they are used.
func (b *batcher) take() []policy.Group {
	out := b.ready
	b.ready, b.closed = nil, 0
	return out
}

// fresh drops the trajectories older than the staleness bound at version
// from the groups of a batch, and the groups left empty. Trajectories are
// judged here, when they are used: a member that reported early may have
// waited in its open group, or its batch behind another update, while the
// learner moved on.
func (b *batcher) fresh(groups []policy.Group, version int64) []policy.Group {
	out := groups[:0]
	for _, g := range groups {
		kept := g.Trajectories[:0]
		for _, t := range g.Trajectories {
			v := t.MinVersion()
			if v >= 0 && policy.StalenessWeight(v, version, b.maxStaleness) == 0 {
				b.st.staleDropped++
				continue
			}
			if v >= 0 {
				b.st.maxStalenessSeen = max(b.st.maxStalenessSeen, version-v)
			}
			kept = append(kept, t)
		}
		if len(kept) == 0 {
			continue
		}
		g.Trajectories = kept
		b.st.groups++
		b.st.trajectories += int64(len(kept))
		if policy.Variance(g.Returns()) == 0 {
			b.st.zeroSignal++
			if b.refill {
				// Its stale members dropped, what is left has no signal:
				// too late to refill (its outcome is reported), not
				// learned from either.
				continue
			}
		}
		out = append(out, g)
	}
	return out
}

// resume takes up a resumed run's tallies (Config.Start): results filed,
// and the rest as st counts them.
func (b *batcher) resume(st LearnerStats, results int64) {
	b.st = batchStats{results: results, groups: st.Groups, trajectories: st.Trajectories, zeroSignal: st.ZeroSignalGroups,
		staleDropped: st.StaleDropped, maxStalenessSeen: st.MaxStalenessSeen, refilled: st.RefilledGroups}
}

// judged is the batcher's count of the groups it judged so far.
func (b *batcher) judged() GroupsJudged {
	return GroupsJudged{Groups: b.st.groups, ZeroSignal: b.st.zeroSignal, Refilled: b.st.refilled}
}

// fill copies the batcher's tallies into st.
func (b *batcher) fill(st *LearnerStats) {
	st.Results, st.Groups, st.Trajectories = b.st.results, b.st.groups, b.st.trajectories
	st.ZeroSignalGroups, st.StaleDropped, st.MaxStalenessSeen = b.st.zeroSignal, b.st.staleDropped, b.st.maxStalenessSeen
	st.MaxStaleness = b.maxStaleness
	st.RefilledGroups = b.st.refilled
	if st.Groups > 0 {
		st.ZeroSignalShare = float64(st.ZeroSignalGroups) / float64(st.Groups)
	}
}
