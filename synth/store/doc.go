// Package store keeps synthesized tasks as JSONL: one synth.TaskRecord per
// line, in the SWE-bench / SWE-smith instance schema (instance_id, repo,
// patch, FAIL_TO_PASS, PASS_TO_PASS, problem_statement, ...) plus frog's own
// fields.
//
// The file functions hold no state between calls; the file is the state.
// Load and Read validate every record (TaskRecord.Validate: the fields a
// task needs, paths inside the module) and fail on the first bad line,
// naming it (path:line). Append writes whole lines and syncs; it refuses to
// write after a torn last line (a write cut short by a crash or a full
// disk), which Repair sets aside in a file beside the store, keeping every
// complete line. Callers that append to one file from several goroutines
// or processes serialize the calls.
//
// Source is the one stateful type: the synth.Source of `frog train
// --tasks`, `frog sim --tasks` and the experiments. It holds a store's
// tasks in memory, sorted by difficulty, and a seeded generator to draw
// them with, least served first; it is steerable (TasksFor draws the tasks
// of a bin), and a quarantine drops from it the tasks that do not hold up
// (Drop), after which a draw that finds none left returns
// synth.ErrExhausted. It is safe for concurrent use and never blocks on
// I/O: a call made with a cancelled ctx returns ctx's error.
package store
