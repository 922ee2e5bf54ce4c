// Package curriculum decides which tasks the scheduler's groups play and
// what to ask the synthesizer for.
//
// A Curriculum plans the tasks of each request for tasks (Plan: replayed
// ones and a number of fresh ones), says what to ask the synthesizer for
// (Request, a synth.Request), and learns from the outcomes of completed
// episodes (Observe) and the policy's versions (Advance). Replay is the
// replay-buffer curriculum of every strategy in Strategies (frontier, the
// default, scores tasks by their expected learnability under per-task Beta
// posteriors pooled by bin: Estimate); Target and Fixed only ever ask for
// fresh tasks of a difficulty (Target's follows the policy's ability).
// Rounds is the seed report's round-based rule: each round calibrates
// fresh tasks in whole groups, admits those whose pass rate lies in a
// band, refines or drops the others, and then replays only what it
// admitted for a number of policy updates. ReplayOptions are the settings
// of Replay and Rounds that commands take from their user and record.
//
// A curriculum is plain synchronous code: the curriculum actor of package
// actors calls it from one goroutine, and it never blocks, so it is
// testable without the actors. A Snapshotter curriculum (Replay, Rounds,
// Target, Fixed) saves its whole state as bytes and restores it exactly; that is
// how checkpoints hold it. Every curriculum passes the conformance suite
// of this package's tests (Conform), which a broken strategy fails.
package curriculum
