// Package cli is frog's command line: one cobra command per job (sim,
// train, eval, rollout, report, experiment, bench, synth, image, gc, device,
// version), each wired to the actors, env, policy, synth and cuda packages
// that do the work. Backends are chosen here and nowhere else: the sandbox
// providers in openSandboxes (sandbox.go), the tensor backend through
// cuda.Open, the task sources and curricula from the flags.
//
// Main is what the frog binary runs: it calls Run with the process's
// arguments and streams, and maps the error to an exit code (ExitCode). The
// first SIGINT or SIGTERM cancels Run's context; a second one, unless it
// comes within a quarter second of the first, ends the process at once
// with exit code 130.
//
// Run is the testable entry point: Main calls it, and so do the tests (the
// scripts in testdata/script run the command as a user types it, through
// Main). It blocks until the command ends. Results go to stdout (a table, or one JSON object with --json),
// logs and the progress bar to stderr. Cancelling ctx is a graceful
// shutdown: the command stops what runs, records it, writes its summary
// and report, and then returns an error wrapping ErrInterrupted (exit code
// 130). A bad flag, argument or value is a *UsageError (exit code 2); any
// other error is a failure (exit code 1).
//
// `frog sim` and `frog train` write a run directory, runs/<name> unless
// --run-dir says otherwise, through package run: config.json first,
// metrics.jsonl a line at a time as the learner updates, and summary.json
// last. A training run adds trajectories/ as JSONL shards and
// checkpoints/, each written atomically and then named by a "latest"
// pointer, so that a run killed at any point keeps what it recorded and
// `frog train --resume` can continue it (run.Resume). This package keeps
// the flags, their validation and the printing.
package cli
