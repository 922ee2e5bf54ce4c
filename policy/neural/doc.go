// Package neural is frog's learned repair policy and its GRPO learner: the
// policy that `frog train` trains, `frog eval --policy RUN` evaluates and
// `frog experiment curriculum --mode real` compares curricula with.
//
// The policy follows policy/repair's protocol (run the tests, measure
// coverage, rank lines by fault localisation, list template candidates at
// the most suspicious lines, try them), and a small network makes every
// choice of what to try next: it scores each option by its features
// (repair.Featurizer) with a two-layer MLP plus a wide linear part that
// starts at the fault-localisation prior (Prior), and samples from the
// softmax of the scores at a temperature, or takes the best when Greedy
// (evaluation). Each choice is recorded in its action (an env.Decision:
// the options' features and the one chosen; and the action's LogProb), so
// the learner recomputes everything from trajectories alone. Dims and Params describe
// the network; Init is how it starts.
//
// The Learner turns each batch of GRPO groups into an update on a
// cuda.Backend, the CPU one or a GPU (`--device cpu|cuda|auto`): the
// network's forward and backward passes, the clipped surrogate with an
// entropy bonus and an optional KL penalty to the start, gradient clipping
// and Adam all run on the backend. Config says how; DefaultConfig is what
// `frog train` starts from. Inference stays on the host: a Policy scores a
// decision's few hundred options in plain Go.
//
// Checkpoint and Restore (policy.Checkpointer) save and put back the
// weights, Adam's state and the counters under a format tag and a checksum;
// FromCheckpoint makes a learner from a checkpoint alone, as `frog eval`
// and `frog train --resume` do. BatchRecorder and Recording write every
// batch a learner is given (`frog train --record-batches`); ReadBatches
// reads them back, so an update can be replayed on any backend without the
// tasks or sandboxes that produced it.
//
// # Threading and cancellation
//
// A Policy is an immutable snapshot of one version of the weights, safe
// for concurrent use: the policy server calls Act from its inference
// goroutines, several batches at once. Act does no I/O and never blocks;
// it returns ctx's error when ctx was cancelled.
//
// A Learner is used from one goroutine at a time: the learner actor runs
// each Update in a goroutine of its own and calls Checkpoint between
// updates; `frog train --resume` calls Restore before the run starts. The
// caller owns the backend and must not use it from another goroutine
// meanwhile (cuda.Backend's rule). Update blocks while the backend
// computes and checks ctx between epochs: a cancelled update returns
// ctx's error and no new policy. Close frees the learner's buffers, not
// the backend.
package neural
