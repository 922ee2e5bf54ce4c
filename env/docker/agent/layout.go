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

	"golang.org/x/sys/unix"
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
//
// The copy works on directory descriptors, each entry opened relative to
// its parent's with O_NOFOLLOW, so that no link is followed on either side
// and no path is resolved twice: about seven system calls a file, where
// os.Root's path calls make four times as many.
func copyTree(src, dst *os.Root) (layoutStats, error) {
	var c copier
	s, err := src.Open(".")
	if err != nil {
		return c.st, err
	}
	defer s.Close()
	d, err := dst.Open(".")
	if err != nil {
		return c.st, err
	}
	defer d.Close()
	if err := c.dir(s, d, ""); err != nil {
		return c.st, err
	}
	// Links are checked once every entry exists: a link may point to
	// another link, and only the whole chain says where it ends. os.Root
	// resolves them as the kernel does, refusing any step out of dst.
	for _, p := range c.links {
		if _, err := dst.Stat(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			if isEscape(err) {
				return c.st, &refusal{p, "link resolves outside the workspace"}
			}
			return c.st, &refusal{p, fmt.Sprintf("link does not resolve: %v", err)}
		}
	}
	return c.st, nil
}

type copier struct {
	st    layoutStats
	links []string
	buf   []byte // for readlink
}

const openFlags = unix.O_NOFOLLOW | unix.O_CLOEXEC

// dir copies the entries of the directory src (at rel, "" for the root)
// into the directory dst.
func (c *copier) dir(src, dst *os.File, rel string) error {
	ents, err := src.ReadDir(-1)
	if err != nil {
		return err
	}
	sfd, dfd := int(src.Fd()), int(dst.Fd())
	for _, e := range ents {
		name := e.Name()
		p := path.Join(rel, name)
		pathErr := func(op string, err error) error { return &fs.PathError{Op: op, Path: p, Err: err} }
		switch t := e.Type(); {
		case t.IsDir():
			in, err := unix.Openat(sfd, name, unix.O_RDONLY|unix.O_DIRECTORY|openFlags, 0)
			if err != nil {
				return pathErr("open", err)
			}
			sub := os.NewFile(uintptr(in), p)
			var st unix.Stat_t
			if err := unix.Fstat(in, &st); err != nil {
				sub.Close()
				return pathErr("stat", err)
			}
			mode := st.Mode&0o777 | 0o700
			if err := unix.Mkdirat(dfd, name, mode); err != nil {
				sub.Close()
				return pathErr("mkdir", err)
			}
			out, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_DIRECTORY|openFlags, 0)
			if err != nil {
				sub.Close()
				return pathErr("open", err)
			}
			dsub := os.NewFile(uintptr(out), p)
			// Mkdirat's mode passes through the umask.
			err = unix.Fchmod(out, mode)
			if err == nil {
				c.st.dirs++
				err = c.dir(sub, dsub, p)
			} else {
				err = pathErr("chmod", err)
			}
			sub.Close()
			dsub.Close()
			if err != nil {
				return err
			}
		case t.IsRegular():
			n, err := copyFile(sfd, dfd, name)
			if err != nil {
				var r *refusal
				if errors.As(err, &r) {
					r.path = p
					return r
				}
				return pathErr("copy", err)
			}
			c.st.files++
			c.st.bytes += n
		case t&fs.ModeSymlink != 0:
			target, err := c.readlink(sfd, name)
			if err != nil {
				return pathErr("readlink", err)
			}
			if filepath.IsAbs(target) {
				return &refusal{p, fmt.Sprintf("link to an absolute path (%s)", target)}
			}
			if err := unix.Symlinkat(target, dfd, name); err != nil {
				return pathErr("symlink", err)
			}
			c.links = append(c.links, p)
			c.st.links++
		default:
			return &refusal{p, fmt.Sprintf("not a regular file, directory or link (%v)", t)}
		}
	}
	return nil
}

func (c *copier) readlink(dirfd int, name string) (string, error) {
	if c.buf == nil {
		c.buf = make([]byte, 4096)
	}
	n, err := unix.Readlinkat(dirfd, name, c.buf)
	if err != nil {
		return "", err
	}
	if n == len(c.buf) {
		return "", unix.ENAMETOOLONG
	}
	return string(c.buf[:n]), nil
}

// copyFile copies the regular file name of the directory sfd to a new file
// name of the directory dfd and returns its size.
func copyFile(sfd, dfd int, name string) (int64, error) {
	in, err := unix.Openat(sfd, name, unix.O_RDONLY|openFlags, 0)
	if err != nil {
		return 0, err
	}
	defer unix.Close(in)
	var st unix.Stat_t
	if err := unix.Fstat(in, &st); err != nil {
		return 0, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return 0, &refusal{name, "changed while it was copied"}
	}
	mode := st.Mode&0o777 | 0o200
	out, err := unix.Openat(dfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|openFlags, mode)
	if err != nil {
		return 0, err
	}
	n, err := copyData(out, in, st.Size)
	if err == nil {
		// Openat's mode passes through the umask.
		err = unix.Fchmod(out, mode)
	}
	if cerr := unix.Close(out); err == nil {
		err = cerr
	}
	return n, err
}

// copyData copies size bytes from in to out: with sendfile, in the kernel,
// else by reads and writes.
func copyData(out, in int, size int64) (int64, error) {
	var n int64
	for n < size {
		w, err := unix.Sendfile(out, in, nil, int(min(size-n, 1<<30)))
		if err == unix.EINTR || err == unix.EAGAIN {
			continue
		}
		if err == unix.EINVAL || err == unix.ENOSYS {
			m, err := readWrite(out, in, size-n)
			return n + m, err
		}
		if err != nil {
			return n, err
		}
		if w == 0 {
			break // the file shrank: what is there is copied
		}
		n += int64(w)
	}
	return n, nil
}

// readWrite copies up to size bytes from in to out by reads and writes.
func readWrite(out, in int, size int64) (int64, error) {
	buf := make([]byte, min(size, 1<<20))
	var n int64
	for n < size {
		r, err := unix.Read(in, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil || r == 0 {
			return n, err
		}
		for off := 0; off < r; {
			w, err := unix.Write(out, buf[off:r])
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				return n, err
			}
			off += w
			n += int64(w)
		}
	}
	return n, nil
}

// isEscape reports whether err is os.Root's refusal of a path that leaves
// the root.
func isEscape(err error) bool {
	s := err.Error()
	return strings.Contains(s, "escapes from parent") || strings.Contains(s, "path escapes")
}
