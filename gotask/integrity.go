package gotask

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
)

// A template (and a fetched module's copy, which a template's unchanged
// files are hard links to) is checked against what it held when it was
// made before it is handed out: its marker file (readyFile) records the
// SHA-256 of every file, and Workspaces.Template walks the tree, hashing
// again each file whose inode, size or change time differs from when this
// process last saw it whole (a write changes the change time, and nobody
// but the kernel can set it back). A template that differs is made again
// from the module; one made before frog recorded hashes (an empty marker)
// too. A module copy that differs is fetched again. So a file changed under
// frog (by an uncontained sandbox's command, say: docs/sandboxes.md) is
// never laid out into a workspace or read back by a verdict, in this run
// or a later one. The check cache is keyed by the template's hash
// (TemplateHash).

// readyFile marks a template or module copy as whole; it holds its
// treeSum.
const readyFile = ".frog-ready"

// ErrModified says that a template or module copy differs from what it
// held when it was made.
var ErrModified = errors.New("changed since it was made")

// treeSum is what a tree held when it was made: every regular file's
// SHA-256 (hex) by slash-separated path, and the hash of them all.
type treeSum struct {
	Hash  string            `json:"sha256"`
	Files map[string]string `json:"files"`
}

// sumTree hashes the regular files under dir (not readyFile), as made.
func sumTree(dir string) (treeSum, error) {
	s := treeSum{Files: map[string]string{}}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !d.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == readyFile {
			return err
		}
		h, err := hashFile(p)
		s.Files[filepath.ToSlash(rel)] = h
		return err
	})
	if err != nil {
		return treeSum{}, err
	}
	s.Hash = s.sum()
	return s, nil
}

// sum is the hash of the files' hashes, in path order.
func (s treeSum) sum() string {
	d := sha256.New()
	for _, p := range slices.Sorted(maps.Keys(s.Files)) {
		fmt.Fprintf(d, "%s\x00%s\n", p, s.Files[p])
	}
	return hex.EncodeToString(d.Sum(nil))
}

func hashFile(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	d := sha256.New()
	if _, err := io.Copy(d, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(d.Sum(nil)), nil
}

// markReady writes dir's readyFile with its treeSum, the last thing a
// preparation does before it renames dir into place.
func markReady(dir string) error {
	s, err := sumTree(dir)
	if err != nil {
		return err
	}
	data, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, readyFile), data, 0o444)
}

// stamp is what a file's inode says of it: any write changes it.
type stamp struct {
	ino, size, ctimeSec, ctimeNsec int64
}

func stampOf(fi fs.FileInfo) (stamp, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return stamp{}, false
	}
	return stamp{int64(st.Ino), st.Size, st.Ctim.Sec, st.Ctim.Nsec}, true
}

// checker checks trees against their sums. The sum of a tree is read from
// its readyFile once a process and kept: a marker rewritten later does not
// change what the tree is checked against. Safe for concurrent use.
type checker struct {
	mu    sync.Mutex
	trees map[string]*checked // by directory
}

type checked struct {
	mu     sync.Mutex // one check of the tree at a time
	sum    treeSum
	stamps map[string]stamp // of the files as last found whole
}

// forget drops what the checker knows of dir (it is being made again).
func (c *checker) forget(dir string) {
	c.mu.Lock()
	delete(c.trees, dir)
	c.mu.Unlock()
}

// check returns dir's hash when every regular file under it is what its
// sum says and no other is there; otherwise an error wrapping ErrModified
// that names what differs, or the file system's error. A tree without a
// sum (made before frog kept them) is an error wrapping ErrModified too.
func (c *checker) check(dir string) (string, error) {
	c.mu.Lock()
	if c.trees == nil {
		c.trees = map[string]*checked{}
	}
	t := c.trees[dir]
	if t == nil {
		t = &checked{}
		c.trees[dir] = t
	}
	c.mu.Unlock()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.sum.Files == nil {
		data, err := os.ReadFile(filepath.Join(dir, readyFile))
		if err != nil {
			return "", err
		}
		var s treeSum
		if json.Unmarshal(data, &s) != nil || s.Files == nil || s.sum() != s.Hash {
			return "", fmt.Errorf("%w: %s records no hash of its files (made by an older frog)", ErrModified, dir)
		}
		t.sum, t.stamps = s, map[string]stamp{}
	}
	seen := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		switch {
		case d.IsDir():
			return nil
		case rel == readyFile:
			return nil
		case !d.Type().IsRegular():
			return fmt.Errorf("%w: %s is not a regular file", ErrModified, rel)
		}
		want, ok := t.sum.Files[rel]
		if !ok {
			return fmt.Errorf("%w: %s was added", ErrModified, rel)
		}
		seen++
		fi, err := d.Info()
		if err != nil {
			return err
		}
		st, ok := stampOf(fi)
		if ok && t.stamps[rel] == st {
			return nil
		}
		got, err := hashFile(p)
		if err != nil {
			return err
		}
		if got != want {
			delete(t.stamps, rel)
			return fmt.Errorf("%w: %s was written", ErrModified, rel)
		}
		if ok {
			t.stamps[rel] = st
		}
		return nil
	})
	if err == nil && seen != len(t.sum.Files) {
		var gone []string
		for rel := range t.sum.Files {
			if _, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(rel))); err != nil {
				gone = append(gone, rel)
			}
		}
		slices.Sort(gone)
		err = fmt.Errorf("%w: %s removed", ErrModified, strings.Join(gone, ", "))
	}
	if err != nil {
		return "", fmt.Errorf("%s: %w", dir, err)
	}
	return t.sum.Hash, nil
}
