// Package source finds the real Go code tasks are made from, makes tasks of
// it, and serves them to episodes: module sources (a local module
// directory; a module path@version fetched with the go command into the
// module cache and copied to a writable work directory; a git repository
// cloned at a ref), the pinned default list of modules (Default), and the
// machinery below. `frog synth`, `frog synth verify`, `frog train`, `frog
// eval`, `frog rollout`, `frog sim --tasks` and `frog bench synth` use it.
//
// Synthesizer is the synth.Source whose workers, each with its own sandbox,
// prepare the modules' packages, mutate them and validate the mutants with
// synth/validate. It spreads its work across the modules in proportion to
// what each can yield (schedule.go), is steerable toward a bin of family,
// k, locality and module (synth.Steerable, steering.go) and makes compound
// tasks (synth.Compounder). Generate feeds `frog synth`'s store; Tasks,
// TasksFor and Compound serve the synthesizer actor of `frog train`.
// Calls may come from several goroutines; the Synthesizer serializes them,
// its workers stop when ctx is cancelled, and Close closes their sandboxes.
// BenchGremlins measures it against gremlins (`frog bench synth`).
//
// Workspaces is the env.Workspaces of real tasks: one template per task,
// the module at its version with the task's bug applied, made once per task
// and machine and checked against the hashes recorded when it was made
// before each use (integrity.go). Quarantine checks each real task once,
// before any episode plays it, in a sandbox of the run's own provider, and
// sets aside a task that does not hold up; its Source wraps a task source
// with that check (synth.Wrap). It is frog's one task check: train, eval,
// rollout, sim and `frog synth verify` all ask it. Workspaces and
// Quarantine are safe for concurrent use; their calls block while they
// prepare or check, and honour ctx.
//
// Nothing here is committed to the repository: fetched modules live in the
// module cache and in a work directory the caller owns, templates under
// DefaultWorkspaceRoot.
package source
