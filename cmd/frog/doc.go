// Command frog trains and studies coding agents with reinforcement learning
// on bug-fix tasks it synthesizes itself. Run `frog --help`.
//
// The command is a few lines: main calls cli.Main (package
// cmd/frog/cli), which runs the command line with the process's arguments
// and streams, handles SIGINT and SIGTERM, and returns the exit code: 0
// success, 1 failure, 2 bad usage, 130 interrupted. Everything that can be
// tested lives in cli.
//
// This package's tests guard the module as a whole: deps_test.go keeps the
// layering (only actors imports protoactor-go, only env/docker the Docker
// client, only cuda uses cgo, env's backends never import each other), and
// doc_test.go checks that every package keeps its package comment in a
// doc.go of its own.
package main
