// Package gotask is a Go task at episode time: the workspaces a real
// episode plays in, the harness that runs its tests and decides its
// reward, and the task check that keeps a task that does not hold up from
// being played. `frog train`, `frog eval`, `frog rollout`, `frog sim
// --tasks`, `frog bench tries` and `frog experiment real` use it; tasks are
// made elsewhere (synth/source, synth/validate) and only played here.
//
// # Workspaces
//
// Workspaces is the env.Workspaces of real tasks (workspaces.go): one
// template per task, the module at its version (synth/source's modules,
// fetched with source.Fetch) with the task's bug applied, made once per
// task and machine and checked against the hashes recorded when it was
// made before each use (integrity.go), so that a file changed under frog
// is never laid out into a workspace or read back by a verdict
// (ErrModified).
//
// # The harness
//
// Harness is the env.Harness of Go tasks, the one every real episode uses,
// one file a job: an outcome cache keyed by (task, workspace state, call)
// that answers the repeated states of a group's episodes, and locks by key
// so that one of them computes a state the others wait for (cache.go);
// run_tests (go test -json, a verdict per test, failures' file:line and
// panic frames: tests.go); coverage (a cover profile per test, from one
// process: coverage.go); candidates (synth/mutate's repair templates at the
// lines asked for, ranked with a naturalness model of the module's code:
// candidates.go); tries (the candidates of one list compiled once into a
// mutant schema, then a test run per try: tries.go, schemata.go, served by
// one process per episode where the sandbox can start one: serve.go); and
// the verdict: a real build of the edited tree with the task's own test
// files put back, the workspace reset to the template plus the episode's
// recorded edits, a screen of the change for what no repair needs, and
// canary tests in the verdict binary, so that a forged pass is rewarded 0
// and counted as a suspected reward hack (verdict.go, screen.go, real
// builds shared by tree in realbin.go). The go test layer it stands on is
// gotask/gotest, which the synthesizer's Validator shares.
//
// # The task check
//
// Harness.Check is the one check of a task before it is served (check.go):
// with the bug its tests build, its FAIL_TO_PASS tests fail (in FlakeRuns
// more runs too) and its PASS_TO_PASS tests pass, and with the gold patch
// every deciding test passes in a verdict's build, canaries and all; on
// the way it measures the starting state's coverage into the outcome
// cache.
// Quarantine runs it once per task, in a sandbox of the run's own provider,
// and sets aside a task that does not hold up (synth.ErrQuarantined); its
// Source wraps a task source with that check (synth.Wrap). train, eval and
// rollout all check their tasks through it. BenchTries measures schema
// tries against a real build per try (`frog bench tries`).
//
// # Threading and cancellation
//
// One Harness, one Workspaces and one Quarantine serve every episode of a
// run: each is safe for concurrent use, called from each episode's
// goroutine (the Quarantine's from whoever draws tasks), one call at a
// time per episode. Each call blocks until its commands end, or until ctx
// is cancelled, when the sandbox ends the command and the call returns
// ctx's error. A fault of the sandbox or of this machine wraps
// env.ErrInfra, and an error that does not (an unknown test, a candidate
// that does not apply) is the agent's mistake. A try server is a process
// in its episode's sandbox: the harness's one goroutine for it forgets it
// when the process ends (with the sandbox, at the latest); ctx's end kills
// a try in progress. Quarantine.CheckAll checks n tasks at a time, each on
// a goroutine of its own, and returns when all have ended.
package gotask
