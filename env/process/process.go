package process

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/frognano/frog/env"
)

// Warning says what this backend does not protect against when its
// commands are not contained (Config.Contain off). Callers that choose it
// show it to the user.
const Warning = "process sandboxes are weakly isolated: commands run as this user on this machine " +
	"and can read (and, outside the workspace, write) whatever this user can; only their process " +
	"group, rlimits and, where the kernel permits unsharing, their network and pid namespaces are " +
	"their own. Use the docker backend, or install bubblewrap, for untrusted code."

// Config describes the process sandboxes.
type Config struct {
	// Contain runs every command in a bubblewrap sandbox (contain.go):
	// unprivileged, in its own mount, network, pid, IPC and UTS
	// namespaces, seeing the system, the Go toolchain and caches
	// read-only, its workspace, home and /tmp writable, and nothing else
	// of this machine. New fails with an error wrapping ErrUncontained
	// where that cannot be done. Off, commands run as described under
	// Unshare and Warning.
	Contain bool
	// TmpSize bounds a contained command's /tmp (a tmpfs of its own), in
	// bytes; 0 leaves the kernel's default (half the memory).
	TmpSize int64
	// SandboxLayer gives all the commands of a sandbox one build cache
	// layer, kept in its directory until it closes, instead of one each:
	// what a command compiles, the next finds (the workspace's packages,
	// compiled again by every command otherwise, as their path is the
	// sandbox's). Only for sandboxes that run no agent's code (synthesis
	// validates the module's own tests and frog's mutants): an agent's
	// code could write the layer that its verdict's build then reads.
	SandboxLayer bool
	// WarmGo are the packages New compiles into the host's build cache,
	// which contained commands read but cannot write (once a process;
	// contain.go), within WarmTimeout.
	WarmGo      []string
	WarmTimeout time.Duration
	// Dir holds the sandboxes' directories. "" means a directory of its own
	// on /dev/shm when that is a memory file system with at least 2 GiB
	// free and TMPDIR is not set (laying a task's workspace out there is
	// much cheaper than on a disk's file system: docs/sandboxes.md), else
	// os.TempDir(). New removes what sandboxes of frog processes that
	// died left there.
	Dir string
	// ExecTimeout is a command's timeout when ExecOptions.Timeout is 0;
	// MaxOutput the cap of stdout and of stderr when ExecOptions.MaxOutput
	// is 0.
	ExecTimeout time.Duration
	MaxOutput   int
	// Rlimits of every command, 0 meaning unlimited: address space and
	// file size in bytes, CPU time in seconds, open files.
	AddressSpace int64
	FileSize     int64
	CPUSeconds   int64
	OpenFiles    int64
	// Unshare runs uncontained commands in new network and pid namespaces (and a user
	// namespace when needed) if the kernel permits it: no network but
	// loopback, which is down, and every process of a command dies with
	// it. Where it is not permitted the provider says so in Isolation and
	// goes on without.
	Unshare bool
	// UserNamespace puts root's commands in a new user namespace too, as
	// everyone else's are (an unprivileged user cannot unshare the others
	// without one). Off by default: a command in a new user namespace
	// starts by a full fork of frog, whose cost grows with frog's memory
	// (docs/sandboxes.md measures it), and root's uid maps to root in it.
	UserNamespace bool
	// Workspaces lays out the workspace of a real task (env.Task.Real) when
	// its sandbox opens; without it, opening one for a real task fails.
	Workspaces env.Workspaces
	// Link lays a task's workspace out by hard links to its template
	// instead of copies: faster, but a command that writes a file in place
	// (rather than through WriteFile, which replaces files) would write
	// the template. Off by default.
	Link bool
	// Env is added to the commands' environment: PATH, the GO* variables
	// and LANG of this process, HOME and TMPDIR in the sandbox, and the
	// host's GOCACHE and GOMODCACHE so that builds stay warm.
	Env []string
}

// DefaultConfig: contained commands with a 1 GiB /tmp, the standard
// library warmed, 10-minute commands, 1 MiB of output, 8 GiB of address
// space, 1 GiB files, 10 CPU minutes, 4096 open files, namespaces on.
func DefaultConfig() Config {
	return Config{
		Contain:      true,
		TmpSize:      1 << 30,
		WarmGo:       []string{"std"},
		WarmTimeout:  15 * time.Minute,
		ExecTimeout:  10 * time.Minute,
		MaxOutput:    1 << 20,
		AddressSpace: 8 << 30,
		FileSize:     1 << 30,
		CPUSeconds:   600,
		OpenFiles:    4096,
		Unshare:      true,
	}
}

// Provider opens process sandboxes. It is safe for concurrent use and owns
// no goroutines.
type Provider struct {
	cfg   Config
	log   zerolog.Logger
	clone uintptr // namespaces every command gets
	maps  bool    // the user namespace needs id maps
	note  string
	env   []string
	// c contains the commands; nil when Config.Contain is off.
	c *containment

	opened, closed atomic.Int64
}

var (
	_ env.Provider      = (*Provider)(nil)
	_ env.ProviderStats = (*Provider)(nil)
	_ env.Sandbox       = (*Sandbox)(nil)
	_ env.Remover       = (*Sandbox)(nil)
	_ env.HostPaths     = (*Sandbox)(nil)
)

// New returns a provider. With Config.Contain it finds bubblewrap, runs a
// command through it once and warms the build cache (Config.WarmGo),
// failing with an error wrapping ErrUncontained where commands cannot be
// contained; without, it probes once which namespaces the kernel lets it
// unshare. Isolation says what it found.
func New(cfg Config, log zerolog.Logger) (*Provider, error) {
	if cfg.ExecTimeout <= 0 || cfg.MaxOutput <= 0 || (cfg.Contain && len(cfg.WarmGo) > 0 && cfg.WarmTimeout <= 0) {
		return nil, errors.New("process: config: exec timeout, max output and warm timeout must be > 0")
	}
	if cfg.Dir == "" {
		cfg.Dir = defaultDir()
	}
	p := &Provider{cfg: cfg, log: log.With().Str("component", "process").Logger()}
	if n := reapDead(cfg.Dir); n > 0 {
		p.log.Info().Int("sandboxes", n).Str("dir", cfg.Dir).Msg("removed the sandboxes of frog processes that died")
	}
	if cfg.Contain {
		if err := p.contain(); err != nil {
			return nil, err
		}
		p.log.Info().Str("isolation", p.note).Msg("process sandboxes contain their commands")
		return p, nil
	}
	p.env = hostEnv(cfg.Env)
	p.note = "namespaces off by configuration: commands share the host's network"
	if cfg.Unshare {
		p.probe()
	}
	p.log.Warn().Str("isolation", p.note).Msg(Warning)
	return p, nil
}

// contain sets the provider up to contain its commands: the tools, the
// view, one command run through it, the warm build cache.
func (p *Provider) contain() error {
	host := hostEnv(p.cfg.Env)
	gp := findGo(host)
	// The commands' go command reads no go.env (a command could write one
	// in its home for the next) and reports nothing; GOCACHE is each
	// command's own (contain.go).
	p.env = append(slices.DeleteFunc(host, func(kv string) bool {
		return strings.HasPrefix(kv, "GOCACHE=") || strings.HasPrefix(kv, "GOCACHEPROG=")
	}), "GOENV=off", "GOTELEMETRY=off")
	if gp.ModCache != "" && !hasKey(p.env, "GOMODCACHE") {
		p.env = append(p.env, "GOMODCACHE="+gp.ModCache)
	}
	c, err := newContainment(p.cfg, p.env, gp)
	if err != nil {
		return err
	}
	p.c = c
	// One command through the whole path, in a sandbox of its own, so
	// that a kernel that refuses the namespaces is found here.
	sb, err := p.Open(context.Background(), env.OpenOptions{Run: "probe"})
	if err != nil {
		return err
	}
	r, err := sb.Exec(context.Background(), env.ExecOptions{Cmd: []string{"true"}, Timeout: time.Minute})
	sb.Close(context.Background())
	p.opened.Add(-1)
	p.closed.Add(-1)
	if err != nil || r.ExitCode != 0 {
		return fmt.Errorf("%w: bwrap fails here (%v, exit %d): %s", ErrUncontained, err, r.ExitCode, firstLine(r.Stderr))
	}
	who := "their own user"
	if c.setpriv != "" {
		who = "uid " + strconv.Itoa(nobody) + " (nobody), not root"
	}
	p.note = "commands run in bubblewrap sandboxes as " + who + ": own mount, network, pid, IPC and UTS namespaces; " +
		"the system, Go toolchain and caches read-only; workspace, home and /tmp their own; no network"
	if err := warm(context.Background(), c, p.env, p.cfg.WarmGo, p.cfg.WarmTimeout); err != nil {
		p.log.Warn().Err(err).Msg("warming the build cache failed: contained go commands compile what it lacks each time")
	}
	return nil
}

// dirPrefix begins the name of every sandbox's directory, followed by the
// pid of the frog that opened it.
const dirPrefix = "frog-sb-"

// defaultDir is Config.Dir's default.
func defaultDir() string {
	if os.Getenv("TMPDIR") != "" {
		return os.TempDir()
	}
	const shm = "/dev/shm"
	var st unix.Statfs_t
	if unix.Statfs(shm, &st) != nil || st.Type != unix.TMPFS_MAGIC || st.Bavail*uint64(st.Bsize) < 2<<30 {
		return os.TempDir()
	}
	dir := filepath.Join(shm, fmt.Sprintf("frog-%d", os.Getuid()))
	if os.MkdirAll(dir, 0o700) != nil {
		return os.TempDir()
	}
	return dir
}

// reapDead removes the sandbox directories in dir of frog processes that
// are no longer running (killed before they could close them) and returns
// how many it removed.
func reapDead(dir string) int {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), dirPrefix)
		if !ok || !e.IsDir() {
			continue
		}
		pidStr, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidStr)
		if err != nil || pid <= 0 || pid == os.Getpid() || syscall.Kill(pid, 0) != syscall.ESRCH {
			continue
		}
		if removeAll(filepath.Join(dir, e.Name())) == nil {
			n++
		}
	}
	return n
}

// Isolation says which namespaces commands get, or why they get none.
func (p *Provider) Isolation() string { return p.note }

// Warning is the package's Warning, for callers holding a provider.
func (p *Provider) Warning() string { return Warning }

// probe tries to run `true` in new namespaces and keeps the first set that
// works: for root, network and pid namespaces alone first; for anyone
// else, or where those are refused, inside a new user namespace.
//
// A user namespace is dear: the child must wait for its id maps, so Go
// starts it by a full fork that copies frog's page tables (a cost that
// grows with frog's memory), where a command without one starts by vfork.
// Root does not need it to unshare the others, and gains little from it:
// its uid maps to root, who still reads and writes every root-owned file.
func (p *Provider) probe() {
	truePath, err := exec.LookPath("true")
	if err != nil {
		p.note = "no `true` command to probe namespaces with: commands share the host's network"
		return
	}
	type nsSet struct {
		flags uintptr
		maps  bool
		what  string
	}
	tries := []nsSet{
		{unix.CLONE_NEWUSER | unix.CLONE_NEWNET | unix.CLONE_NEWPID, true, "user, network and pid namespaces"},
		{unix.CLONE_NEWNET | unix.CLONE_NEWPID, false, "network and pid namespaces"},
	}
	if os.Geteuid() == 0 && !p.cfg.UserNamespace {
		tries[0], tries[1] = tries[1], tries[0]
	}
	var errs []string
	for _, try := range tries {
		cmd := exec.Command(truePath)
		cmd.SysProcAttr = p.sysProcAttr(try.flags, try.maps)
		if err := cmd.Run(); err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", try.what, err))
			continue
		}
		p.clone, p.maps = try.flags, try.maps
		p.note = "commands run in new " + try.what + ": no network"
		return
	}
	p.note = "the kernel refused new namespaces (" + strings.Join(errs, "; ") + "): commands share the host's network"
}

func (p *Provider) sysProcAttr(flags uintptr, maps bool) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true, Cloneflags: flags}
	if maps {
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}
		a.GidMappingsEnableSetgroups = false
	}
	return a
}

func hostEnv(extra []string) []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "PATH" || k == "LANG" || strings.HasPrefix(k, "GO") {
			out = append(out, kv)
		}
	}
	if !hasKey(out, "GOCACHE") {
		if d, err := os.UserCacheDir(); err == nil {
			out = append(out, "GOCACHE="+filepath.Join(d, "go-build"))
		}
	}
	if !hasKey(out, "GOMODCACHE") {
		if gp := os.Getenv("GOPATH"); gp != "" {
			out = append(out, "GOMODCACHE="+filepath.Join(filepath.SplitList(gp)[0], "pkg", "mod"))
		} else if h, err := os.UserHomeDir(); err == nil {
			out = append(out, "GOMODCACHE="+filepath.Join(h, "go", "pkg", "mod"))
		}
	}
	return append(out, extra...)
}

func hasKey(env []string, k string) bool {
	for _, kv := range env {
		if strings.HasPrefix(kv, k+"=") {
			return true
		}
	}
	return false
}

// Open makes a sandbox: a new directory holding the workspace, a home and a
// temporary directory.
func (p *Provider) Open(ctx context.Context, opts env.OpenOptions) (env.Sandbox, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(p.cfg.Dir, fmt.Sprintf("%s%d-%d-%d-", dirPrefix, os.Getpid(), opts.Episode, opts.Attempt))
	if err != nil {
		return nil, env.Infra(fmt.Errorf("process: open: %w", err))
	}
	ws, home, tmp := filepath.Join(dir, "workspace"), filepath.Join(dir, "home"), filepath.Join(dir, "tmp")
	for _, d := range []string{ws, home, tmp} {
		err := os.Mkdir(d, 0o755)
		if err == nil {
			err = p.c.own(d)
		}
		if err != nil {
			os.RemoveAll(dir)
			return nil, env.Infra(fmt.Errorf("process: open: %w", err))
		}
	}
	root, err := os.OpenRoot(ws)
	if err != nil {
		os.RemoveAll(dir)
		return nil, env.Infra(fmt.Errorf("process: open: %w", err))
	}
	if t := opts.Task; t != nil && t.Real() {
		if err := p.layOut(ctx, t, ws); err != nil {
			root.Close()
			os.RemoveAll(dir)
			return nil, err
		}
	}
	s := &Sandbox{p: p, dir: dir, ws: ws, root: root,
		env: append(p.env[:len(p.env):len(p.env)], "HOME="+home, "TMPDIR="+tmp)}
	if t := opts.Task; t != nil && t.Real() {
		s.task = t
	}
	if p.c != nil {
		// A contained command's /tmp is its own tmpfs: no later command,
		// and no process of another (a try server), sees what it leaves
		// there (the go command's work directory among it).
		s.env[len(s.env)-1] = "TMPDIR=/tmp"
		s.view = p.c.sandboxView(ws, home)
		if t := opts.Task; t != nil && t.Real() {
			p.c.hideModule(&s.view, t.Repo)
		}
		if p.cfg.SandboxLayer {
			s.layer = filepath.Join(dir, "gocache")
			err := os.Mkdir(s.layer, 0o755)
			if err == nil {
				err = p.c.own(s.layer)
			}
			if err != nil {
				root.Close()
				os.RemoveAll(dir)
				return nil, env.Infra(fmt.Errorf("process: open: %w", err))
			}
			s.view.bind(s.layer, false)
		}
	}
	p.opened.Add(1)
	return s, nil
}

// layOut fills workspace ws with task t's template, given to the
// commands' user.
func (p *Provider) layOut(ctx context.Context, t *env.Task, ws string) error {
	if p.cfg.Workspaces == nil {
		return fmt.Errorf("process: task %s is real code but the provider has no Workspaces to lay it out", t.ID)
	}
	tmpl, err := p.cfg.Workspaces.Template(ctx, t)
	if err != nil {
		return fmt.Errorf("process: lay out: %w", err)
	}
	err = filepath.WalkDir(tmpl, func(src string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(tmpl, src)
		if err != nil {
			return err
		}
		dst := filepath.Join(ws, rel)
		switch {
		case d.IsDir():
			if err := os.MkdirAll(dst, 0o755); err != nil {
				return err
			}
			return p.c.own(dst)
		case !d.Type().IsRegular() || rel == ".frog-ready":
			return nil
		case p.cfg.Link:
			// A link stays the template's file, owned by frog: a contained
			// command can replace it, not write it.
			if os.Link(src, dst) == nil {
				return nil
			}
		}
		if err := copyFile(src, dst); err != nil {
			return err
		}
		return p.c.own(dst)
	})
	if err != nil {
		return env.Infra(fmt.Errorf("process: lay out task %s: %w", t.ID, err))
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// Stats counts the sandboxes opened and closed.
func (p *Provider) Stats() env.SandboxStats {
	o, c := p.opened.Load(), p.closed.Load()
	return env.SandboxStats{Opened: o, Closed: c, Live: o - c}
}

// Sandbox is one workspace directory on this machine. Calls are serialized;
// Close may come from any goroutine and kills a running command.
type Sandbox struct {
	p    *Provider
	dir  string
	ws   string
	root *os.Root
	env  []string
	// view is what contained commands see; layer their build cache
	// layer when they share one (Config.SandboxLayer).
	view  view
	layer string

	ops     sync.Mutex
	mu      sync.Mutex
	closed  bool
	running *os.Process
	started map[*proc]bool // by Start, still running
	// task is the real task Open laid out (Reset lays it out again).
	task   *env.Task
	shared []string // host files shown to contained commands (HostPath)
}

// Workspace is the workspace's path on this machine.
func (s *Sandbox) Workspace() string { return s.ws }

func (s *Sandbox) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Exec runs a command in the workspace, in its own process group (and
// namespaces, see Provider.Isolation), with the configured rlimits. On exit,
// timeout or cancellation its process group is killed; with a pid namespace
// every process it started dies with it.
func (s *Sandbox) Exec(ctx context.Context, opts env.ExecOptions) (env.ExecResult, error) {
	if err := checkOpts("exec", opts); err != nil {
		return env.ExecResult{}, err
	}
	s.ops.Lock()
	defer s.ops.Unlock()
	if s.isClosed() {
		return env.ExecResult{}, env.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return env.ExecResult{}, err
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = s.p.cfg.ExecTimeout
	}
	maxOut := opts.MaxOutput
	if maxOut <= 0 {
		maxOut = s.p.cfg.MaxOutput
	}
	start := time.Now()
	var res env.ExecResult
	pipes := execPipes{stdout: &capBuffer{max: maxOut}, stderr: &capBuffer{max: maxOut}}
	outR, outW, err1 := os.Pipe()
	errR, errW, err2 := os.Pipe()
	inR, inW, err3 := os.Pipe()
	if err := errors.Join(err1, err2, err3); err != nil {
		return res, env.Infra(fmt.Errorf("process: exec %s: %w", opts.Cmd[0], err))
	}
	pipes.outR, pipes.errR, pipes.inW = outR, errR, inW
	defer outR.Close()
	defer errR.Close()
	defer inW.Close()
	cmd, r, err := s.command(opts)
	if err != nil && !isLookup(err) {
		inR.Close()
		outW.Close()
		errW.Close()
		if s.isClosed() {
			return res, env.ErrClosed
		}
		return res, env.Infra(fmt.Errorf("process: exec %s: %w", opts.Cmd[0], err))
	}
	defer r.done()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	if err == nil {
		err = cmd.Start()
		r.started()
	}
	inR.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		return startFailure(err, start), nil
	}
	s.mu.Lock()
	s.running = cmd.Process
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.running = nil
		s.mu.Unlock()
	}()
	pid := cmd.Process.Pid
	if r == nil {
		s.p.setRlimits(pid)
	} else if err := r.limit(); err != nil {
		kill(pid)
		cmd.Wait()
		if s.isClosed() {
			return env.ExecResult{}, env.ErrClosed
		}
		return env.ExecResult{}, env.Infra(fmt.Errorf("process: exec %s: %w", opts.Cmd[0], err))
	}
	werr, timedOut, ctxErr := pipes.wait(ctx, cmd, timeout, opts.Stdin)
	if ctxErr != nil {
		return env.ExecResult{}, fmt.Errorf("process: exec %s: %w", opts.Cmd[0], ctxErr)
	}
	if s.isClosed() {
		return env.ExecResult{}, env.ErrClosed
	}
	if r != nil && !r.exited() && !timedOut {
		// bwrap said nothing of the command's exit: it could not set the
		// sandbox up (or died). The command's own output cannot fake this.
		return env.ExecResult{}, env.Infra(fmt.Errorf("process: exec %s: bwrap: exit %d: %s",
			opts.Cmd[0], exitCode(cmd.ProcessState, werr), firstLine(pipes.stderr.buf.Bytes())))
	}
	res.TimedOut = timedOut
	res.Stdout, res.Stderr = pipes.stdout.buf.Bytes(), pipes.stderr.buf.Bytes()
	res.Truncated = pipes.stdout.truncated || pipes.stderr.truncated
	res.ExitCode = exitCode(cmd.ProcessState, werr)
	res.Duration = time.Since(start)
	return res, nil
}

// startFailure is the result of a command that could not start: exit
// code 127 when it was not found, 126 otherwise, the error on its stderr.
func startFailure(err error, start time.Time) env.ExecResult {
	res := env.ExecResult{ExitCode: 126}
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
		res.ExitCode = 127
	}
	res.Stderr = []byte(err.Error() + "\n")
	res.Duration = time.Since(start)
	return res
}

// execPipes are the parent's ends of a command's standard streams and the
// buffers its output is copied into.
type execPipes struct {
	outR, errR, inW *os.File
	stdout, stderr  *capBuffer
}

// wait feeds the started cmd stdin, copies its output and waits for it to
// exit, killing its process group when timeout passes (timedOut) or ctx is
// cancelled (ctxErr, ctx's error), and again once it has exited. It then
// waits at most two seconds for the output pipes to drain. werr is
// cmd.Wait's error.
func (p execPipes) wait(ctx context.Context, cmd *exec.Cmd, timeout time.Duration, stdin []byte) (werr error, timedOut bool, ctxErr error) {
	pid := cmd.Process.Pid
	var copies sync.WaitGroup
	copies.Add(2)
	go func() { defer copies.Done(); io.Copy(p.stdout, p.outR) }()
	go func() { defer copies.Done(); io.Copy(p.stderr, p.errR) }()
	go func() {
		p.inW.Write(stdin)
		p.inW.Close()
	}()
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case werr = <-waited:
	case <-timer.C:
		timedOut = true
		kill(pid)
		werr = <-waited
	case <-ctx.Done():
		ctxErr = ctx.Err()
		kill(pid)
		werr = <-waited
	}
	kill(pid)
	copied := make(chan struct{})
	go func() { copies.Wait(); close(copied) }()
	select {
	case <-copied:
	case <-time.After(2 * time.Second):
		// A process that left the group holds a pipe: stop reading.
		p.outR.Close()
		p.errR.Close()
		<-copied
	}
	return werr, timedOut, ctxErr
}

// checkOpts refuses what no command can run as: an empty one, a directory
// outside the workspace (the agent's mistake, not an infrastructure fault).
func checkOpts(op string, opts env.ExecOptions) error {
	if len(opts.Cmd) == 0 {
		return fmt.Errorf("process: %s: empty command", op)
	}
	if opts.Dir != "" && !filepath.IsLocal(opts.Dir) {
		return fmt.Errorf("process: %s: directory %q is not in the workspace", op, opts.Dir)
	}
	return nil
}

// command is opts' command as Exec and Start run it: in the workspace (its
// Dir), with the sandbox's environment and opts.Env, contained or in the
// provider's namespaces. r is the contained run to finish with r.done once
// the command has exited (nil when uncontained: its methods do nothing).
// An error that isLookup is the lookup's (the command is not on the
// PATH): cmd is then still made, to fail at its start; any other is a
// fault of the machine.
func (s *Sandbox) command(opts env.ExecOptions) (cmd *exec.Cmd, r *run, err error) {
	name, err := lookPath(opts.Cmd[0], s.env)
	dir := filepath.Join(s.ws, opts.Dir)
	if s.p.c == nil || err != nil {
		cmd = exec.Command(name, opts.Cmd[1:]...)
		cmd.Dir = dir
		cmd.Env = slices.Concat(s.env, opts.Env)
		cmd.SysProcAttr = s.p.sysProcAttr(s.p.clone, s.p.maps)
		return cmd, nil, err
	}
	s.mu.Lock()
	shared := slices.Clone(s.shared)
	s.mu.Unlock()
	r, err = s.p.c.command(s.view, shared, s.layer, dir, s.env, opts.Env, append([]string{name}, opts.Cmd[1:]...), limits(s.p.cfg))
	if err != nil {
		return nil, nil, err
	}
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return r.cmd, r, nil
}

// isLookup says whether err is lookPath's: a command that is not there.
func isLookup(err error) bool { return errors.Is(err, exec.ErrNotFound) }

// Start starts a command in the workspace as Exec runs one (its own process
// group and namespaces, the rlimits), with its standard output and error on
// one pipe that the caller reads. Close kills it.
func (s *Sandbox) Start(ctx context.Context, opts env.ExecOptions) (env.Process, error) {
	if err := checkOpts("start", opts); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.isClosed() {
		return nil, env.ErrClosed
	}
	cmd, r, err := s.command(opts)
	if isLookup(err) {
		return nil, fmt.Errorf("process: start: %w", err)
	}
	if err != nil {
		if s.isClosed() {
			return nil, env.ErrClosed
		}
		return nil, env.Infra(fmt.Errorf("process: start %s: %w", opts.Cmd[0], err))
	}
	outR, outW, err1 := os.Pipe()
	inR, inW, err2 := os.Pipe()
	if err := errors.Join(err1, err2); err != nil {
		for _, f := range []*os.File{outR, outW, inR, inW} {
			if f != nil {
				f.Close()
			}
		}
		r.done()
		return nil, env.Infra(fmt.Errorf("process: start %s: %w", opts.Cmd[0], err))
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, outW
	var p *proc
	s.mu.Lock() // Close kills what is in started: none may start after it
	if s.closed {
		err = env.ErrClosed
	} else if err = cmd.Start(); err == nil {
		p = &proc{pid: cmd.Process.Pid, stdin: inW, stdout: outR, done: make(chan struct{})}
		if s.started == nil {
			s.started = map[*proc]bool{}
		}
		s.started[p] = true
	}
	s.mu.Unlock()
	r.started()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		r.done()
		if errors.Is(err, env.ErrClosed) {
			return nil, err
		}
		return nil, fmt.Errorf("process: start %s: %w", opts.Cmd[0], err)
	}
	if r == nil {
		s.p.setRlimits(p.pid)
	}
	go func() {
		werr := cmd.Wait()
		p.exit = exitCode(cmd.ProcessState, werr)
		kill(p.pid) // what it started dies with it, as after Exec
		r.done()
		s.mu.Lock()
		delete(s.started, p)
		s.mu.Unlock()
		inW.Close()
		close(p.done)
	}()
	if r != nil {
		if err := r.limit(); err != nil {
			p.Kill()
			<-p.done
			if s.isClosed() {
				return nil, env.ErrClosed
			}
			return nil, env.Infra(fmt.Errorf("process: start %s: %w", opts.Cmd[0], err))
		}
	}
	return p, nil
}

// proc is a command started by Start.
type proc struct {
	pid    int
	stdin  *os.File
	stdout *os.File
	done   chan struct{}
	exit   int
	killed sync.Once
}

func (p *proc) Stdin() io.Writer      { return p.stdin }
func (p *proc) Stdout() io.Reader     { return p.stdout }
func (p *proc) Done() <-chan struct{} { return p.done }
func (p *proc) ExitCode() int         { <-p.done; return p.exit }

// Kill kills the command's process group (unless it has been reaped: its
// pid may be another's by then) and, so that a reader blocked on a pipe
// another process of it still holds returns, closes the reading end.
func (p *proc) Kill() {
	p.killed.Do(func() {
		select {
		case <-p.done:
		default:
			kill(p.pid)
		}
		p.stdout.Close()
	})
}

// lookPath finds name on the PATH the command will have.
func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			for _, d := range filepath.SplitList(v) {
				p := filepath.Join(d, name)
				if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
					return p, nil
				}
			}
		}
	}
	return "", fmt.Errorf("%s: %w", name, exec.ErrNotFound)
}

func (p *Provider) setRlimits(pid int) {
	set := func(res int, v int64) {
		if v > 0 {
			lim := unix.Rlimit{Cur: uint64(v), Max: uint64(v)}
			if err := unix.Prlimit(pid, res, &lim, nil); err != nil {
				p.log.Debug().Err(err).Int("resource", res).Msg("prlimit failed")
			}
		}
	}
	set(unix.RLIMIT_AS, p.cfg.AddressSpace)
	set(unix.RLIMIT_FSIZE, p.cfg.FileSize)
	set(unix.RLIMIT_CPU, p.cfg.CPUSeconds)
	set(unix.RLIMIT_NOFILE, p.cfg.OpenFiles)
}

// kill kills the command's process group and the command itself, which,
// when it is the init of a pid namespace, takes every process in it along.
func kill(pid int) {
	syscall.Kill(-pid, syscall.SIGKILL)
	syscall.Kill(pid, syscall.SIGKILL)
}

func exitCode(ps *os.ProcessState, err error) int {
	if ps == nil {
		if err != nil {
			return 126
		}
		return 0
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// capBuffer keeps the first max bytes written to it.
type capBuffer struct {
	buf       bytes.Buffer
	max       int
	truncated bool
}

func (c *capBuffer) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); room < len(p) {
		c.truncated = true
		if room > 0 {
			c.buf.Write(p[:room])
		}
		return len(p), nil
	}
	return c.buf.Write(p)
}

// rel maps a path to one relative to the workspace, refusing what leaves it;
// os.Root then refuses symbolic links that leave it.
func (s *Sandbox) rel(name string) (string, error) {
	if name == "" {
		return "", errors.New("empty path")
	}
	c := path.Clean(filepath.ToSlash(name))
	if path.IsAbs(c) {
		r, ok := strings.CutPrefix(c, filepath.ToSlash(s.ws))
		if !ok || (r != "" && r[0] != '/') {
			return "", fmt.Errorf("path %q is outside the workspace", name)
		}
		c = strings.TrimPrefix(r, "/")
		if c == "" {
			c = "."
		}
	}
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("path %q is outside the workspace", name)
	}
	return c, nil
}

// ReadFile reads a workspace file. Errors of the file system (a missing
// file, a refused path) are the agent's, not faults.
func (s *Sandbox) ReadFile(ctx context.Context, name string) (data []byte, err error) {
	err = s.fileOp(ctx, name, func(p string) (err error) {
		data, err = s.root.ReadFile(p)
		return err
	})
	return data, err
}

// WriteFile replaces or creates a workspace file and its directories.
func (s *Sandbox) WriteFile(ctx context.Context, name string, data []byte) error {
	return s.fileOp(ctx, name, func(p string) error {
		if d := path.Dir(p); d != "." {
			if err := s.root.MkdirAll(d, 0o755); err != nil {
				return err
			}
		}
		// Replace rather than write in place: the file may be a hard link
		// to a task's template.
		if err := s.root.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if err := s.root.WriteFile(p, data, 0o644); err != nil {
			return err
		}
		return s.own(p)
	})
}

// own gives workspace file p and the directories above it to the
// contained commands' user, where that is not frog's: the workspace is
// theirs to write, whoever made its files.
func (s *Sandbox) own(p string) error {
	c := s.p.c
	if c == nil || !c.chown {
		return nil
	}
	for ; p != "."; p = path.Dir(p) {
		if err := s.root.Lchown(p, c.uid, c.gid); err != nil {
			return err
		}
	}
	return nil
}

// Remove deletes a file of the workspace (env.Remover).
func (s *Sandbox) Remove(ctx context.Context, name string) error {
	return s.fileOp(ctx, name, func(p string) error { return s.root.Remove(p) })
}

// fileOp runs f on the workspace path of name, serialized with the
// sandbox's other calls, unless the name leaves the workspace, the sandbox
// is closed or ctx is done.
func (s *Sandbox) fileOp(ctx context.Context, name string, f func(p string) error) error {
	p, err := s.rel(name)
	if err != nil {
		return err
	}
	s.ops.Lock()
	defer s.ops.Unlock()
	if s.isClosed() {
		return env.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return f(p)
}

// HostPath says where the sandbox's commands see host file p (env.HostPaths):
// at its own path. Uncontained commands see every file; contained ones
// see what their view shows read-only, and, from now on, p itself when it
// is a regular file: the harness shares what it built this way, one file
// at a time, and the rest of the directory stays out of sight.
func (s *Sandbox) HostPath(p string) (string, bool) {
	if !filepath.IsAbs(p) {
		return "", false
	}
	if s.p.c == nil {
		return p, true
	}
	p = filepath.Clean(p)
	if s.view.visible(p) {
		return p, true
	}
	if under(p, s.dir) {
		return "", false
	}
	if st, err := os.Stat(p); err != nil || !st.Mode().IsRegular() {
		return "", false
	}
	s.mu.Lock()
	if !slices.Contains(s.shared, p) {
		s.shared = append(s.shared, p)
	}
	s.mu.Unlock()
	return p, true
}

// Close kills a running command and removes the sandbox's directory. It is
// idempotent.
func (s *Sandbox) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	if s.running != nil {
		kill(s.running.Pid)
	}
	for p := range s.started {
		kill(p.pid)
	}
	s.mu.Unlock()
	s.root.Close()
	s.p.closed.Add(1)
	if err := removeAll(s.dir); err != nil {
		return env.Infra(fmt.Errorf("process: close: %w", err))
	}
	return nil
}

// Reset ends every command the sandbox has running (a try server, a
// process a test left) and lays the task's template out again in the
// emptied workspace (env.Resetter).
func (s *Sandbox) Reset(ctx context.Context) error {
	s.ops.Lock()
	defer s.ops.Unlock()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return env.ErrClosed
	}
	if s.running != nil {
		kill(s.running.Pid)
	}
	for p := range s.started {
		kill(p.pid)
	}
	s.mu.Unlock()
	if s.task == nil {
		return env.ErrNoReset
	}
	ents, err := os.ReadDir(s.ws)
	if err != nil {
		return env.Infra(fmt.Errorf("process: reset: %w", err))
	}
	for _, e := range ents {
		if err := removeAll(filepath.Join(s.ws, e.Name())); err != nil {
			return env.Infra(fmt.Errorf("process: reset: %w", err))
		}
	}
	return s.p.layOut(ctx, s.task, s.ws)
}

// removeAll removes dir, first making read-only directories in it writable.
func removeAll(dir string) error {
	if os.RemoveAll(dir) == nil {
		return nil
	}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o755)
		}
		return nil
	})
	return os.RemoveAll(dir)
}
