// Package actors is frog's orchestration on protoactor-go: the scheduler
// (admission), one episode actor per episode (owning one sandbox), the
// policy server (batched inference), the learner (GRPO groups, updates,
// staleness, checkpoints), the curriculum (which tasks next, and the
// checkpoints' writer) and the synthesizer (tasks on demand). It makes no
// Docker calls and holds no learning rule: sandboxes, the episode loop,
// policies, GRPO and curricula live in env, policy and synth, which it
// wires together. Its own arithmetic is bookkeeping: counters, staleness,
// and the solve rates an evaluation reports with their Wilson intervals
// (NewRate, by policy.Wilson).
//
// Run is a training or simulation run (`frog train`, `frog sim`, `frog
// experiment curriculum`); Evaluate plays a frozen policy over a task list
// through Run (`frog eval`, `frog rollout`, the held-out evaluations of
// `frog train`). Both block until the budget is spent or ctx is cancelled.
// Cancelling ctx is a graceful shutdown: admission stops, every running
// episode is cancelled, closes its sandbox and is recorded, and the call
// returns a full summary with a nil error once every actor has stopped and
// every goroutine it started has exited. The hooks of Deps (OnUpdate,
// OnEpisode, OnCurriculum, Checkpoints) are called from the actors'
// goroutines, each as documented where it is declared. RunBaseline does
// Run's per-episode work with plain goroutines and no actors, and Bench
// compares the two (`frog bench`); RunBaseline has no supervision and no
// graceful shutdown.
//
// # Message flow of one episode
//
//	scheduler ──NextTasks──▶ curriculum ──SynthRequest──▶ synth
//	scheduler ◀──Tasks────── curriculum ◀──SynthTasks───── synth
//	scheduler ──spawn──▶ episode ──ActRequest──▶ policy server ──ActResponse──▶ episode
//	episode ──EpisodeResult──▶ learner ──Outcome──▶ scheduler ──Outcome──▶ curriculum
//	learner ──PolicyUpdate──▶ policy server
//	learner ──SaveCheckpoint──▶ curriculum ──CheckpointSaved──▶ learner
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
// Every Config.CheckpointEvery updates, and at the end, the learner takes
// its checkpoint (policy.Checkpointer) between updates and sends it to the
// curriculum actor, which adds the curriculum's snapshot and its pool of
// fresh tasks as they are when the message arrives and hands the whole to
// one writer goroutine of its own, which stores checkpoints in order
// (Deps.Checkpoints) so that the disk never holds up the curriculum's
// mailbox. Run returns only once the last checkpoint is stored; after
// Config.CheckpointTries refusals in a row the run ends with ErrCheckpoint.
//
// # Remote runs
//
// With Deps.Remote, Run listens on protoactor-go's remote and admits
// episodes onto joined rollout workers as well as its own slots, by free
// capacity. The scheduler sends each worker, once an admission round,
// the episodes it placed there (a RunBatch, from the worker's link actor
// on the trainer); Work is the worker's side: it joins, plays the episodes
// it is sent with the same episode actor as in one process, a policy
// replica it pulls once per version and its own sandboxes, and sends the
// results back in batches to its link, whose decoders hand the learner
// each as a local episode's EpisodeResult. Only actors/wire's protobuf
// messages cross. The scheduler watches each worker
// and hears its heartbeat; a worker that dies, falls silent or leaves has
// its running episodes re-admitted elsewhere (each lost attempt counted
// against Config.MaxAttempts), and exactly one result per episode is filed
// (a decoder and the scheduler race to take its placement). A worker whose trainer
// dies or falls silent cancels its episodes, closes their sandboxes and
// returns ErrTrainerLost. With Remote.More another run follows on the same
// address (frog eval: a run a policy), and the run's end tells the workers
// to join it. Every process hosts at most one remote: its
// start is not safe twice in a process (docs/remote.md).
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
