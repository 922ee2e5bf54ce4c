// Package docker is the env.Sandbox backend on a Docker daemon: one container
// per episode, labelled with its run and episode (LabelRun, LabelEpisode) and
// with the frog process that owns it, so that Reap can remove what a dead
// frog left behind.
//
// A container is networkless (Network "none"), runs as a non-root user with
// every capability dropped and no-new-privileges, on a read-only root file
// system with tmpfs mounts at /workspace and /tmp, under memory, CPU and pids
// limits; Config says all of it, DefaultConfig gives the defaults. The host's
// Go toolchain and module cache are mounted read-only at /usr/local/go and
// /go/pkg/mod. A named volume shared by all sandboxes holds the Go build
// cache at /cache, read-only: the provider alone writes it, compiling the
// standard library into it in a container of its own when it starts, and
// each command in a sandbox gets a fresh, writable cache layer of its own
// over it, removed when the command ends. Nothing an episode writes into a
// build cache is read by a later command, its own verdict included, or by
// another episode.
//
// Commands do not pay for a `docker exec`: each container runs frog's agent
// (env/docker/agent) as its main process, under Docker's init, and the
// provider talks to it over the container's attach stream with a
// length-prefixed protocol. The agent runs one command at a time in its own
// process group with a timeout, caps its output, reports OOM kills from the
// container's memory cgroup, and kills every process of the container but
// itself when a command ends, so nothing outlives its command. File reads and
// writes go through the agent too, confined to the workspace by os.Root.
//
// The image is built with no registry and no host package by BuildImage
// (FROM scratch: the agent compiled by the go command, mount points) and
// tagged DefaultImage. The agent is also the image's whole userland: a
// multi-call binary that is sh (mvdan.cc/sh), the file tools of u-root
// (cat, ls, cp, find, …) and frog's own grep, sed, diff, env and the rest,
// each a link to it. A warm pool per image keeps PoolSize containers started
// ahead of demand. A container serves up to Config.Reuse episodes (16 by
// default), one after the other: when an episode closes its sandbox, the
// agent kills every process but itself, empties the workspace, /tmp and
// /dev/shm, puts the workspace's mode back and removes the System V IPC
// objects, and the container goes back to the pool. The rest of the
// container is read-only to an episode, so the next one finds what a
// fresh container holds. Reuse saves the daemon the creation and removal
// of a container per episode (docs/sandboxes.md measures it). Config.Reuse
// 1 gives every episode a container nobody used.
//
// For a real task (env.Task.Real) Open lays out the workspace: it asks
// Config.Workspaces for the task's template, a host directory under
// Config.WorkspaceRoot, which every container mounts read-only at TasksDir,
// and the agent copies the template into the empty tmpfs workspace (files,
// directories, modes, relative links that stay inside it). Each sandbox has
// its own copy; the template is never written. A real task without
// Workspaces is an error, never an empty workspace.
//
// # Threading and cancellation
//
// A Provider is safe for concurrent use. It owns the pool's filler
// goroutine and the container starts it runs; Close stops them and removes
// every container the provider still holds. A Sandbox belongs to one episode:
// its calls are serialized, and each blocks until the agent answers, ctx is
// cancelled or the container dies. On cancellation a call returns at once
// with an error wrapping ctx.Err(), after asking the agent to kill the
// command. Each Sandbox owns one goroutine, the reader of its attach stream,
// which exits when the container dies or the sandbox is closed. Close runs
// under a detached context bounded by Config.CloseTimeout, so it succeeds
// when the episode's context is already cancelled.
//
// # Errors
//
// Every fault of the daemon, the container or the agent wraps env.ErrInfra
// (an OOM kill or exit of the container is described in the message). A
// task that cannot be laid out is an error naming it that keeps the
// category Workspaces gave it: see Provider.Open. A
// command that fails, times out or is OOM-killed is a result, not an error.
// Paths that leave the workspace, and the file system's own refusals (no such
// file), are errors that do not wrap env.ErrInfra: they are the agent's.
//
// # Other images
//
// Any image on the daemon can be used (Config.Image) if it contains the agent
// at AgentPath, for example with
//
//	COPY --from=frog-sandbox:<version> /frog/agent /frog/agent
//
// and a user that owns nothing outside the workspace. A missing image is
// pulled within Config.PullTimeout where a registry answers; otherwise New
// fails with an error naming it.
package docker
