// Package experiment is frog's curriculum experiment (frog experiment
// curriculum): every strategy run with every seed at one budget of test
// executions, each run's held-out curve measured on one fixed held-out
// set, and the runs summarized per strategy with bootstrap intervals over
// seeds and the paired difference from uniform.
//
//	tab, err := experiment.Run(ctx, opts, deps) // runs what opts.Dir lacks
//	err = tab.Print(os.Stdout)                   // what table.txt holds
//
// An experiment directory holds config.json (the Options, less the
// strategies and seeds: what must agree for results to be comparable;
// OpenDir refuses a directory made with other settings), results.jsonl
// (one Result a line, appended and synced as each run finishes:
// AppendResult, ReadResults), table.txt, curriculum.png and .svg
// (Summarize, Table.Print, Table.Draw), and in real mode heldout.json (the
// held-out tasks the first invocation's check kept, played by every later
// one). A run already in results.jsonl is not run again (Pending), so an
// interrupted experiment resumes and strategies or seeds can be run a few
// at a time into one directory.
//
// A Runner runs one (strategy, seed): Sim on frog sim's named simulation
// (Mode "sim", the held-out rate computed exactly), Real with frog's
// neural policy trained by GRPO on real tasks in real sandboxes (Mode
// "real", the held-out tasks played greedily at each point of the curve),
// Replay with the same policy against replay tables of real verdicts
// (Mode "replay": a training table and a held-out one, the budget in
// episodes, every run named a replay in its logs and the table's mode).
// The caller chooses the backends and names the flags: Deps gives the
// curricula, the sandbox opener and the tensor backend, and Options are
// checked by the caller (cmd/frog/cli). Errors that are the caller's
// input (a directory of other settings, a store that does not load) are
// *run.UsageError; the messages name frog's flags.
//
// Threading and cancellation: Run, OpenDir, OpenReal, OpenReplay, NewSim and the
// Runners' Run are called from one goroutine, the caller's, and block for
// as long as the runs take; each run drives the actors (actors.Run,
// actors.EvaluateWhole), whose goroutines end before Run returns. A run
// cut short by ctx is an error, never a result: Run returns ctx's error
// and records nothing of that run, so the next invocation runs it again.
// Real.Close releases the sandboxes and the tensor backend, once, after
// the last run; Replay.Close the tensor backend.
package experiment
