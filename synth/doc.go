// Package synth makes and chooses tasks: the contract of a task source, the
// curriculum that decides which tasks to play and what to ask the source
// for, and the task record the store keeps.
//
// # Sources
//
// A Source makes validated tasks near a difficulty; Steerable (tasks of a
// bin: Knobs) and Compounder (a task made harder by one more mutation) are
// its optional capabilities, found by type assertion. Implementations live
// elsewhere: synth/source.Synthesizer synthesizes and validates tasks from
// real Go modules (steerable, a compounder); synth/store.Source serves the
// tasks of a stored file (steerable); synth/sim makes simulated ones.
// Wrappers that act on every answer — synth/source.Quarantine's Source,
// which leaves out tasks that do not hold up, and the simulated agent's
// oracle in cmd/frog/cli — are made with Wrap, which keeps exactly the
// capabilities of the source it wraps, so that steering and compounding
// reach through them. A source with no task left returns an error
// wrapping ErrExhausted.
//
// The synthesizer actor calls a source from its worker goroutines, several
// requests at once, so every Source is safe for concurrent use; each call
// blocks until its tasks are made (a real one's validation runs its
// module's tests) and returns ctx's error when ctx is cancelled.
//
// # Curricula
//
// A Curriculum plans the tasks of each request for tasks (Plan: replayed
// ones and a number of fresh ones), says what to ask the synthesizer for
// (Request), and learns from the outcomes of completed episodes (Observe)
// and the policy's versions (Advance). Replay is the replay-buffer
// curriculum of every strategy in Strategies (frontier, the default, scores
// tasks by their expected learnability under per-task Beta posteriors
// pooled by bin: Estimate); Target and Fixed only ever ask for fresh
// tasks of a difficulty (Target's follows the policy's ability). A
// curriculum is plain synchronous code, driven by the curriculum actor from
// one goroutine and testable without it; it never blocks. A Snapshotter
// curriculum (Replay, Target, Fixed) saves its whole state as plain data
// and restores it, which is how checkpoints hold it.
//
// # Tasks
//
// TaskRecord is a task as the store keeps it: the SWE-bench instance fields
// of env.Task and what frog knows of how it was made (family, features,
// validation, per-test coverage). ApplyPatch and SplitPatch read the
// unified diffs tasks carry. ErrQuarantined marks a task that was checked
// and does not hold up.
package synth
