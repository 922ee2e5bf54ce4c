package process

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/env/envtest"
)

func TestConformance(t *testing.T) {
	for _, unshare := range []bool{true, false} {
		t.Run("unshare="+strconv.FormatBool(unshare), func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Unshare = unshare
			p, err := New(cfg, zerolog.Nop())
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("isolation: %s", p.Isolation())
			unshared := strings.HasPrefix(p.Isolation(), "commands run in new")
			if unshared != unshare && os.Getenv("CI") == "true" {
				t.Logf("namespaces unavailable here: %s", p.Isolation())
			}
			caps := envtest.Capabilities{Exec: true, Files: true, KillsEscapees: unshared, NoNetwork: unshared, HostIP: "127.0.0.1"}
			if bb, err := exec.LookPath("busybox"); err == nil {
				caps.NetProbe = func(host string, port int) []string {
					return []string{bb, "nc", "-w", "2", host, strconv.Itoa(port)}
				}
			}
			envtest.Run(t, p, caps)
		})
	}
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
