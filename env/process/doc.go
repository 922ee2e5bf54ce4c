// Package process is the env.Sandbox backend for machines without Docker:
// each sandbox is a temporary directory on this machine, and each command a
// child process in its own process group, with rlimits and, where the kernel
// permits unsharing, new network and pid namespaces (no network; every
// process of a command dies with it).
//
// Its isolation is weaker than a container's, and it says so: see Warning
// and Provider.Isolation. Commands run as the user running frog and can read
// what that user can. Use it for trusted code, or when nothing else runs.
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
// Faults of the machine (no temporary directory, no pipe) wrap env.ErrInfra.
// A command that fails or times out is a result. Paths that leave the
// workspace, also through symbolic links, are refused with errors that do not
// wrap env.ErrInfra, and so are the file system's own errors.
package process
