// Package source finds the real Go code tasks are made from and makes them:
// module sources (a local module directory, or a module path@version fetched
// with the go command into the module cache and copied to a writable work
// directory), the pinned default list of modules, and Synthesizer, the
// synth.Source that mutates those modules' packages and validates the
// mutants with synth/validate.
//
// Nothing here is committed to the repository: fetched modules live in the
// module cache and in a work directory the caller owns.
package source
