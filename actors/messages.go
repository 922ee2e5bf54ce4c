package actors

import (
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/policy"
	"github.com/frognano/frog/synth"
)

// OutcomeKind is how an admitted episode ended.
type OutcomeKind uint8

const (
	// Completed: the episode ran to its end; its reward counts.
	Completed OutcomeKind = iota + 1
	// FailedInfra: infrastructure faults outlasted the retries; no reward.
	FailedInfra
	// Cancelled: the run was stopped while the episode ran; no reward.
	Cancelled
)

func (k OutcomeKind) String() string {
	switch k {
	case Completed:
		return "completed"
	case FailedInfra:
		return "failed_infra"
	case Cancelled:
		return "cancelled"
	}
	return "unknown"
}

// NextTasks asks the curriculum for N tasks (scheduler → curriculum). The
// answer is a *Tasks sent to ReplyTo.
type NextTasks struct {
	N       int
	ReplyTo *actor.PID
}

// Tasks answers NextTasks. RanOut, set only when Tasks is empty, says why
// no task will come: the task source has none left (or failed every time
// it was asked), and nothing is there to replay.
type Tasks struct {
	Tasks  []*env.Task
	RanOut string
}

// SynthRequest asks the synthesizer for K tasks near Difficulty, or, when
// Knobs is set and the source is a synth.Steerable, for K tasks matching
// Knobs (curriculum → synth); the answer is a *SynthTasks sent to ReplyTo.
type SynthRequest struct {
	K          int
	Difficulty float64
	Knobs      *synth.Knobs
	// Base, when set and the source is a synth.Compounder, asks for Base
	// made harder by one more mutation; the rest of K as without it.
	Base    *env.Task
	ReplyTo *actor.PID
}

// SynthTasks answers SynthRequest. Err is set when the source failed; Tasks
// may still hold what it made. Exhausted says the source has no task left
// (synth.ErrExhausted): asking again would give nothing.
type SynthTasks struct {
	Tasks     []env.Task
	Err       error
	Exhausted bool
}

// ActRequest asks the policy server for an episode's next action (episode's
// runner → policy server); the answer is an *ActResponse sent to ReplyTo.
// The server reads a request only until it sends the answer: the sender may
// then reuse it for its next request.
type ActRequest struct {
	Obs     env.Observation
	ReplyTo *actor.PID
	// Gone, when set, becomes true once ReplyTo stops: the policy server
	// then drops the answer (it would only feed the dead letters). Without
	// it the server asks the process registry, a lookup a step.
	Gone *atomic.Bool
}

// ActResponse answers ActRequest. Action.Version is the policy version that
// chose it. Action points into the batch's results and must not be changed.
type ActResponse struct {
	Attempt int
	Step    int
	Action  *env.Action
	Err     error
}

// EpisodeResult is what an episode hands to the learner when it ends, on every
// path. The learner records it and sends the *Outcome to ReportTo.
type EpisodeResult struct {
	Episode   uint64
	Group     uint64
	GroupSize int
	Task      *env.Task
	Kind      OutcomeKind
	// Trajectory is set for Completed episodes.
	Trajectory *env.Trajectory
	// Attempts is how many sandboxes the episode used.
	Attempts int
	Err      error
	// ReportTo is the scheduler that admitted the episode.
	ReportTo *actor.PID
}

// Outcome is the final record of an episode, sent by the learner to the
// scheduler once the learner has filed the episode's result (and published
// any update it triggered). Version is the learner's version then.
type Outcome struct {
	Episode uint64
	Group   uint64
	Task    *env.Task
	Kind    OutcomeKind
	Reward  float64
	// Return is the reward less the try cost GRPO compares
	// (policy.Return at Config.TryCost).
	Return   float64
	Attempts int
	Version  int64
	// Suspected says the verdict judged that the agent's code tried to
	// forge it (env.Trajectory.RewardHackSuspected).
	Suspected bool
	// Refill says the episode's group was dropped for want of signal (all
	// rewards equal) and counts toward no batch: the scheduler plans
	// another in its place.
	Refill bool
}

// Cancel tells an episode to stop its run and report itself cancelled.
type Cancel struct{}

// IgnoreDeadLetterLogging marks a Cancel that finds its episode already
// gone (it ended while its outcome was on the way) as expected, not worth a
// dead-letter log line: protoactor then starts no log throttle either.
func (*Cancel) IgnoreDeadLetterLogging() {}

// PolicyUpdate publishes a new policy (learner → policy server).
type PolicyUpdate struct {
	Version int64
	Policy  policy.Policy
}

// Flush asks the learner to apply the groups it holds in a last update and
// answer with its *LearnerStats.
type Flush struct{}

// SaveCheckpoint carries the learner's checkpoint, taken between updates,
// to the curriculum actor (learner → curriculum), which adds the state of
// its curriculum and its pool of fresh tasks at that moment and stores the
// whole as one checkpoint (Deps.Checkpoints). The answer is a
// *CheckpointSaved sent to ReplyTo.
type SaveCheckpoint struct {
	Checkpoint Checkpoint
	ReplyTo    *actor.PID
}

// CheckpointSaved answers SaveCheckpoint: Err, when not empty, says why
// the checkpoint was not stored (the previous one stands).
type CheckpointSaved struct {
	Version int64
	Updates int64
	Err     string
}

// GetStats asks an actor for its statistics (policy server: *PolicyServerStats;
// curriculum: *curriculum.CurriculumStats; synth: *SynthStats).
type GetStats struct{}

// runDone is the episode runner's report to its actor.
type runDone struct {
	attempt int
	traj    env.Trajectory
	err     error
}

// flushBatch tells the policy server to run the batch it is holding.
type flushBatch struct{ gen uint64 }

// batchDone tells the policy server that an inference batch finished.
type batchDone struct{}

// A worker's report may reach its actor after the actor stopped (the run
// ended while the worker ran): expected, and not worth a dead-letter log.
func (*batchDone) IgnoreDeadLetterLogging()     {}
func (*runDone) IgnoreDeadLetterLogging()       {}
func (*updateDone) IgnoreDeadLetterLogging()    {}
func (*synthFinished) IgnoreDeadLetterLogging() {}
func (*ActResponse) IgnoreDeadLetterLogging()   {}
