// Package sim is a simulated, seeded env.Provider: sandboxes that cost only
// the time their latency distributions say (scaled, and none at all with time
// scale 0) and that fail the way real ones do (crash, hang, slow start) at a
// configured rate. It is the sandbox of `frog sim`, `frog bench`, `frog
// bench llm` and `frog experiment curriculum --mode sim`, and the scripted
// fake the actors are tested against; it passes env/envtest's conformance
// suite with the capabilities a simulation has.
//
// A simulated sandbox holds a workspace of one buggy file: writing the task's
// gold patch (env.Task.Patch) to the task's file fixes it, and the task's
// test command then exits 0; any other content breaks it again. Other
// commands succeed with no output. What is written is read back; a file never
// written reads as a stand-in.
//
// Every random choice is drawn from a generator seeded by (Seed, episode,
// attempt), so a sandbox behaves the same whatever the order in which
// concurrent episodes open theirs.
//
// # Threading and cancellation
//
// A Provider is safe for concurrent use and owns no goroutines; Open is
// called from many episodes at once. A Sandbox belongs to one episode and
// is used by one goroutine at a time. Every call waits its simulated
// latency through Config.Sleep and returns ctx's error, at once, when ctx
// is cancelled during the wait. At time scale 0 nothing waits at all
// (Provider.Immediate reports it), so the actors may drive such sandboxes
// from inside Receive. Close never waits and is idempotent.
//
// # Errors
//
// An injected fault wraps env.ErrInfra: a crash fails the operation it
// strikes and every later one, a hang waits out the harness's command
// timeout, a slow start waits out the start timeout. Provider.Stats counts
// each kind. A path outside the workspace is an error that does not wrap
// env.ErrInfra.
package sim
