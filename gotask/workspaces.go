package gotask

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/rs/zerolog"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/synth"
	"github.com/frognano/frog/synth/source"
)

// Workspaces lays out tasks' workspaces on this machine (env.Workspaces):
// each task's module is fetched once per version into Root/modules (as
// Fetch does: the module cache's copy, made buildable offline), and each
// task gets Root/tasks/<id>: the module with the task's mutations applied.
// Unchanged files are hard links to the module's copy (a task costs the
// size of its mutated files); mutated files are files of their own. Nothing
// is written into a template after it is made: providers copy it into their
// sandboxes. A template is made under a temporary name and renamed, so a
// crash never leaves half of one. Templates and module copies are checked
// against the hashes recorded when they were made before they are handed
// out, and made again where they differ (integrity.go). Safe for concurrent
// use; concurrent calls for one task or module wait for one preparation.
type Workspaces struct {
	root string
	log  zerolog.Logger
	sums checker

	mu      sync.Mutex
	locals  map[string]string // module path -> local directory
	flights map[string]*flight
	// hashes are the trees' hashes as this process first had them, by
	// once's key; remakes serialize making a tree again once it differs,
	// by key (a template's remaking may remake its module's).
	hashes  map[string]string
	remakes map[string]*sync.Mutex
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
func (w *Workspaces) AddLocal(m source.Module) {
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

// checkedOnce is once for a tree that records its hashes (integrity.go):
// the tree f made (or found) is checked against them, and against the hash
// the tree had when this process first had it, and made again, once,
// where it differs, with a warning naming what differed. It returns the
// tree and its hash. A tree that differs again once made (its source
// changed: a local module's file written in place through a template's
// link) is removed and is an error wrapping ErrModified; a file system's
// fault wraps env.ErrInfra.
func (w *Workspaces) checkedOnce(ctx context.Context, what, name string, f func() (string, error)) (string, string, error) {
	key := what + "\x00" + name
	dir, err := w.once(ctx, key, f)
	if err != nil {
		return "", "", err
	}
	hash, err := w.check(key, dir)
	if err == nil {
		return dir, hash, nil
	}
	if !errors.Is(err, ErrModified) {
		return "", "", env.Infra(err)
	}
	unlock := w.remaking(key)
	defer unlock()
	if hash, err := w.check(key, dir); err == nil {
		return dir, hash, nil // made again meanwhile
	}
	w.log.Warn().Str(what, name).Err(err).Msg("made again: it is not what it was when it was made")
	drop := func() error {
		w.mu.Lock()
		delete(w.flights, key)
		w.mu.Unlock()
		w.sums.forget(dir)
		return os.RemoveAll(dir)
	}
	if err := drop(); err != nil {
		return "", "", env.Infra(err)
	}
	if dir, err = w.once(ctx, key, f); err != nil {
		return "", "", err
	}
	if hash, err = w.check(key, dir); err != nil {
		drop()
		if errors.Is(err, ErrModified) {
			return "", "", fmt.Errorf("%s %s, made again, still differs: %w", what, name, err)
		}
		return "", "", env.Infra(err)
	}
	return dir, hash, nil
}

// remaking locks key's remaking and returns its unlock.
func (w *Workspaces) remaking(key string) func() {
	w.mu.Lock()
	if w.remakes == nil {
		w.remakes = map[string]*sync.Mutex{}
	}
	m := w.remakes[key]
	if m == nil {
		m = &sync.Mutex{}
		w.remakes[key] = m
	}
	w.mu.Unlock()
	m.Lock()
	return m.Unlock
}

// check checks tree dir of key against its recorded hashes and the hash
// it had when this process first found it whole.
func (w *Workspaces) check(key, dir string) (string, error) {
	hash, err := w.sums.check(dir)
	if err != nil {
		return "", err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.hashes == nil {
		w.hashes = map[string]string{}
	}
	if first, ok := w.hashes[key]; ok && first != hash {
		return "", fmt.Errorf("%s: %w: its hash is %.12s, it was %.12s", dir, ErrModified, hash, first)
	}
	w.hashes[key] = hash
	return hash, nil
}

// ModuleDir returns this machine's copy of the task's module as it was
// before the bug: fetched (once) for a version, and checked against the
// hashes recorded then, or a registered local one (the user's, as is).
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
	dir, _, err := w.checkedOnce(ctx, "module", spec, func() (string, error) {
		dst := filepath.Join(w.root, "modules", escape(spec))
		if _, err := os.Stat(filepath.Join(dst, readyFile)); err == nil {
			return dst, nil
		}
		work, err := os.MkdirTemp(filepath.Join(w.root), ".fetch-")
		if err != nil {
			return "", env.Infra(err)
		}
		defer os.RemoveAll(work)
		m, err := source.Fetch(ctx, spec, work)
		if err != nil {
			return "", fmt.Errorf("task %s: %w", t.ID, err)
		}
		if err := markReady(m.Dir); err != nil {
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
	return dir, err
}

// Template returns task t's workspace template, making it on first use,
// once it has checked that the template holds what it held when it was
// made (made again where it does not).
func (w *Workspaces) Template(ctx context.Context, t *env.Task) (string, error) {
	dir, _, err := w.template(ctx, t)
	return dir, err
}

// TemplateHash returns the hash of task t's template, checked as Template
// checks it: the hash of every file's SHA-256, which names the task's
// starting tree by its content. Caches of what a task's template gave (the
// check's) are keyed by it.
func (w *Workspaces) TemplateHash(ctx context.Context, t *env.Task) (string, error) {
	_, hash, err := w.template(ctx, t)
	return hash, err
}

func (w *Workspaces) template(ctx context.Context, t *env.Task) (string, string, error) {
	if !t.Real() {
		return "", "", fmt.Errorf("task %s: no mutations: not a task of real code", t.ID)
	}
	return w.checkedOnce(ctx, "task", t.ID, func() (string, error) {
		dst := filepath.Join(w.root, "tasks", escape(t.ID))
		if _, err := os.Stat(filepath.Join(dst, readyFile)); err == nil {
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
		if err := markReady(tmp); err != nil {
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
		if !d.Type().IsRegular() || rel == readyFile {
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
