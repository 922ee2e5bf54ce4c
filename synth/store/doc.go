// Package store keeps synthesized tasks as JSONL: one synth.TaskRecord per
// line, in the SWE-bench / SWE-smith instance schema (instance_id, repo,
// patch, FAIL_TO_PASS, PASS_TO_PASS, problem_statement, ...) plus frog's own
// fields. Reading fails on the first malformed line and names its number.
//
// The functions are synchronous and hold no state; callers that append to
// one file from several goroutines serialize the calls.
package store
