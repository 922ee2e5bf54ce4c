// Package policy holds what chooses actions and what learns from their
// outcomes: the Policy and Learner contracts, and GRPO, the learning rule
// that turns groups of trajectories into updates.
//
// Implementations live in subpackages: policy/sim (a simulated agent for
// planning and curriculum studies), and later policy/neural (the built-in
// ranking network) and policy/openai (an LLM behind an OpenAI-compatible
// server). They depend on env for the action vocabulary and never on the
// actor runtime.
package policy
