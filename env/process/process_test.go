package process

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/env/envtest"
)

func TestConformance(t *testing.T) {
	for _, v := range []struct {
		name                     string
		contain, unshare, userNS bool
	}{{"contained", true, false, false}, {"unshare", false, true, false}, {"unshare+userns", false, true, true}, {"no-unshare", false, false, false}} {
		t.Run(v.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Contain, cfg.Unshare, cfg.UserNamespace = v.contain, v.unshare, v.userNS
			p, err := New(cfg, zerolog.Nop())
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("isolation: %s", p.Isolation())
			unshared := v.contain || strings.HasPrefix(p.Isolation(), "commands run in new")
			if unshared != (v.unshare || v.contain) && os.Getenv("CI") == "true" {
				t.Logf("namespaces unavailable here: %s", p.Isolation())
			}
			caps := envtest.Capabilities{Exec: true, Files: true, KillsEscapees: unshared, NoNetwork: unshared, ReadOnlyOutside: v.contain, HostIP: "127.0.0.1"}
			if bb, err := exec.LookPath("busybox"); err == nil {
				caps.NetProbe = func(host string, port int) []string {
					return []string{bb, "nc", "-w", "2", host, strconv.Itoa(port)}
				}
			}
			envtest.Run(t, p, caps)
		})
	}
}

// Root's commands run without a new user namespace unless asked for one
// (a full fork each); everyone else's run in one. /proc/self/uid_map says
// which: the initial namespace maps the whole range of ids, a new one the
// one id frog gives it.
func TestUserNamespace(t *testing.T) {
	for _, asked := range []bool{false, true} {
		t.Run("asked="+strconv.FormatBool(asked), func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Contain, cfg.Dir, cfg.UserNamespace = false, t.TempDir(), asked
			p, err := New(cfg, zerolog.Nop())
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(p.Isolation(), "commands run in new") {
				if os.Getenv("CI") == "true" {
					t.Fatalf("no namespaces under CI: %s", p.Isolation())
				}
				t.Skipf("no namespaces here: %s", p.Isolation())
			}
			uidMap := execOut(t, p, "cat", "/proc/self/uid_map")
			f := strings.Fields(uidMap)
			inNew := len(f) == 3 && f[2] == "1"
			want := asked || os.Geteuid() != 0
			if inNew != want || strings.HasPrefix(p.Isolation(), "commands run in new user") != want {
				t.Errorf("euid %d, asked %v: uid_map %q, isolation %q; want a new user namespace: %v",
					os.Geteuid(), asked, uidMap, p.Isolation(), want)
			}
			// Either way the command has no network and is alone in its
			// pid namespace.
			if pid := strings.TrimSpace(execOut(t, p, "sh", "-c", "echo $$")); pid != "1" {
				t.Errorf("the command's shell is pid %s in its namespace, want 1", pid)
			}
		})
	}
}

func execOut(t *testing.T, p *Provider, cmd ...string) string {
	t.Helper()
	ctx := context.Background()
	sb, err := p.Open(ctx, env.OpenOptions{Run: "test-userns"})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close(ctx)
	r, err := sb.Exec(ctx, env.ExecOptions{Cmd: cmd})
	if err != nil || r.ExitCode != 0 {
		t.Fatalf("%v: %v, exit %d: %s", cmd, err, r.ExitCode, r.Stderr)
	}
	return string(r.Stdout)
}

// BenchmarkExec starts a command (`true`) in a sandbox: contained (a
// bwrap sandbox a command, with its build cache layer) and not, and not
// with and without a new user namespace, this process holding 0 or 100 MB
// of heap: with a user namespace Go copies this process's page tables for
// every command, so its cost grows with the heap; without one (root only)
// it starts by vfork, as bwrap does.
//
//	go test -run '^$' -bench Exec -benchtime 200x ./env/process
func BenchmarkExec(b *testing.B) {
	ctx := context.Background()
	var heap [][]byte
	for _, mb := range []int{0, 100} {
		for len(heap) < mb {
			chunk := make([]byte, 1<<20)
			for i := range chunk {
				chunk[i] = byte(i)
			}
			heap = append(heap, chunk)
		}
		for _, v := range []struct {
			name            string
			contain, userNS bool
		}{{"contained", true, false}, {"userns=false", false, false}, {"userns=true", false, true}} {
			b.Run(fmt.Sprintf("heap=%dMB/%s", mb, v.name), func(b *testing.B) {
				cfg := DefaultConfig()
				cfg.Dir, cfg.Contain, cfg.UserNamespace = b.TempDir(), v.contain, v.userNS
				p, err := New(cfg, zerolog.Nop())
				if err != nil {
					b.Fatal(err)
				}
				b.Logf("isolation: %s", p.Isolation())
				sb, err := p.Open(ctx, env.OpenOptions{Run: "bench-exec"})
				if err != nil {
					b.Fatal(err)
				}
				defer sb.Close(ctx)
				for b.Loop() {
					if r, err := sb.Exec(ctx, env.ExecOptions{Cmd: []string{"true"}}); err != nil || r.ExitCode != 0 {
						b.Fatal(err, r.ExitCode)
					}
				}
			})
		}
	}
	runtime.KeepAlive(heap)
}

func TestRel(t *testing.T) {
	s := &Sandbox{ws: "/tmp/frog-1/workspace"}
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"a.txt", "a.txt", true},
		{"./d/../a.txt", "a.txt", true},
		{"/tmp/frog-1/workspace/x/y", "x/y", true},
		{"/tmp/frog-1/workspace", ".", true},
		{"/tmp/frog-1/workspace2/x", "", false},
		{"/etc/passwd", "", false},
		{"../x", "", false},
		{"a/../../x", "", false},
		{"", "", false},
	}
	for _, tc := range tests {
		got, err := s.rel(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("rel(%q) = %q, %v; want %q, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

// A limit on open sandboxes keeps what they can do besides the Sandbox
// interface: the host paths a harness shares test binaries through, and
// removing a file without rm.
func TestLimitKeepsCapabilities(t *testing.T) {
	p, err := New(DefaultConfig(), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sb, err := env.Limit(p, 1).Open(ctx, env.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close(ctx)
	hp, ok := sb.(env.HostPaths)
	if !ok {
		t.Fatal("a limited process sandbox hides its host paths")
	}
	if got, ok := hp.HostPath("/usr/bin/env"); !ok || got != "/usr/bin/env" {
		t.Errorf("HostPath(/usr/bin/env) = %q, %v; want the path itself", got, ok)
	}
	r, ok := sb.(env.Remover)
	if !ok {
		t.Fatal("a limited process sandbox hides Remove")
	}
	if err := sb.WriteFile(ctx, "x.txt", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := r.Remove(ctx, "x.txt"); err != nil {
		t.Fatal(err)
	}
	if _, err := sb.ReadFile(ctx, "x.txt"); err == nil {
		t.Error("x.txt is still there after Remove")
	}
}

// TestReapDead: a provider removes the sandbox directories of frog
// processes that died and leaves those of live ones and everything else.
func TestReapDead(t *testing.T) {
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	names := map[string]bool{ // name: kept
		fmt.Sprintf("%s%d-3-0-123", dirPrefix, dead.Process.Pid): false,
		fmt.Sprintf("%s%d-4-1-456", dirPrefix, os.Getpid()):      true,
		fmt.Sprintf("%s%d-5-0-789", dirPrefix, os.Getppid()):     true,
		"frog-7-0-123": true, // not a sandbox of this naming
		"other":        true,
	}
	for n := range names {
		if err := os.MkdirAll(filepath.Join(dir, n, "workspace", "ro"), 0o755); err != nil {
			t.Fatal(err)
		}
		os.Chmod(filepath.Join(dir, n, "workspace", "ro"), 0o555)
	}
	cfg := DefaultConfig()
	cfg.Dir = dir
	if _, err := New(cfg, zerolog.Nop()); err != nil {
		t.Fatal(err)
	}
	for n, kept := range names {
		_, err := os.Stat(filepath.Join(dir, n))
		if (err == nil) != kept {
			t.Errorf("%s: kept = %v, want %v", n, err == nil, kept)
		}
	}
}
