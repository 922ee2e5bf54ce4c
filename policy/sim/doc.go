// Package sim is a simulated agent and learner, a model for planning capacity
// and for studying curricula — not evidence about real agents (see
// docs/sim-model.md). `frog sim`, `frog bench` and `frog experiment
// curriculum --mode sim` play it.
//
// The agent solves a task with probability σ(skill − difficulty), σ the
// logistic function. It is an oracle, and named as one: what it knows of a
// task (its difficulty and its fix) comes from an Oracle that whoever serves
// the tasks fills, never from its observations, which hold only what a real
// agent could see. An episode is: view the buggy file, write the fix into
// each of its files if the episode's draw succeeds (a wrong fix into the
// first otherwise), submit. The one draw of an episode (at its first edit)
// comes from a generator seeded by (Seed, episode, attempt), so an episode's
// choices do not depend on how the policy server happened to batch it.
//
// The learner raises the skill by its rate times the learning signal of
// each batch, the sum over the batch's groups of the within-group reward
// variance: groups that all pass or all fail teach nothing, groups at a
// pass rate of one half teach most, and the skill gained per episode does
// not depend on how episodes are batched.
//
// # Threading and cancellation
//
// A Policy is a value, safe for concurrent use: the policy server calls
// Act from its inference goroutines. An Oracle is safe for concurrent use:
// a task source adds to it while episodes read it. A Learner is called from
// the learner actor's update goroutine, one call at a time. Nothing here
// blocks or does I/O; Act and Update return ctx's error when ctx was
// cancelled.
package sim
