// Package policy holds what chooses actions and what learns from their
// outcomes: the Policy and Learner contracts (and Checkpointer, a learner's
// optional capability), GRPO, the learning rule that turns groups of
// trajectories into updates (Advantages, ClippedSurrogate,
// StalenessWeight, Return), and the statistics frog reports rates and means
// with (Wilson, BootstrapMean).
//
// Implementations live in subpackages: policy/sim (a simulated agent for
// planning and curriculum studies), policy/baseline (the hand-written
// repair policies), policy/neural (the built-in repair network and its
// GRPO learner on a cuda.Backend) and policy/openai (a language model
// behind an OpenAI-compatible server, and a learner that exports its
// groups to an external trainer); policy/repair is what the built-in ones
// share. They depend on env for the action vocabulary and never on the
// actor runtime.
//
// The actors call them: the policy server calls Policy.Act from its
// inference goroutines, several batches at once, and swaps in each policy
// the learner publishes between batches; the learner actor runs
// Learner.Update in a goroutine of its own, one update at a time, and
// calls Checkpoint between updates. Each interface's comment says what
// cancellation does.
package policy
