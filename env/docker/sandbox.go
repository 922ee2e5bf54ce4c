package docker

import (
	"context"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/docker/docker/api/types/container"

	"github.com/frognano/frog/env"
)

// Sandbox is one container and the agent inside it. Exec, ReadFile,
// WriteFile and Remove are serialized (a Sandbox belongs to one episode);
// Close may be called from any goroutine, also during a call, which then
// fails with env.ErrClosed.
type Sandbox struct {
	p    *Provider
	id   string
	name string
	conn *agentConn
	// ops serializes the episode's calls: the agent runs one command at a
	// time anyway, and a cancelled command must be gone before the next.
	ops    sync.Mutex
	closed atomic.Bool
	laid   Layout       // what Open laid out, before the episode had it
	tmpl   taskTemplate // the template laid out (Reset lays it out again)
	// uses counts the episodes the container has served, this one
	// included (Config.Reuse); lent is the pool it is to go back to (nil:
	// none).
	uses int
	lent *pool
}

var (
	_ env.HostPaths = (*Sandbox)(nil)
	_ env.Sandbox   = (*Sandbox)(nil)
	_ env.Remover   = (*Sandbox)(nil)
	_ env.Resetter  = (*Sandbox)(nil)
)

// Reset has the agent end every process but itself and empty the
// workspace, /tmp and /dev/shm (as between two episodes of a container),
// then lays the task's template out again (env.Resetter).
func (s *Sandbox) Reset(ctx context.Context) error {
	if s.tmpl.task == nil {
		return env.ErrNoReset
	}
	resp, err := s.call(ctx, &request{Op: "reset"}, s.p.cfg.CloseTimeout, "reset")
	if err != nil {
		return err
	}
	if resp.Err != "" {
		s.p.fault("reset")
		return env.Infra(fmt.Errorf("docker: reset %s: %s", s.name, resp.Err))
	}
	return s.layout(ctx, s.tmpl)
}

// ID is the container's ID.
func (s *Sandbox) ID() string { return s.id }

// Name is the container's name.
func (s *Sandbox) Name() string { return s.name }

// Exec runs opts.Cmd through the agent: in the workspace, in its own process
// group, with the container's environment. When the command exits, times out
// or ctx is cancelled, every process it started is killed.
func (s *Sandbox) Exec(ctx context.Context, opts env.ExecOptions) (env.ExecResult, error) {
	if len(opts.Cmd) == 0 {
		return env.ExecResult{}, errors.New("docker: exec: empty command")
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = s.p.cfg.ExecTimeout
	}
	maxOut := opts.MaxOutput
	if maxOut <= 0 {
		maxOut = s.p.cfg.MaxOutput
	}
	if opts.Dir != "" && !filepath.IsLocal(opts.Dir) {
		return env.ExecResult{}, fmt.Errorf("docker: exec: directory %q is not in the workspace", opts.Dir)
	}
	req := &request{Op: "exec", Cmd: opts.Cmd, Dir: opts.Dir, Env: opts.Env, Stdin: opts.Stdin, TimeoutMS: max(timeout.Milliseconds(), 1), MaxOutput: maxOut}
	resp, err := s.call(ctx, req, timeout+s.p.cfg.AgentGrace, "exec "+opts.Cmd[0])
	if err != nil {
		return env.ExecResult{}, err
	}
	if resp.Err != "" {
		return env.ExecResult{}, fmt.Errorf("docker: exec %s: %s", opts.Cmd[0], resp.Err)
	}
	return env.ExecResult{
		ExitCode:  resp.ExitCode,
		Stdout:    resp.Stdout,
		Stderr:    resp.Stderr,
		TimedOut:  resp.TimedOut,
		OOMKilled: resp.OOMKilled,
		Truncated: resp.Truncated,
		Duration:  time.Duration(resp.DurNS),
	}, nil
}

// ReadFile reads a file of the workspace. Paths are relative to it (or
// absolute under /workspace); one that leaves it, also through a symbolic
// link, is refused with an error that does not wrap env.ErrInfra.
func (s *Sandbox) ReadFile(ctx context.Context, name string) ([]byte, error) {
	if err := checkPath(name); err != nil {
		return nil, err
	}
	resp, err := s.call(ctx, &request{Op: "read", Path: name}, s.p.cfg.AgentGrace, "read "+name)
	if err != nil {
		return nil, err
	}
	if resp.Err != "" {
		return nil, fmt.Errorf("read %s: %s", name, resp.Err)
	}
	return resp.Data, nil
}

// WriteFile replaces or creates a file of the workspace, and the directories
// above it. Paths are confined as for ReadFile.
func (s *Sandbox) WriteFile(ctx context.Context, name string, data []byte) error {
	if err := checkPath(name); err != nil {
		return err
	}
	resp, err := s.call(ctx, &request{Op: "write", Path: name, Data: data}, s.p.cfg.AgentGrace, "write "+name)
	if err != nil {
		return err
	}
	if resp.Err != "" {
		return fmt.Errorf("write %s: %s", name, resp.Err)
	}
	return nil
}

// HostPath is where the sandbox's commands see host file p: under the
// provider's WorkspaceRoot, mounted read-only (env.HostPaths).
func (s *Sandbox) HostPath(p string) (string, bool) {
	sp, err := s.p.SandboxPath(p)
	return sp, err == nil
}

// Remove deletes a file or a symbolic link of the workspace (env.Remover)
// as rm -f does: one that does not exist is no error; a directory is
// refused. Paths are confined as for ReadFile.
func (s *Sandbox) Remove(ctx context.Context, name string) error {
	if err := checkPath(name); err != nil {
		return err
	}
	resp, err := s.call(ctx, &request{Op: "remove", Path: name}, s.p.cfg.AgentGrace, "remove "+name)
	if err != nil {
		return err
	}
	if resp.Err != "" {
		return fmt.Errorf("remove %s: %s", name, resp.Err)
	}
	return nil
}

// call runs one request and sorts its failure: ctx's own error as is, the
// rest as faults of the sandbox (env.ErrInfra).
func (s *Sandbox) call(ctx context.Context, req *request, guard time.Duration, what string) (*response, error) {
	if s.closed.Load() {
		return nil, env.ErrClosed
	}
	s.ops.Lock()
	defer s.ops.Unlock()
	resp, err := s.conn.call(ctx, req, guard)
	if err == nil {
		return resp, nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil && errors.Is(err, ctxErr) {
		return nil, fmt.Errorf("docker: %s in %s: %w", what, s.name, err)
	}
	if s.closed.Load() {
		return nil, env.ErrClosed
	}
	s.p.fault("agent")
	return nil, env.Infra(fmt.Errorf("docker: %s in %s: %w%s", what, s.name, err, s.diagnose(ctx)))
}

// diagnose says why a container's agent stopped answering, from the daemon's
// view of the container.
func (s *Sandbox) diagnose(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	info, err := s.p.api.ContainerInspect(ctx, s.id)
	var b strings.Builder
	switch {
	case err != nil:
		fmt.Fprintf(&b, " (inspect: %v)", err)
	case info.State != nil:
		fmt.Fprintf(&b, " (container %s, exit code %d", info.State.Status, info.State.ExitCode)
		if info.State.OOMKilled {
			b.WriteString(", OOM killed")
		}
		b.WriteString(")")
	}
	if t := strings.TrimSpace(s.conn.stderr.String()); t != "" {
		fmt.Fprintf(&b, "; agent stderr: %s", t)
	}
	return b.String()
}

// Close ends the episode's hold on the container: it goes back to the warm
// pool, reset, when Config.Reuse allows (see recycle), and is
// force-removed otherwise. Either way this Sandbox is done: its calls fail
// with env.ErrClosed. Close is idempotent, and it works on a cancelled
// ctx: the reset and the removal run under a detached context bounded by
// the configured CloseTimeout.
func (s *Sandbox) Close(ctx context.Context) error {
	if !s.closed.CompareAndSwap(false, true) {
		return nil
	}
	if pl := s.lent; pl != nil {
		defer pl.back()
	}
	if s.recycle(ctx) {
		s.p.release(s)
		return nil
	}
	s.conn.close()
	err := s.p.remove(ctx, s.id)
	s.p.release(s)
	return err
}

// recycle resets the container and hands it to the pool for another
// episode, as a new Sandbox, and says whether it did. It does not when the
// container has served Config.Reuse episodes, a call of this one is still
// running (Close came during it), the agent died or failed to reset, the
// pool is full or the provider is closing.
func (s *Sandbox) recycle(ctx context.Context) bool {
	p := s.p
	pl := s.lent
	if pl == nil || !pl.wants() || !s.ops.TryLock() {
		return false
	}
	defer s.ops.Unlock()
	select {
	case <-s.conn.dead:
		return false
	default:
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.cfg.CloseTimeout)
	defer cancel()
	resp, err := s.conn.call(rctx, &request{Op: "reset"}, p.cfg.CloseTimeout)
	if err != nil || resp.Err != "" {
		if err == nil {
			err = errors.New(resp.Err)
		}
		p.log.Debug().Err(err).Str("container", s.name).Msg("reset for reuse failed; removing the container")
		return false
	}
	return pl.put(&Sandbox{p: p, id: s.id, name: s.name, conn: s.conn, uses: s.uses + 1})
}

func checkPath(name string) error {
	if name == "" {
		return errors.New("empty path")
	}
	c := path.Clean(name)
	if path.IsAbs(c) {
		if c != Workspace && !strings.HasPrefix(c, Workspace+"/") {
			return fmt.Errorf("path %q is outside the workspace", name)
		}
		return nil
	}
	if c == ".." || strings.HasPrefix(c, "../") {
		return fmt.Errorf("path %q is outside the workspace", name)
	}
	return nil
}

// remove force-removes a container under a detached, bounded context.
func (p *Provider) remove(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.cfg.CloseTimeout)
	defer cancel()
	err := p.api.ContainerRemove(ctx, id, container.RemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil && !isGone(err) {
		p.fault("remove")
		return infra(err, "remove container %.12s", id)
	}
	return nil
}
