package process

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/frognano/frog/env"
)

type dirWorkspaces string

func (d dirWorkspaces) Template(context.Context, *env.Task) (string, error) { return string(d), nil }

// realSandbox opens a contained sandbox of a real task of module mod whose
// template is a folder of the test's holding calc/calc.go.
func realSandbox(t *testing.T, mod string) *Sandbox {
	t.Helper()
	tmpl := t.TempDir()
	os.MkdirAll(filepath.Join(tmpl, "calc"), 0o755)
	os.WriteFile(filepath.Join(tmpl, "calc", "calc.go"), []byte("package calc\n"), 0o644)
	cfg := DefaultConfig()
	cfg.Dir, cfg.Workspaces = t.TempDir(), dirWorkspaces(tmpl)
	p, err := New(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	task := &env.Task{ID: "t", Repo: mod, Version: "v1.0.0", Mutations: []env.Mutation{{File: "calc/calc.go"}}}
	sb, err := p.Open(context.Background(), env.OpenOptions{Run: "reset-test", Task: task})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close(context.Background()) })
	return sb.(*Sandbox)
}

// TestTaskModuleHidden: a contained command of a task's sandbox does not
// see the task's module in the module cache (any version, extracted or
// downloaded: as published it is the gold fix), and sees other modules.
func TestTaskModuleHidden(t *testing.T) {
	mc := t.TempDir()
	t.Setenv("GOMODCACHE", mc)
	files := map[string]string{
		"example.com/!foo@v1.0.0/calc/calc.go":           "gold",
		"example.com/!foo@v0.9.0/calc/calc.go":           "older gold",
		"cache/download/example.com/!foo/@v/v1.0.0.zip":  "zipped gold",
		"example.com/other@v1.2.0/x.go":                  "a dependency",
		"cache/download/example.com/other/@v/v1.2.0.zip": "a dependency, zipped",
	}
	for f, data := range files {
		p := filepath.Join(mc, filepath.FromSlash(f))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(data), 0o644)
	}
	sb := realSandbox(t, "example.com/Foo")
	for f, data := range files {
		r := shOut(t, sb, "cat "+filepath.Join(mc, filepath.FromSlash(f)))
		hidden := strings.Contains(f, "!foo")
		if got := string(r.Stdout); hidden && got != "" || !hidden && got != data {
			t.Errorf("cat %s: %q (exit %d); want hidden %v", f, got, r.ExitCode, hidden)
		}
	}
}

// TestReset: Reset ends what the sandbox's commands left running and lays
// the template out again over whatever the commands wrote.
func TestReset(t *testing.T) {
	sb := realSandbox(t, "example.com/calc")
	ctx := context.Background()
	p, err := sb.Start(ctx, env.ExecOptions{Cmd: []string{"sh", "-c", "echo up; sleep 300"}})
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 3)
	if _, err := p.Stdout().Read(buf); err != nil {
		t.Fatal(err)
	}
	shOut(t, sb, "echo 'package calc // rewritten' > calc/calc.go; echo x > calc/new.go")
	if err := sb.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	if data, err := sb.ReadFile(ctx, "calc/calc.go"); err != nil || string(data) != "package calc\n" {
		t.Errorf("calc.go after Reset: %q, %v; want the template's", data, err)
	}
	if _, err := sb.ReadFile(ctx, "calc/new.go"); err == nil {
		t.Error("a file a command made survives Reset")
	}
	defer p.Kill()
	select {
	case <-p.Done():
	case <-time.After(30 * time.Second):
		t.Error("a started command still runs after Reset")
	}
	if r := shOut(t, sb, "cat calc/calc.go"); string(r.Stdout) != "package calc\n" {
		t.Errorf("a command after Reset sees %q", r.Stdout)
	}
}
