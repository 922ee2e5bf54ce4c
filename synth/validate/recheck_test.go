package validate

import (
	"github.com/frognano/frog/env"

	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/frognano/frog/synth"
)

// copyDir copies the regular files under src to dst.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A stored task's paths that leave the module are refused before anything
// is read or written: "../", absolute paths, and a symbolic link in the
// module that points out of it.
func TestCheckerRefusesPathsOutsideTheModule(t *testing.T) {
	top := t.TempDir()
	mod := filepath.Join(top, "mod")
	copyDir(t, tinyModule, mod)
	outside := filepath.Join(top, "outside.go")
	if err := os.WriteFile(outside, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../outside.go", filepath.Join(mod, "calc", "link.go")); err != nil {
		t.Fatal(err)
	}
	sb := sandbox(t)
	c, err := NewChecker(mod, sb, "tiny", zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	task := func(file string) synth.TaskRecord {
		return synth.TaskRecord{Task: env.Task{
			Mutations: []synth.Mutation{{Op: "test", Family: "token", File: file, Line: 1, EndLine: 1,
				Edits: []synth.Edit{{Offset: 0, Old: "x", New: "y"}}}},
		}}
	}
	tests := []struct {
		name, file, want string
	}{
		{"up and out", "../outside.go", "leaves the module"},
		{"further up", "calc/../../../outside.go", "leaves the module"},
		{"absolute", outside, "is absolute"},
		{"a link out of the module", "calc/link.go", "escapes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := task(tt.file)
			rec.ID, rec.Repo, rec.File = "example.com__tiny.bad", "example.com/tiny", tt.file
			rec.Patch = "--- a/" + tt.file + "\n+++ b/" + tt.file + "\n@@ -1 +1 @@\n-y\n+x\n"
			rec.FailToPass, rec.PassToPass = []string{"TestSqrt"}, []string{"TestMax"}
			rec.TestCmd = []string{"go", "test", "-count=1", "./calc"}
			err := c.Check(context.Background(), rec)
			if !errors.Is(err, ErrRecheck) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Check of a task on %s = %v, want ErrRecheck saying %q", tt.file, err, tt.want)
			}
			for _, p := range []string{"outside.go", "tiny/calc/link.go"} {
				if data, err := sb.ReadFile(context.Background(), p); err == nil {
					t.Errorf("the sandbox holds %s (%q): a task's file was written outside the module", p, data)
				}
			}
			if data, _ := os.ReadFile(outside); string(data) != "x\n" {
				t.Errorf("the file outside the module now holds %q", data)
			}
		})
	}
}
