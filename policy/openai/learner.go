package openai

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/policy"
)

// versionFile reads the trainer's announced version, again only when the
// file changed (by modification time and size).
type versionFile struct {
	path    string
	mu      sync.Mutex
	mod     time.Time
	size    int64
	version int64
	read    bool
}

func (v *versionFile) get() int64 {
	if v.path == "" {
		return -1
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	fi, err := os.Stat(v.path)
	if err != nil {
		if !v.read {
			return -1
		}
		return v.version // a rewrite in progress: keep the last one
	}
	if v.read && fi.ModTime().Equal(v.mod) && fi.Size() == v.size {
		return v.version
	}
	data, err := os.ReadFile(v.path)
	if err != nil {
		return v.versionOr(-1)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		return v.versionOr(-1) // half written: keep the last one
	}
	v.version, v.mod, v.size, v.read = n, fi.ModTime(), fi.Size(), true
	return n
}

func (v *versionFile) versionOr(d int64) int64 {
	if v.read {
		return v.version
	}
	return d
}

// TrainerVersion is the version the trainer last announced in the config's
// VersionFile, -1 when there is none.
func (p *Policy) TrainerVersion() int64 { return p.versions.get() }

// Sink takes batches of export records. Put may block, and should while
// the consumer is behind (that is the backpressure); it returns ctx's error
// when ctx ends first.
type Sink interface {
	Put(ctx context.Context, recs []Record) error
}

// ExportLearner is the policy.Learner of a run whose weights live in an
// external trainer: each update writes the batch's groups to the sink, with
// their GRPO advantages, and returns the same policy (the servers swap
// weights when the trainer says so). An update blocks while the sink is
// full, so the learner falls behind and the scheduler's staleness gate
// pauses admission. With a version file, a trajectory whose oldest model
// call is more than MaxStaleness trainer versions behind the announced one
// is dropped and counted, not exported.
type ExportLearner struct {
	p            *Policy
	sink         Sink
	maxStaleness int64
	group        atomic.Uint64
	stale        atomic.Int64
	exported     atomic.Int64
}

var _ policy.Learner = (*ExportLearner)(nil)

// NewExportLearner exports p's groups to sink.
func NewExportLearner(p *Policy, sink Sink, maxStaleness int) *ExportLearner {
	return &ExportLearner{p: p, sink: sink, maxStaleness: int64(maxStaleness)}
}

// Policy is the policy the episodes play.
func (l *ExportLearner) Policy() policy.Policy { return l.p }

// Update exports the batch. It is called from the learner actor, one call
// at a time.
func (l *ExportLearner) Update(ctx context.Context, batch []policy.Group) (policy.Policy, policy.UpdateStats, error) {
	st := policy.UpdateStats{Groups: len(batch), Extra: map[string]float64{}}
	now := l.p.TrainerVersion()
	var recs []Record
	var rewardSum float64
	for _, g := range batch {
		id := l.group.Add(1)
		// Advantages compare the returns, the group's TryCost applied
		// (frog train --try-cost), as frog's own GRPO does.
		returns := g.Returns()
		adv := make([]float64, len(returns))
		policy.Advantages(returns, adv, policy.Epsilon)
		if policy.Variance(returns) == 0 {
			st.ZeroSignalGroups++
		}
		st.Signal += policy.Variance(returns)
		for i, tr := range g.Trajectories {
			if v := oldestTrainerVersion(tr.Steps); now >= 0 && v >= 0 && now-v > l.maxStaleness {
				l.stale.Add(1)
				continue
			}
			r, err := l.p.Record(Episode{Episode: tr.Episode, Group: id, GroupSize: len(g.Trajectories), Task: g.Task.View(),
				Outcome: "completed", Trajectory: tr, Attempts: tr.Attempt + 1}, &adv[i])
			if err != nil {
				return l.p, st, err
			}
			r.GroupID = fmt.Sprintf("t%d", id)
			recs = append(recs, r)
			rewardSum += tr.Reward
			st.Trajectories++
		}
	}
	if st.Trajectories > 0 {
		st.MeanReward = rewardSum / float64(st.Trajectories)
	}
	if len(batch) > 0 {
		st.Signal /= float64(len(batch))
	}
	if err := l.sink.Put(ctx, recs); err != nil {
		return l.p, st, err
	}
	l.exported.Add(int64(len(recs)))
	st.Extra["exported"], st.Extra["stale_dropped"], st.Extra["trainer_version"] = float64(len(recs)), float64(l.stale.Load()), float64(now)
	return l.p, st, nil
}

// Exported and StaleDropped count the records written and the trajectories
// dropped as too stale.
func (l *ExportLearner) Exported() int64     { return l.exported.Load() }
func (l *ExportLearner) StaleDropped() int64 { return l.stale.Load() }

func oldestTrainerVersion(steps []env.Step) int64 {
	v := int64(-1)
	for _, s := range steps {
		if t := s.Action.Turn; t != nil && t.TrainerVersion >= 0 && (v < 0 || t.TrainerVersion < v) {
			v = t.TrainerVersion
		}
	}
	return v
}
