package cli

import (
	"os"
	"path/filepath"
	"testing"
)

// TestAbsCommand: frog bench synth runs gremlins in another directory, so a
// relative --gremlins path is made absolute where the user typed it.
func TestAbsCommand(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bin", "tool"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	for _, name := range []string{"bin/tool", "./bin/tool", filepath.Join(dir, "bin", "tool")} {
		got, err := absCommand(name)
		if want := filepath.Join(dir, "bin", "tool"); err != nil || got != want {
			t.Errorf("absCommand(%q) = %q, %v; want %q", name, got, err, want)
		}
	}
	if got, err := absCommand("sh"); err != nil || !filepath.IsAbs(got) {
		t.Errorf("absCommand(sh) = %q, %v; want an absolute path from PATH", got, err)
	}
	if got, err := absCommand("bin/missing"); err == nil {
		t.Errorf("absCommand(bin/missing) = %q; want an error", got)
	}
}
