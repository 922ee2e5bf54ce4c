package policy

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/frognano/frog/env"
)

// Policy chooses actions for a batch of observations. A Policy value is an
// immutable snapshot of one version of the weights: the learner publishes a
// new one after each update, and the policy server swaps it in between
// batches.
//
// Act is called by the policy server's inference goroutine, possibly from
// several goroutines at once (one per in-flight batch); it fills acts[i] for
// obs[i], blocks until done or ctx is cancelled, and wraps env.ErrInfra when a
// model server cannot be reached. The actions' Version fields are set by the
// caller.
type Policy interface {
	Act(ctx context.Context, obs []env.Observation, acts []env.Action) error
}

// Group is the G rollouts of one task that GRPO compares with each other.
// Only completed episodes are in it: infrastructure failures never enter a
// group's statistics.
type Group struct {
	Task         *env.Task
	Trajectories []*env.Trajectory
	// TryCost shapes the returns the group's rollouts are compared by
	// (Returns, Return); 0 compares their rewards.
	TryCost float64
}

// Rewards returns the group's rewards in order: what the tests said.
func (g *Group) Rewards() []float64 {
	r := make([]float64, len(g.Trajectories))
	for i, t := range g.Trajectories {
		r[i] = t.Reward
	}
	return r
}

// Returns returns what GRPO compares of the group's rollouts, in order:
// each one's Return at the group's TryCost.
func (g *Group) Returns() []float64 {
	r := make([]float64, len(g.Trajectories))
	for i, t := range g.Trajectories {
		r[i] = Return(t, g.TryCost)
	}
	return r
}

// Return is what GRPO compares of trajectory t: its reward, less tryCost
// for each candidate tried beyond the first when it was rewarded (never
// below a tenth of the reward). Rollouts that all fix a task then still
// differ, the fewer tries the better: the signal of what to try first, which
// a group of equal 0/1 rewards lacks. An unrewarded rollout returns 0
// however many tries it made, so that stopping early never pays.
func Return(t *env.Trajectory, tryCost float64) float64 {
	r := t.Reward
	if r > 0 && tryCost > 0 && t.Tries > 1 {
		r *= math.Max(0.1, 1-tryCost*float64(t.Tries-1))
	}
	return r
}

// Learner turns batches of groups into new policies. Its methods are never
// called concurrently: the learner actor asks for Policy when it starts
// and runs each Update in a goroutine of its own, one update at a time,
// under a context that the run's cancellation reaches.
type Learner interface {
	// Policy is the current policy.
	Policy() Policy
	// Update applies one batch and returns the new policy and what the update
	// did. It blocks until done or ctx is cancelled.
	Update(ctx context.Context, batch []Group) (Policy, UpdateStats, error)
}

// UpdateStats describes one update, for metrics.jsonl and summaries.
type UpdateStats struct {
	Groups       int     `json:"groups"`
	Trajectories int     `json:"trajectories"`
	MeanReward   float64 `json:"mean_reward"`
	// ZeroSignalGroups counts groups whose rewards are all equal: they carry
	// no GRPO signal.
	ZeroSignalGroups int `json:"zero_signal_groups"`
	// Signal is the mean within-group reward variance, the learning signal
	// of the batch.
	Signal float64 `json:"signal"`
	Loss   float64 `json:"loss"`
	// Extra holds learner-specific figures (the simulated skill, a norm).
	Extra map[string]float64 `json:"extra,omitempty"`
}

// Checkpointer is an optional capability of a Learner: Checkpoint returns
// everything it needs to continue where it is (weights, optimizer state,
// counters) and Restore puts it back there. Restore refuses, with an error
// that says why, data it did not make (another format or network shape, a
// corrupted file), and then leaves the learner as it was. Checkpoint is
// called from the learner actor between updates, never during one; Restore
// by whoever makes the learner, before a run uses it (`frog train
// --resume`).
type Checkpointer interface {
	Checkpoint() ([]byte, error)
	Restore(data []byte) error
}

// ItemErrors is what a Policy's Act returns when some observations of a
// batch failed and others did not: one entry per observation, nil where
// acts[i] was chosen. The policy server then answers each episode with its
// own outcome, so one failing request affects only its episode. Any other
// error of Act is the whole batch's.
type ItemErrors []error

func (e ItemErrors) Error() string {
	n, first := 0, error(nil)
	for _, err := range e {
		if err != nil {
			if first == nil {
				first = err
			}
			n++
		}
	}
	if first == nil {
		return "no item failed"
	}
	return fmt.Sprintf("%d of %d items failed, the first: %v", n, len(e), first)
}

// Item returns the error of item i of a batch whose Act returned err: err's
// own entry when err is an ItemErrors, else err.
func Item(err error, i int) error {
	var items ItemErrors
	if errors.As(err, &items) {
		if i < len(items) {
			return items[i]
		}
		return nil
	}
	return err
}
