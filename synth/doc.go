// Package synth makes tasks: the contract of a task source and of what it
// can be asked for, and the task record the store keeps. Which tasks to
// play is package curriculum's job.
//
// # Sources
//
// A Source makes validated tasks near a difficulty; Steerable (tasks of a
// bin: Knobs) and Compounder (a task made harder by one more mutation) are
// its optional capabilities, found by type assertion. Implementations live
// elsewhere: synth/source.Synthesizer synthesizes and validates tasks from
// real Go modules (steerable, a compounder); synth/store.Source serves the
// tasks of a stored file (steerable); synth/sim makes simulated ones.
// Wrappers that act on every answer — gotask.Quarantine's Source,
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
// # Requests
//
// Request is what a curriculum (package curriculum) asks the synthesizer
// for: a difficulty, a bin (Knobs, which BinOf gives of a task), or a task
// to compound (CompoundOf checks the answer).
//
// # Tasks
//
// TaskRecord is a task as the store keeps it: the SWE-bench instance fields
// of env.Task and what frog knows of how it was made (family, features,
// validation, per-test coverage). ApplyPatch and SplitPatch read the
// unified diffs tasks carry. ErrQuarantined marks a task that was checked
// and does not hold up.
package synth
