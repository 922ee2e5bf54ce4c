package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// entry is what a test expects of one path of a tree: its mode (type and
// permission bits), and its content or link target.
type entry struct {
	Mode fs.FileMode
	Data string
}

// listTree lists every entry under dir, by slash path.
func listTree(t *testing.T, dir string) map[string]entry {
	t.Helper()
	got := map[string]entry{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		e := entry{Mode: info.Mode() & (fs.ModeType | fs.ModePerm)}
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			e.Data, err = os.Readlink(p)
		case info.Mode().IsRegular():
			var b []byte
			b, err = os.ReadFile(p)
			e.Data = string(b)
		}
		got[filepath.ToSlash(rel)] = e
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// makeTree creates entries under dir: directories (mode with ModeDir)
// first, in path order, then files and links. Modes are set after
// everything is written, so that read-only directories can be filled.
func makeTree(t *testing.T, dir string, entries map[string]entry) {
	t.Helper()
	var dirs []string
	for p, e := range entries {
		if e.Mode.IsDir() {
			dirs = append(dirs, p)
		}
	}
	for _, p := range dirs {
		if err := os.MkdirAll(filepath.Join(dir, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for p, e := range entries {
		full := filepath.Join(dir, p)
		os.MkdirAll(filepath.Dir(full), 0o755)
		switch {
		case e.Mode&fs.ModeSymlink != 0:
			if err := os.Symlink(e.Data, full); err != nil {
				t.Fatal(err)
			}
		case e.Mode.IsRegular():
			if err := os.WriteFile(full, []byte(e.Data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for p, e := range entries {
		if e.Mode&fs.ModeSymlink == 0 {
			if err := os.Chmod(filepath.Join(dir, p), e.Mode.Perm()); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Cleanup(func() {
		// Let t.TempDir remove read-only directories.
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				os.Chmod(p, 0o755)
			}
			return nil
		})
	})
}

// layoutAgent is an agent whose workspace is a new empty directory and
// whose tasks directory is tasks.
func layoutAgent(t *testing.T, tasks string) (*agent, string) {
	t.Helper()
	ws := t.TempDir()
	root, err := os.OpenRoot(ws)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	return &agent{root: root, dir: ws, tasks: tasks}, ws
}

func TestLayout(t *testing.T) {
	tasks := t.TempDir()
	tmpl := map[string]entry{
		"go.mod":              {0o644, "module example.com/m\n"},
		"m.go":                {0o644, "package m\n"},
		"run.sh":              {0o755, "#!/bin/sh\n"},
		"secret":              {0o600, "s"},
		"ro.go":               {0o444, "package m // read-only in the module cache\n"},
		"ro":                  {fs.ModeDir | 0o555, ""},
		"ro/x.go":             {0o444, "package ro\n"},
		"a/b/c/deep.txt":      {0o644, "deep"},
		"empty":               {fs.ModeDir | 0o750, ""},
		"link":                {fs.ModeSymlink | 0o777, "a/b/c/deep.txt"},
		"a/up":                {fs.ModeSymlink | 0o777, "../m.go"},
		"a/dangling":          {fs.ModeSymlink | 0o777, "nowhere"},
		"a/b/c/big.bin":       {0o644, strings.Repeat("0123456789", 100_000)},
		"a/b/c/empty.go":      {0o644, ""},
		"odd name with space": {0o644, "x"},
	}
	makeTree(t, filepath.Join(tasks, "t1"), tmpl)
	before := listTree(t, filepath.Join(tasks, "t1"))

	a, ws := layoutAgent(t, tasks)
	resp := a.layout(&request{ID: 3, Op: "layout", Path: "t1"})
	if resp.Err != "" {
		t.Fatalf("layout: %s (%s)", resp.Err, resp.ErrKind)
	}
	want := map[string]entry{}
	var bytes int64
	for p, e := range before {
		switch {
		case e.Mode.IsDir():
			e.Mode |= 0o700
		case e.Mode.IsRegular():
			e.Mode |= 0o200
			bytes += int64(len(e.Data))
		}
		want[p] = e
	}
	if diff := cmp.Diff(want, listTree(t, ws)); diff != "" {
		t.Errorf("workspace after layout (-want +got):\n%s", diff)
	}
	if resp.ID != 3 || resp.Files != 10 || resp.Dirs != 5 || resp.Links != 3 || resp.Bytes != bytes {
		t.Errorf("layout answered id %d, %d files, %d dirs, %d links, %d bytes; want 3, 10, 5, 3, %d",
			resp.ID, resp.Files, resp.Dirs, resp.Links, resp.Bytes, bytes)
	}
	if diff := cmp.Diff(before, listTree(t, filepath.Join(tasks, "t1"))); diff != "" {
		t.Errorf("layout changed the template (-before +after):\n%s", diff)
	}

	// A second layout over a workspace that holds something is refused.
	if resp := a.layout(&request{ID: 4, Op: "layout", Path: "t1"}); resp.Err == "" || !strings.Contains(resp.Err, "not empty") {
		t.Errorf("layout over a used workspace: %q, want a refusal saying it is not empty", resp.Err)
	}
}

func TestLayoutRefuses(t *testing.T) {
	tests := []struct {
		name    string
		tmpl    map[string]entry
		path    string // the template, under the tasks directory; "t" when ""
		kind    string
		errHas  string
		noTasks bool
	}{
		{name: "absolute link", tmpl: map[string]entry{"l": {fs.ModeSymlink | 0o777, "/etc/passwd"}}, kind: "content", errHas: "absolute"},
		{name: "link up and out", tmpl: map[string]entry{"d/l": {fs.ModeSymlink | 0o777, "../../outside"}}, kind: "content", errHas: "outside the workspace"},
		{name: "link out through another link", tmpl: map[string]entry{
			"x":   {fs.ModeDir | 0o755, ""},
			"d/s": {fs.ModeSymlink | 0o777, ".."},
			// Lexically "d", physically the workspace's parent.
			"l": {fs.ModeSymlink | 0o777, "d/s/x/../.."},
		}, kind: "content", errHas: "outside the workspace"},
		{name: "template outside the tasks directory", path: "../elsewhere", kind: "path"},
		{name: "absolute template", path: "/etc", kind: "path"},
		{name: "missing template", path: "nope", kind: "notexist"},
		{name: "no tasks directory", noTasks: true, kind: "fs", errHas: "-tasks"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tasks := t.TempDir()
			makeTree(t, filepath.Join(tasks, "t"), tc.tmpl)
			p := tc.path
			if p == "" {
				p = "t"
			}
			dir := tasks
			if tc.noTasks {
				dir = ""
			}
			a, _ := layoutAgent(t, dir)
			resp := a.layout(&request{ID: 1, Op: "layout", Path: p})
			if resp.ErrKind != tc.kind || !strings.Contains(resp.Err, tc.errHas) {
				t.Errorf("layout = %q (kind %q); want kind %q, saying %q", resp.Err, resp.ErrKind, tc.kind, tc.errHas)
			}
		})
	}
	t.Run("fifo", func(t *testing.T) {
		tasks := t.TempDir()
		os.Mkdir(filepath.Join(tasks, "t"), 0o755)
		if err := syscall.Mkfifo(filepath.Join(tasks, "t", "pipe"), 0o644); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
		a, _ := layoutAgent(t, tasks)
		if resp := a.layout(&request{ID: 1, Op: "layout", Path: "t"}); resp.ErrKind != "content" {
			t.Errorf("layout of a template with a fifo = %q (kind %q), want a refusal of kind content", resp.Err, resp.ErrKind)
		}
	})
}

func TestRemove(t *testing.T) {
	a, ws := layoutAgent(t, "")
	makeTree(t, ws, map[string]entry{
		"f":     {0o644, "x"},
		"d/g":   {0o644, "y"},
		"l":     {fs.ModeSymlink | 0o777, "d/g"},
		"empty": {fs.ModeDir | 0o755, ""},
	})
	tests := []struct {
		path string
		kind string // "" for success
	}{
		{"f", ""},
		{"f", ""}, // gone already: no error, like rm -f
		{"/" + filepath.Base(ws) + "/nope", "path"},
		{"l", ""},
		{"d", "fs"},
		{"empty", "fs"},
		{".", "path"},
		{"../x", "path"},
		{"", "path"},
	}
	for _, tc := range tests {
		resp := a.remove(&request{ID: 1, Op: "remove", Path: tc.path})
		if resp.ErrKind != tc.kind {
			t.Errorf("remove %q = %q (kind %q), want kind %q", tc.path, resp.Err, resp.ErrKind, tc.kind)
		}
	}
	want := map[string]entry{
		"d":     {fs.ModeDir | 0o755, ""},
		"d/g":   {0o644, "y"},
		"empty": {fs.ModeDir | 0o755, ""},
	}
	if diff := cmp.Diff(want, listTree(t, ws)); diff != "" {
		t.Errorf("workspace after removes (-want +got):\n%s", diff)
	}
}
