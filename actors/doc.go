// Package actors is frog's orchestration on protoactor-go: the scheduler
// (admission), one episode actor per episode (owning one sandbox), the
// policy server (batched inference), the learner (GRPO groups, updates,
// staleness), the curriculum (which difficulty next) and the synthesizer
// (tasks on demand). It holds no Docker calls and no math: those live in env,
// policy and synth, which it wires together.
//
// # Message flow of one episode
//
//	scheduler ──NextTasks──▶ curriculum ──SynthRequest──▶ synth
//	scheduler ◀──Tasks────── curriculum ◀──SynthTasks───── synth
//	scheduler ──spawn──▶ episode ──ActRequest──▶ policy server ──ActResponse──▶ episode
//	episode ──EpisodeResult──▶ learner ──Outcome──▶ scheduler ──Outcome──▶ curriculum
//	learner ──PolicyUpdate──▶ policy server
//
// An episode's outcome reaches the scheduler only through the learner, once
// the learner has filed its result; the learner publishes the policy of the
// update a result triggered before it passes that result's outcome on. So
// with one worker every step happens in an order fixed by the seed, and runs
// are reproducible.
//
// The learner runs each update in a goroutine of its own, one at a time,
// under a context that the run's cancellation reaches; a failed or panicking
// update is counted, its batch dropped, and the version advanced as past an
// empty batch, so the staleness gate keeps admitting. After
// Config.MaxUpdateFailures failures in a row the run ends with ErrLearner.
//
// # Invariants
//
// Every admitted episode ends in exactly one recorded outcome (completed,
// failed-infra after bounded retries, or cancelled); the scheduler's
// counters prove it at the end of every run. An infrastructure fault makes the
// episode actor fail; its supervisor restarts it (a fresh sandbox, a new
// attempt) until the retries run out, and such an episode never enters a
// GRPO group. Admission stops when admitting more would let trajectories
// become staler than the bound, and the learner drops any that still are.
package actors
