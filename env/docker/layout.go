package docker

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/frognano/frog/env"
)

// Layout says what Open copied into a sandbox's workspace for a real task:
// the task, its template on the host, the regular files, directories and
// links copied, the files' bytes, and how long the agent's copy took (the
// round trip of its layout request).
type Layout struct {
	Task     string        `json:"task"`
	Template string        `json:"template"`
	Files    int           `json:"files"`
	Dirs     int           `json:"dirs"`
	Links    int           `json:"links"`
	Bytes    int64         `json:"bytes"`
	Duration time.Duration `json:"duration_ns"`
}

// Layout is what Open laid out in the sandbox's workspace; zero when the
// sandbox is not for a real task.
func (s *Sandbox) Layout() Layout { return s.laid }

// taskTemplate is a task's template: on the host, and under TasksDir.
type taskTemplate struct {
	task *env.Task
	host string
	rel  string
}

// template asks Config.Workspaces for task's template and finds it under
// the workspace root. Its errors name the task; Template's keep their
// category (see Open).
func (p *Provider) template(ctx context.Context, task *env.Task) (taskTemplate, error) {
	if p.cfg.Workspaces == nil {
		return taskTemplate{}, fmt.Errorf("docker: task %s is a real task (%d mutations) but the provider has no Workspaces to lay it out (Config.Workspaces): its sandbox would have an empty workspace", task.ID, len(task.Mutations))
	}
	dir, err := p.cfg.Workspaces.Template(ctx, task)
	if err != nil {
		return taskTemplate{}, fmt.Errorf("docker: lay out task %s: %w", task.ID, err)
	}
	rel, err := p.tasksRel(dir)
	if err != nil {
		return taskTemplate{}, fmt.Errorf("docker: lay out task %s: %w", task.ID, err)
	}
	return taskTemplate{task: task, host: dir, rel: rel}, nil
}

// SandboxPath is where sandboxes see host, a path under
// Config.WorkspaceRoot: the same path under TasksDir, which is read-only.
// A path outside the root (also once symbolic links are resolved) is an
// error naming both.
func (p *Provider) SandboxPath(host string) (string, error) {
	rel, err := p.tasksRel(host)
	if err != nil {
		return "", err
	}
	return path.Join(TasksDir, rel), nil
}

// tasksRel is host's slash path relative to the workspace root.
func (p *Provider) tasksRel(host string) (string, error) {
	root := p.cfg.WorkspaceRoot
	if root == "" {
		return "", fmt.Errorf("docker: %s: sandboxes see no host directory (no Config.WorkspaceRoot)", host)
	}
	abs, err := filepath.Abs(host)
	if err != nil {
		return "", fmt.Errorf("docker: %s: %w", host, err)
	}
	if rel, ok := under(root, abs); ok {
		return filepath.ToSlash(rel), nil
	}
	// The root, or the path, may be named through a link: the daemon
	// mounts what the root resolves to.
	rroot, err1 := filepath.EvalSymlinks(root)
	rabs, err2 := filepath.EvalSymlinks(abs)
	if err := errors.Join(err1, err2); err == nil {
		if rel, ok := under(rroot, rabs); ok {
			return filepath.ToSlash(rel), nil
		}
	}
	return "", fmt.Errorf("docker: template %s is not under the workspace root %s, which is all that sandboxes see of the host", host, root)
}

// under is p relative to root when p is root or lies under it, lexically.
func under(root, p string) (string, bool) {
	rel, err := filepath.Rel(root, p)
	if err != nil || !filepath.IsLocal(rel) && rel != "." {
		return "", false
	}
	return rel, true
}

// checkRoot fails unless cfg's workspace root, if any, is a directory that
// the sandbox user may list and enter, by its mode bits (a directory made
// by os.MkdirTemp is not: its mode is 0700).
func checkRoot(cfg Config) error {
	root := cfg.WorkspaceRoot
	if root == "" {
		return nil
	}
	fi, err := os.Stat(root)
	if err != nil {
		return fmt.Errorf("docker: config: workspace root: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("docker: config: workspace root %s is not a directory", root)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	u, g, _ := strings.Cut(cfg.User, ":")
	if g == "" {
		g = u
	}
	uid, err1 := strconv.Atoi(u)
	gid, err2 := strconv.Atoi(g)
	if !ok || err1 != nil {
		return nil
	}
	need := fs.FileMode(0o005)
	switch {
	case int(st.Uid) == uid:
		need = 0o500
	case err2 == nil && int(st.Gid) == gid:
		need = 0o050
	}
	if fi.Mode().Perm()&need != need {
		return fmt.Errorf("docker: config: workspace root %s (mode %04o, owner %d:%d) is not readable by the sandbox user %s", root, fi.Mode().Perm(), st.Uid, st.Gid, cfg.User)
	}
	return nil
}

// layout has the agent copy t's template into the workspace, which is
// empty (the container is fresh). A refusal of the template's content is
// the template's fault, not wrapped in env.ErrInfra; anything else that
// goes wrong in the copy is a fault of the sandbox or the machine.
func (s *Sandbox) layout(ctx context.Context, t taskTemplate) error {
	start := time.Now()
	resp, err := s.call(ctx, &request{Op: "layout", Path: t.rel}, s.p.cfg.StartTimeout, "lay out task "+t.task.ID)
	if err != nil {
		return err
	}
	if resp.Err != "" {
		err := fmt.Errorf("docker: lay out task %s from %s in %s: %s", t.task.ID, t.host, s.name, resp.Err)
		switch resp.ErrKind {
		case "content", "path":
			return err
		case "proto":
			s.p.fault("layout")
			return env.Infra(fmt.Errorf("%w (an image whose agent predates layout: rebuild it)", err))
		default:
			s.p.fault("layout")
			return env.Infra(err)
		}
	}
	s.tmpl = t
	s.laid = Layout{Task: t.task.ID, Template: t.host, Files: resp.Files, Dirs: resp.Dirs, Links: resp.Links,
		Bytes: resp.Bytes, Duration: time.Since(start)}
	return nil
}
