package gotask

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/frognano/frog/env"
)

// TestTemplateIntegrity: a template that is not what it was when it was
// made (a test file rewritten in place, as a command of an uncontained
// sandbox did; a file added; one removed; a marker from before frog kept
// hashes) is made again before Template hands it out, with a warning,
// and its hash is the one it had; a template that is what it was is
// neither hashed again nor made again, also after a sibling task of the
// same module linked its files (their change time moves).
func TestTemplateIntegrity(t *testing.T) {
	recs, mods := oracleTasks(t)
	var logs bytes.Buffer
	ws, err := NewWorkspaces(t.TempDir(), zerolog.New(&logs))
	if err != nil {
		t.Fatal(err)
	}
	copies := map[string]string{} // module path: its copy
	for _, m := range mods {
		// A copy: the template links the module's files, and this test
		// writes one in place.
		src := m.Dir
		m.Dir = filepath.Join(t.TempDir(), "m")
		if err := os.CopyFS(m.Dir, os.DirFS(src)); err != nil {
			t.Fatal(err)
		}
		ws.AddLocal(m)
		copies[m.Path] = m.Dir
	}
	ctx := context.Background()
	task := &recs[0].Task
	dir, err := ws.Template(ctx, task)
	if err != nil {
		t.Fatal(err)
	}
	hash, err := ws.TemplateHash(ctx, task)
	if err != nil || len(hash) != 64 {
		t.Fatalf("TemplateHash = %q, %v", hash, err)
	}
	testFile := ""
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, "_test.go") && testFile == "" {
			testFile = p
		}
		return nil
	})
	if testFile == "" {
		t.Fatal("the template has no test file")
	}
	orig, err := os.ReadFile(testFile)
	if err != nil {
		t.Fatal(err)
	}
	// A sibling task of the same module links the same files: no remake.
	for _, r := range recs[1:] {
		if r.Repo == task.Repo {
			if _, err := ws.Template(ctx, &r.Task); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	if _, err := ws.Template(ctx, task); err != nil || strings.Contains(logs.String(), "made again") {
		t.Fatalf("Template after a sibling's: %v; log %s", err, logs.String())
	}

	// A file written in place is written in the module the template links
	// it from too (here a local one, taken as is): made again, the
	// template still differs, and it is refused until the file is back.
	f, err := os.OpenFile(testFile, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("package x // always passes\n")
	f.Close()
	if got, err := ws.Template(ctx, task); !errors.Is(err, ErrModified) || errors.Is(err, env.ErrInfra) {
		t.Fatalf("Template after a write in place = %q, %v; want an error wrapping ErrModified, not a fault", got, err)
	}
	if !strings.Contains(logs.String(), "was written") {
		t.Errorf("log = %s; want a warning that the test file was written", logs.String())
	}
	rel, _ := filepath.Rel(dir, testFile)
	if err := os.WriteFile(filepath.Join(copies[task.Repo], rel), orig, 0o644); err != nil {
		t.Fatal(err)
	}
	if h, err := ws.TemplateHash(ctx, task); err != nil || h != hash {
		t.Fatalf("TemplateHash once the module's file is back = %q, %v; want %q", h, err, hash)
	}

	for _, tc := range []struct {
		name   string
		tamper func(t *testing.T)
		want   string // in the warning
	}{
		{"test file replaced, same size and times", func(t *testing.T) {
			st, _ := os.Stat(testFile)
			data := bytes.Clone(orig)
			data[len(data)-2] ^= 1
			os.Remove(testFile)
			os.WriteFile(testFile, data, 0o444)
			os.Chtimes(testFile, st.ModTime(), st.ModTime())
		}, "was written"},
		{"file added", func(t *testing.T) {
			os.WriteFile(filepath.Join(filepath.Dir(testFile), "zz_init.go"), []byte("package x\n"), 0o644)
		}, "zz_init.go was added"},
		{"file removed", func(t *testing.T) {
			os.Remove(testFile)
		}, "removed"},
		{"file and marker rewritten alike", func(t *testing.T) {
			os.Remove(testFile)
			os.WriteFile(testFile, []byte("package x // always passes\n"), 0o444)
			os.Remove(filepath.Join(dir, readyFile))
			if err := markReady(dir); err != nil {
				t.Fatal(err)
			}
			ws.sums.forget(dir) // the marker is read again: only the first hash tells
		}, "it was"},
		{"marker of an older frog", func(t *testing.T) {
			os.Remove(filepath.Join(dir, readyFile))
			os.WriteFile(filepath.Join(dir, readyFile), nil, 0o644)
			ws.sums.forget(dir) // as a new process finds it
		}, "records no hash"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs.Reset()
			tc.tamper(t)
			got, err := ws.Template(ctx, task)
			if err != nil || got != dir {
				t.Fatalf("Template = %q, %v; want %q", got, err, dir)
			}
			if data, err := os.ReadFile(testFile); err != nil || !bytes.Equal(data, orig) {
				t.Errorf("the test file after Template: %q, %v; want it as made", data, err)
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(testFile), "zz_init.go")); err == nil {
				t.Error("the added file is still there")
			}
			if !strings.Contains(logs.String(), "made again") || !strings.Contains(logs.String(), tc.want) {
				t.Errorf("log = %s; want a warning that says %q", logs.String(), tc.want)
			}
			if h, err := ws.TemplateHash(ctx, task); err != nil || h != hash {
				t.Errorf("TemplateHash = %q, %v; want %q", h, err, hash)
			}
		})
	}
}

// TestModuleIntegrity: a template file written in place writes the
// fetched module's copy it is linked to: the module is fetched again and
// the template made again from it, as it was.
func TestModuleIntegrity(t *testing.T) {
	var logs bytes.Buffer
	ws, err := NewWorkspaces(t.TempDir(), zerolog.New(&logs))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	task := &env.Task{ID: "cmp.1", Repo: "github.com/google/go-cmp", Version: "v0.7.0"}
	mod, err := ws.ModuleDir(ctx, task)
	if err != nil {
		t.Skipf("go-cmp v0.7.0 cannot be fetched here: %v", err)
	}
	src, err := os.ReadFile(filepath.Join(mod, "cmp", "path.go"))
	if err != nil {
		t.Fatal(err)
	}
	task.Mutations = []env.Mutation{{File: "cmp/path.go", Edits: []env.Edit{{Offset: bytes.Index(src, []byte("package cmp")), Old: "package cmp", New: "package cmp // bug"}}}}
	dir, err := ws.Template(ctx, task)
	if err != nil {
		t.Fatal(err)
	}
	hash, _ := ws.TemplateHash(ctx, task)
	f := filepath.Join(dir, "cmp", "compare.go")
	orig, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	w, err := os.OpenFile(f, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	w.WriteString("package cmp\n")
	w.Close()
	if got, err := ws.Template(ctx, task); err != nil || got != dir {
		t.Fatalf("Template = %q, %v; want %q", got, err, dir)
	}
	if data, err := os.ReadFile(f); err != nil || !bytes.Equal(data, orig) {
		t.Errorf("compare.go after Template: %.40q, %v; want it as fetched", data, err)
	}
	if data, err := os.ReadFile(filepath.Join(mod, "cmp", "compare.go")); err != nil || !bytes.Equal(data, orig) {
		t.Errorf("the module's compare.go after Template: %.40q, %v; want it as fetched", data, err)
	}
	if h, err := ws.TemplateHash(ctx, task); err != nil || h != hash {
		t.Errorf("TemplateHash = %q, %v; want %q", h, err, hash)
	}
	for _, want := range []string{`"task":"cmp.1"`, `"module":"github.com/google/go-cmp@v0.7.0"`, "cmp/compare.go was written"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log = %s; want a warning with %q", logs.String(), want)
		}
	}
	// A tree without a marker is the file system's error, not one of
	// content.
	var c checker
	if _, err := c.check(t.TempDir()); err == nil || errors.Is(err, ErrModified) {
		t.Errorf("check of a tree without a marker = %v; want the file system's error", err)
	}
}
