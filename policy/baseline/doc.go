// Package baseline holds the hand-written repair policies a learned one must
// beat, all on policy/repair's protocol (run the tests, measure coverage,
// rank lines by spectrum fault localisation, list template candidates at the
// most suspicious lines, try them one at a time):
//
//   - random: a uniformly random untried candidate per try;
//   - fl-greedy: the most suspicious line first, templates in the harness's
//     fixed order;
//   - fl-feedback: fl-greedy that keeps an edit which turns failing tests
//     green without breaking passing ones (and then lists candidates again,
//     for the bugs left), and demotes lines where two edits changed nothing;
//   - ceiling: not a policy but a measurement: every candidate at every line
//     a failing test ran is tried (kept edits included), so its solve rate
//     is the share of tasks whose fix lies in the candidate space at all.
//
// Each records, per try, the features of every option it chose from, so a
// learner can recompute log-probabilities from the trajectory alone.
//
// `frog eval --policy random,fl-greedy,fl-feedback` plays them (and the
// ceiling, unless --ceiling=false); `frog train --baselines` evaluates them
// on the held-out tasks at the start of a run.
//
// A Policy is a policy.Policy, immutable and safe for concurrent use: the
// policy server calls Act from its inference goroutines, several batches
// at once. Act is a pure function of each observation and the seed; it
// does no I/O, never blocks, and returns ctx's error when ctx was
// cancelled.
package baseline
