// Package process is the env.Sandbox backend for machines without Docker:
// each sandbox is a temporary directory on this machine (its workspace, a
// home, and what frog keeps for it), and each command a child process in
// its own process group, with rlimits.
//
// With Config.Contain (the default) every command runs in a bubblewrap
// sandbox of its own (contain.go): unprivileged (as nobody when frog is
// root), in new mount, pid, network, IPC and UTS namespaces, seeing the
// system, the Go toolchain, the module cache and the host's build cache
// read-only, its workspace, home, a /tmp and a build cache layer of its
// own writable, and nothing else of this machine: no task template, no
// other sandbox, no run directory, no Docker socket, no network. Nothing a
// command writes outside its workspace and home outlives it, and what it
// writes into a build cache is read by no later command. New fails with
// ErrUncontained where that cannot be done (no bwrap, a kernel that
// refuses the namespaces); callers refuse to go on without containment
// unless the user says otherwise.
//
// Without it commands run as the user running frog, see what that user
// sees and can write it, and only their process group, rlimits and, where
// the kernel permits unsharing, network and pid namespaces are their own:
// see Warning. Use that for trusted code only.
//
// # Threading and cancellation
//
// A Provider is safe for concurrent use and owns no goroutines. A Sandbox
// serializes its calls (it belongs to one episode); Close may be called from
// any goroutine and kills the running command. Exec returns promptly when
// ctx is cancelled, with an error wrapping ctx.Err(), after killing the
// command's processes. The goroutines an Exec starts (pipe readers, the
// wait) end before it returns.
//
// # Errors
//
// Faults of the machine (no temporary directory, no pipe, a bwrap that
// could not set a command's sandbox up, which its status pipe tells and
// the command's output cannot fake) wrap env.ErrInfra. A command that
// fails or times out is a result. Paths that leave the workspace, also
// through symbolic links, are refused with errors that do not wrap
// env.ErrInfra, and so are the file system's own errors.
package process
