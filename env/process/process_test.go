package process

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/rs/zerolog"

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
