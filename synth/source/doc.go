// Package source finds the real Go code tasks are made from and makes them:
// module sources (a local module directory; a module path@version fetched
// with the go command into the module cache and copied to a writable work
// directory; a git repository cloned at a ref), the pinned default list of
// modules, and Synthesizer, the synth.Source whose workers, each with its
// own sandbox, prepare the modules' packages, mutate them and validate the
// mutants with synth/validate. BenchGremlins measures it against gremlins.
//
// Nothing here is committed to the repository: fetched modules live in the
// module cache and in a work directory the caller owns.
package source
