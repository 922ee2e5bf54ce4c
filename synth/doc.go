// Package synth makes and chooses tasks: the sources that synthesize bug-fix
// tasks (Source), and the curriculum that decides which difficulty to ask
// for next (Curriculum). Implementations of Source live in subpackages
// (synth/sim for simulated tasks). The curriculum is plain synchronous code,
// driven by the curriculum actor and testable without it; a Snapshotter
// curriculum (Replay, Target, Fixed) saves its whole state as plain data
// and restores it, which is how checkpoints hold it.
package synth
