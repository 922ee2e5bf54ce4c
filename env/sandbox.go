package env

import (
	"context"
	"errors"
	"io"
	"time"
)

// Sandbox is one isolated workspace owned by one episode. The episode opens it
// through a Provider when it starts and closes it when it stops, on every path.
//
// A Sandbox is used by one goroutine at a time (the episode's). Every method
// blocks until done or until ctx is cancelled; after cancellation a method
// returns promptly with an error wrapping ctx.Err(). Faults of the sandbox
// itself wrap ErrInfra. Paths are relative to the workspace; a path that
// escapes it is refused with an error that does not wrap ErrInfra, since it is
// the agent's mistake.
type Sandbox interface {
	// Exec runs a command in the workspace and waits for it. A command that
	// exits non-zero or runs past its timeout is a result, not an error.
	Exec(ctx context.Context, opts ExecOptions) (ExecResult, error)
	// ReadFile returns the content of a file in the workspace.
	ReadFile(ctx context.Context, path string) ([]byte, error)
	// WriteFile replaces (or creates) a file in the workspace.
	WriteFile(ctx context.Context, path string, data []byte) error
	// Close releases the sandbox and everything in it. It is idempotent and
	// must succeed even when the episode's context is already cancelled:
	// callers pass a detached context with a bounded timeout.
	Close(ctx context.Context) error
}

// ExecOptions says what to run.
type ExecOptions struct {
	// Cmd is the argument vector; Cmd[0] is looked up in the sandbox's PATH
	// (a name with a slash is a path, relative to Dir).
	Cmd []string
	// Dir is the directory the command starts in, relative to the
	// workspace; "" is the workspace. A path that leaves it is refused.
	Dir string
	// Env is added to the command's environment (NAME=value), after the
	// sandbox's own.
	Env []string
	// Stdin is written to the command's standard input.
	Stdin []byte
	// Timeout bounds the command; 0 means the provider's default. When it
	// expires the whole process tree is killed and the result has TimedOut.
	Timeout time.Duration
	// MaxOutput caps the bytes kept of stdout and of stderr; 0 means the
	// provider's default.
	MaxOutput int
}

// ExecResult is what a command did.
type ExecResult struct {
	ExitCode  int
	Stdout    []byte
	Stderr    []byte
	TimedOut  bool
	OOMKilled bool
	Truncated bool
	Duration  time.Duration
}

// Provider opens sandboxes. Open is called concurrently from many episodes; it
// blocks until the sandbox is ready, the provider's concurrency limit admits
// it, or ctx is cancelled. Faults wrap ErrInfra.
type Provider interface {
	Open(ctx context.Context, opts OpenOptions) (Sandbox, error)
}

// OpenOptions identifies who a sandbox is for. Backends label what they
// create with Run and Episode so that a reaper can find what a dead run left.
type OpenOptions struct {
	Run     string
	Episode uint64
	// Attempt counts retries of the same episode after infrastructure faults,
	// from 0.
	Attempt int
	Task    *Task
}

// ProviderStats is an optional capability of a Provider: counters for tests
// and summaries. Live is the number of sandboxes opened and not yet closed.
type ProviderStats interface {
	Stats() SandboxStats
}

// SandboxStats counts what a provider did.
type SandboxStats struct {
	Opened int64 `json:"opened"`
	Closed int64 `json:"closed"`
	Live   int64 `json:"live"`
	// Faults counts infrastructure faults injected or observed, by kind.
	Faults map[string]int64 `json:"faults,omitempty"`
}

// Immediate is an optional capability of a Provider: Immediate reports true
// when its sandboxes never block (every call returns at once, with no I/O and
// no waiting), so that a caller may use them inside an actor's Receive rather
// than from a goroutine of their own. The simulated provider at time scale 0
// is one.
type Immediate interface {
	Immediate() bool
}

// HostPaths is an optional capability of a Sandbox: HostPath returns the
// path at which the sandbox's commands see file p of this machine (read
// only), when they can see it at all. Harnesses use it to share what they
// built once (a test binary) among the sandboxes of a run.
type HostPaths interface {
	HostPath(p string) (string, bool)
}

// Resetter is an optional capability of a Sandbox: Reset puts the
// workspace back as Open laid it out (the task's template) and ends every
// process the sandbox's commands left running. The verdict resets before it
// writes back the changes an episode recorded, so that it judges exactly
// those: a file the agent's code wrote behind the edit tool's back (a test
// that rewrites the source it tests), or a process it left running, counts
// for nothing. It blocks until done; a fault wraps ErrInfra.
type Resetter interface {
	Reset(ctx context.Context) error
}

// ErrNoReset is Reset's answer where the sandbox cannot reset (it holds no
// real task, or wraps one that cannot): the caller judges the workspace as
// it is.
var ErrNoReset = errors.New("the sandbox cannot reset its workspace")

// Starter is an optional capability of a Sandbox: Start runs a command in
// the workspace, as Exec does, and returns once it has started, its
// standard input and output connected to the caller, for a command that
// answers many requests in one process (a test binary that runs one try
// a line it reads: its start, 10 ms or more, paid once an episode rather
// than once a try). ctx bounds the start only; the command runs until it
// exits, Kill, or the sandbox's Close, and Timeout does not apply.
// Faults of the sandbox wrap ErrInfra; a command that cannot be started
// (not found, not executable) is an error that does not.
type Starter interface {
	Start(ctx context.Context, opts ExecOptions) (Process, error)
}

// Process is a command started by Starter. Its standard error goes to the
// same stream as its standard output, as Exec's caller reads them
// together.
type Process interface {
	// Stdin is the command's standard input; Stdout its standard output
	// and error, which reads io.EOF once the command has exited and the
	// stream is drained (or once Kill is called).
	Stdin() io.Writer
	Stdout() io.Reader
	// Kill kills the command and every process it started and releases
	// its streams; it is idempotent. Call it once done with the command,
	// even after it has exited.
	Kill()
	// Done is closed once the command has exited; ExitCode is then its
	// exit status (128+signal when a signal killed it).
	Done() <-chan struct{}
	ExitCode() int
}
