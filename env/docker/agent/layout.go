package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// layoutStats counts what a layout copied: regular files, directories
// (the template's root aside), symbolic links, and the files' bytes.
type layoutStats struct {
	files, dirs, links int
	bytes              int64
}

// refusal is a template entry the agent will not lay out: a file that is
// neither a regular file, a directory nor a symbolic link, or a link that is
// absolute or resolves outside the workspace. It is the template's fault,
// not the machine's (ErrKind "content").
type refusal struct{ path, why string }

func (e *refusal) Error() string { return fmt.Sprintf("template entry %s: %s", e.path, e.why) }

// layout copies a task's template, the directory req.Path under the tasks
// directory (mounted read-only), into the workspace, which must be empty.
// Both trees are opened as os.Root, so nothing is read through a link that
// leaves the template and nothing is written through one that leaves the
// workspace. On failure the workspace holds part of the copy: the host
// discards the container.
func (a *agent) layout(req *request) *response {
	if a.tasks == "" {
		return &response{ID: req.ID, Err: "no tasks directory (the agent runs without -tasks)", ErrKind: "fs"}
	}
	rel := path.Clean(req.Path)
	if req.Path == "" || !filepath.IsLocal(rel) && rel != "." {
		return &response{ID: req.ID, Err: fmt.Sprintf("template %q is not a path under the tasks directory", req.Path), ErrKind: "path"}
	}
	tasks, err := os.OpenRoot(a.tasks)
	if err != nil {
		return fsErr(req.ID, err)
	}
	defer tasks.Close()
	src, err := tasks.OpenRoot(rel)
	if err != nil {
		return fsErr(req.ID, err)
	}
	defer src.Close()
	if err := emptyDir(a.root); err != nil {
		return fsErr(req.ID, err)
	}
	st, err := copyTree(src, a.root)
	if err != nil {
		var r *refusal
		if errors.As(err, &r) {
			return &response{ID: req.ID, Err: err.Error(), ErrKind: "content"}
		}
		return fsErr(req.ID, err)
	}
	return &response{ID: req.ID, Files: st.files, Dirs: st.dirs, Links: st.links, Bytes: st.bytes}
}

// emptyDir fails unless the root directory of r holds nothing.
func emptyDir(r *os.Root) error {
	d, err := r.Open(".")
	if err != nil {
		return err
	}
	defer d.Close()
	names, err := d.Readdirnames(1)
	if len(names) > 0 {
		return fmt.Errorf("workspace is not empty (it holds %s)", names[0])
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// copyTree copies every entry under src into dst, where none exists yet:
// regular files with their content, directories, and symbolic links as
// links. Permission bits are kept, the owner's write bit (and for
// directories read and search) added: a template copied out of the module
// cache is read-only there, and the workspace is the agent's to edit.
// Set-id and sticky bits are dropped. A link must be relative, and once the
// tree is copied it must resolve inside dst (or not at all); anything else
// is a refusal.
func copyTree(src, dst *os.Root) (layoutStats, error) {
	var st layoutStats
	var links []string
	err := fs.WalkDir(src.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == "." {
			return nil
		}
		switch t := d.Type(); {
		case t.IsDir():
			info, err := d.Info()
			if err != nil {
				return err
			}
			mode := info.Mode().Perm() | 0o700
			if err := dst.Mkdir(p, mode); err != nil {
				return err
			}
			// Mkdir's mode passes through the umask.
			if err := dst.Chmod(p, mode); err != nil {
				return err
			}
			st.dirs++
		case t.IsRegular():
			n, err := copyFile(src, dst, p)
			if err != nil {
				return err
			}
			st.files++
			st.bytes += n
		case t&fs.ModeSymlink != 0:
			target, err := src.Readlink(p)
			if err != nil {
				return err
			}
			if filepath.IsAbs(target) {
				return &refusal{p, fmt.Sprintf("link to an absolute path (%s)", target)}
			}
			if err := dst.Symlink(target, p); err != nil {
				return err
			}
			links = append(links, p)
			st.links++
		default:
			return &refusal{p, fmt.Sprintf("not a regular file, directory or link (%v)", t)}
		}
		return nil
	})
	if err != nil {
		return st, err
	}
	// Links are checked once every entry exists: a link may point to
	// another link, and only the whole chain says where it ends.
	for _, p := range links {
		if _, err := dst.Stat(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			if isEscape(err) {
				return st, &refusal{p, "link resolves outside the workspace"}
			}
			return st, &refusal{p, fmt.Sprintf("link does not resolve: %v", err)}
		}
	}
	return st, nil
}

// copyFile copies the regular file p of src to a new file p of dst and
// returns its size.
func copyFile(src, dst *os.Root, p string) (int64, error) {
	in, err := src.Open(p)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	info, err := in.Stat()
	if err != nil {
		return 0, err
	}
	if !info.Mode().IsRegular() {
		return 0, &refusal{p, "changed while it was copied"}
	}
	mode := info.Mode().Perm() | 0o200
	out, err := dst.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(out, in)
	if err == nil {
		// OpenFile's mode passes through the umask.
		err = out.Chmod(mode)
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return n, err
}

// isEscape reports whether err is os.Root's refusal of a path that leaves
// the root.
func isEscape(err error) bool {
	s := err.Error()
	return strings.Contains(s, "escapes from parent") || strings.Contains(s, "path escapes")
}
