// Package remotetest tests remote runs as users run them: a trainer and
// its rollout workers, each a frog process of its own on loopback (the
// test binary, named frog), killed, paused and interrupted mid-run. One
// process each because protoactor-go's remote is not safe to start twice
// in one process (docs/remote.md). It holds no code but its tests.
package remotetest
