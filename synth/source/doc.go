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
// The workspaces episodes play in and the check of a task before it is
// served (Workspaces, Quarantine: frog's one task check, asked by train,
// eval, rollout, sim and `frog synth verify`) are gotask's.
//
// Nothing here is committed to the repository: fetched modules live in the
// module cache and in a work directory the caller owns.
package source
