// Package replay plays episodes of frog's built-in repair policy against a
// table of real verdicts instead of real sandboxes: a replay.
//
// A table (frog tabulate) records, per task, what an episode of the
// policy's protocol can observe at the task's start — the deciding tests'
// report, their coverage, the candidate list at the lines the protocol
// asks for — and every listed candidate's try, as an exhaustive search on
// that protocol found them in real sandboxes (policy/baseline.Exhaustive,
// the ceiling search on the policy's own lines), with the verdict of the
// workspace with each passing candidate applied. The file is JSON lines:
// a header (format version, frog version, the store's SHA-256, the
// protocol and harness settings), a line a task, and an end record with
// the counts, so that a table cut short is refused (Decode).
//
// Env is an env.Provider and an env.Harness over a table: its sandboxes
// hold the recorded files and run nothing; its harness answers run_tests,
// coverage, candidates, try and the verdict from the table, costing no
// test run. What the table does not hold — a workspace other than the
// start or the start with one passing candidate applied (an agent's own
// edit, a kept partial fix), candidates at other lines (another
// protocol), named tests, any command — is answered with
// ErrNotReplayable, which wraps env.ErrInfra: such an episode ends as an
// infrastructure fault and is never scored, and Report counts the calls.
// The built-in policy on the table's protocol without --keep never asks
// for one.
//
// A replay is not a real run: every command that plays one names it as a
// replay in its logs, reports and summaries.
//
// # Threading
//
// Env is safe for concurrent use and never blocks (Immediate reports
// true); a Sandbox belongs to one episode, one goroutine at a time.
// Nothing here owns a goroutine.
package replay
