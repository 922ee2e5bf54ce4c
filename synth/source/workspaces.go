package source

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/rs/zerolog"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/synth"
)

// Workspaces lays out tasks' workspaces on this machine (env.Workspaces):
// each task's module is fetched once per version into Root/modules (as
// Fetch does: the module cache's copy, made buildable offline), and each
// task gets Root/tasks/<id>: the module with the task's mutations applied.
// Unchanged files are hard links to the module's copy (a task costs the
// size of its mutated files); mutated files are files of their own. Nothing
// is written into a template after it is made: providers copy it into their
// sandboxes. A template is made under a temporary name and renamed, so a
// crash never leaves half of one. Safe for concurrent use; concurrent calls
// for one task or module wait for one preparation.
type Workspaces struct {
	root string
	log  zerolog.Logger

	mu      sync.Mutex
	locals  map[string]string // module path -> local directory
	flights map[string]*flight
}

type flight struct {
	done chan struct{}
	dir  string
	err  error
}

var _ env.Workspaces = (*Workspaces)(nil)

// DefaultWorkspaceRoot is where templates live unless told otherwise:
// $XDG_CACHE_HOME/frog/workspaces (or the user's cache directory).
func DefaultWorkspaceRoot() string {
	d, err := os.UserCacheDir()
	if err != nil {
		d = os.TempDir()
	}
	return filepath.Join(d, "frog", "workspaces")
}

// NewWorkspaces keeps templates under root.
func NewWorkspaces(root string, log zerolog.Logger) (*Workspaces, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(abs, "tasks"), 0o755); err != nil {
		return nil, env.Infra(fmt.Errorf("workspaces: %w", err))
	}
	return &Workspaces{root: abs, log: log.With().Str("component", "workspaces").Logger(),
		locals: map[string]string{}, flights: map[string]*flight{}}, nil
}

// Root is the directory every template is under.
func (w *Workspaces) Root() string { return w.root }

// AddLocal registers a module that has no version to fetch (a local
// directory, a git clone): tasks of module m.Path are laid out from m.Dir.
func (w *Workspaces) AddLocal(m Module) {
	w.mu.Lock()
	w.locals[m.Path] = m.Dir
	w.mu.Unlock()
}

// once runs f for key once at a time: concurrent callers wait for its
// result; a failed preparation is tried again by the next caller.
func (w *Workspaces) once(ctx context.Context, key string, f func() (string, error)) (string, error) {
	w.mu.Lock()
	if fl, ok := w.flights[key]; ok {
		w.mu.Unlock()
		select {
		case <-fl.done:
			if fl.err == nil {
				return fl.dir, nil
			}
			return w.once(ctx, key, f)
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	fl := &flight{done: make(chan struct{})}
	w.flights[key] = fl
	w.mu.Unlock()
	fl.dir, fl.err = f()
	if fl.err != nil {
		w.mu.Lock()
		delete(w.flights, key)
		w.mu.Unlock()
	}
	close(fl.done)
	return fl.dir, fl.err
}

// ModuleDir returns this machine's copy of the task's module as it was
// before the bug: fetched (once) for a version, or a registered local one.
func (w *Workspaces) ModuleDir(ctx context.Context, t *env.Task) (string, error) {
	w.mu.Lock()
	local, ok := w.locals[t.Repo]
	w.mu.Unlock()
	if ok {
		return local, nil
	}
	if t.Repo == "" || t.Version == "" {
		return "", fmt.Errorf("task %s: module %q has no version to fetch and no local directory (synthesize it with --source DIR in this run)", t.ID, t.Repo)
	}
	spec := t.Repo + "@" + t.Version
	return w.once(ctx, "module\x00"+spec, func() (string, error) {
		dst := filepath.Join(w.root, "modules", escape(spec))
		if _, err := os.Stat(filepath.Join(dst, ".frog-ready")); err == nil {
			return dst, nil
		}
		work, err := os.MkdirTemp(filepath.Join(w.root), ".fetch-")
		if err != nil {
			return "", env.Infra(err)
		}
		defer os.RemoveAll(work)
		m, err := Fetch(ctx, spec, work)
		if err != nil {
			return "", fmt.Errorf("task %s: %w", t.ID, err)
		}
		if err := os.WriteFile(filepath.Join(m.Dir, ".frog-ready"), nil, 0o644); err != nil {
			return "", env.Infra(err)
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return "", env.Infra(err)
		}
		os.RemoveAll(dst)
		if err := os.Rename(m.Dir, dst); err != nil {
			return "", env.Infra(err)
		}
		w.log.Debug().Str("module", spec).Str("dir", dst).Msg("module fetched")
		return dst, nil
	})
}

// Template returns task t's workspace template, making it on first use.
func (w *Workspaces) Template(ctx context.Context, t *env.Task) (string, error) {
	if !t.Real() {
		return "", fmt.Errorf("task %s: no mutations: not a task of real code", t.ID)
	}
	return w.once(ctx, "task\x00"+t.ID, func() (string, error) {
		dst := filepath.Join(w.root, "tasks", escape(t.ID))
		if _, err := os.Stat(filepath.Join(dst, ".frog-ready")); err == nil {
			return dst, nil
		}
		mod, err := w.ModuleDir(ctx, t)
		if err != nil {
			return "", err
		}
		bug, err := Mutated(mod, t)
		if err != nil {
			return "", err
		}
		tmp, err := os.MkdirTemp(filepath.Join(w.root, "tasks"), ".make-")
		if err != nil {
			return "", env.Infra(err)
		}
		defer os.RemoveAll(tmp)
		// Sandboxes run as another user (a container's) and must read it.
		if err := os.Chmod(tmp, 0o755); err != nil {
			return "", env.Infra(err)
		}
		if err := linkTree(mod, tmp, bug); err != nil {
			return "", env.Infra(fmt.Errorf("task %s: lay out: %w", t.ID, err))
		}
		if err := os.WriteFile(filepath.Join(tmp, ".frog-ready"), nil, 0o644); err != nil {
			return "", env.Infra(err)
		}
		os.RemoveAll(dst)
		if err := os.Rename(tmp, dst); err != nil {
			return "", env.Infra(err)
		}
		return dst, nil
	})
}

// Mutated returns the content of every file task t's mutations change, as
// the task has it, from the module's original files in dir. The mutations'
// paths must stay inside the module.
func Mutated(dir string, t *env.Task) (map[string][]byte, error) {
	edits := map[string][]synth.Edit{}
	for _, m := range t.Mutations {
		if err := synth.LocalPath(m.File); err != nil {
			return nil, fmt.Errorf("task %s: mutation of %s: %w", t.ID, m.File, err)
		}
		edits[m.File] = append(edits[m.File], m.Edits...)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, env.Infra(err)
	}
	defer root.Close()
	out := map[string][]byte{}
	for file, es := range edits {
		orig, err := root.ReadFile(filepath.FromSlash(file))
		if err != nil {
			return nil, fmt.Errorf("task %s: %w", t.ID, err)
		}
		mut, err := env.Splice(orig, es)
		if err != nil {
			return nil, fmt.Errorf("task %s: the mutations of %s do not apply to %s: %v", t.ID, file, t.Repo, err)
		}
		out[file] = mut
	}
	return out, nil
}

// Fixed returns the files of the task's gold fix: each file its patch
// touches, as the buggy workspace has it with the patch applied.
func (w *Workspaces) Fixed(ctx context.Context, t *env.Task) (map[string][]byte, error) {
	tmpl, err := w.Template(ctx, t)
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for file, p := range synth.SplitPatch(t.Patch) {
		if err := synth.LocalPath(file); err != nil {
			return nil, fmt.Errorf("task %s: patch of %s: %w", t.ID, file, err)
		}
		src, err := os.ReadFile(filepath.Join(tmpl, filepath.FromSlash(file)))
		if err != nil {
			return nil, fmt.Errorf("task %s: %w", t.ID, err)
		}
		fixed, err := synth.ApplyPatch(src, p)
		if err != nil {
			return nil, fmt.Errorf("task %s: the gold patch of %s does not apply: %v", t.ID, file, err)
		}
		out[file] = fixed
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("task %s: the gold patch touches no file", t.ID)
	}
	return out, nil
}

// linkTree makes dst a copy of src's regular files (not .git, not frog's
// own marker), hard-linked where possible, with the files of over written
// as files of their own.
func linkTree(src, dst string, over map[string][]byte) error {
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != src && d.Name() == ".git" {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if !d.Type().IsRegular() || rel == ".frog-ready" {
			return nil
		}
		if _, ok := over[filepath.ToSlash(rel)]; ok {
			return nil
		}
		target := filepath.Join(dst, rel)
		if err := os.Link(p, target); err == nil {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o444)
	})
	if err != nil {
		return err
	}
	for rel, data := range over {
		target := filepath.Join(dst, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(target, data, 0o444); err != nil {
			return err
		}
	}
	return nil
}

// escape makes a task id or module@version one safe directory name.
func escape(s string) string {
	r := strings.NewReplacer("/", "__", "@", "_at_", "\\", "_", ":", "_", "..", "_")
	out := r.Replace(s)
	if len(out) > 150 {
		h := sha256.Sum256([]byte(s))
		out = out[:100] + "-" + hex.EncodeToString(h[:8])
	}
	return out
}
