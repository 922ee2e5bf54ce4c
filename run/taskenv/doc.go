// Package taskenv is the environment real tasks are played in, put
// together for a command: the stores they come from (LoadStore, Load), the
// workspaces that lay them out, the harness that runs and judges their
// tests and the quarantine that checks each before it is served (Env,
// opened by Open), the checks a command runs before it plays them (Check,
// RequireUsable), and what the simulated agent's oracle is told of the
// tasks it plays (OracleSource, Env.OracleFix, FixFor). frog eval,
// rollout, train, sim, synth verify, bench tries and experiment
// curriculum --mode real open their tasks through it.
//
// Backends are not chosen here: Open lays out the workspaces and then asks
// the caller's Opener for the sandboxes (the command line wires docker,
// process and sim there), passing the SandboxOptions the caller gave it.
// Options and SandboxOptions carry JSON tags because commands record them
// in their config.json.
//
//	tenv, prov, release, err := taskenv.Open(ctx, opts,
//		taskenv.Sandboxes{SandboxOptions: sb, Run: "eval", Concurrency: 8}, open, log)
//	defer release()
//	recs, err := taskenv.Load("--tasks", path, 0, 0, log)
//	tasks, quarantined, err := tenv.Check(ctx, recs, 8, log)
//
// Errors name the flag the caller says a value came from (LoadStore's and
// Load's flag argument; Open names --workspaces and --local). A value the
// caller gave that does not work (a store that does not load, a --local
// directory that is no module) is a *run.UsageError; a check cut short by
// ctx is run.ErrInterrupted; a store whose tasks are all quarantined is
// neither.
//
// Threading: Open, Load, LoadStore, Check and RequireUsable are called by
// the command's goroutine before its episodes start, and block: Open on
// the Opener, Check and RequireUsable on the tasks' checks, which run
// concurrently and stop when ctx is cancelled. An Env's Harness and
// Quarantine then serve every episode of the run, from any goroutine;
// OracleFix and the wrapper OracleSource returns are called from the
// synthesizer actor's workers, concurrently, and honour ctx through the
// workspaces. The release func Open returns is the Opener's: called once,
// after the last episode.
package taskenv
