// Command agent is frog's in-container agent and the whole userland of
// frog's sandbox image: one static binary that decides what to be by the
// name it is run as (argv[0], or its first argument when run as agent).
//
// As agent (the process a sandbox container runs, started once per
// container) it executes the episode's commands and file operations so that
// none of them pays for a `docker exec`. It speaks a length-prefixed protocol
// on its standard input and output (the container's attach stream): every
// frame is a 4-byte big-endian length followed by that many bytes of JSON.
// The host sends requests (exec, read, write, remove, layout, cancel); the
// agent answers each with a response carrying the same id, and sends one
// hello frame (id 0) when it is ready. layout copies a task's template, a
// directory under -tasks (the host's workspace root, mounted read-only),
// into the empty workspace: see layout.go.
//
// Commands run one at a time, in their own process group, in the workspace.
// When a command exits, times out or is cancelled, every other process in the
// container (the agent and the init process aside) is killed: no process
// outlives the command that started it, whatever it did to escape its group.
//
// With -gocache-layers, each command gets a Go build cache of its own: a
// fresh directory (GOCACHE) that is removed when the command and all it
// started are dead, over the shared cache (-gocache-shared, mounted
// read-only), which the go command reads through GOCACHEPROG, served by this
// binary as gocacheprog. So nothing a command writes into a build cache is
// ever read by another command: see gocacheprog.go.
//
// As sh it is a POSIX shell (mvdan.cc/sh's interpreter); as cat, ls, cp,
// find, grep, sed, diff, env and the others in tools it is that tool. The
// image links each name to this binary, so the image needs nothing from the
// host but the go command that builds it.
//
// env/docker embeds this package's source, with agent.mod and agent.sum as
// its go.mod and go.sum, and builds it with CGO_ENABLED=0 when it builds the
// sandbox image (`frog image build`, make image). The image's tag is a hash
// of that source (docker.ImageVersion): any change here, comments included,
// names a new image, which frog builds when it is missing.
package main
