package remotetest

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/frognano/frog/cmd/frog/cli"
)

// Every flag the Kubernetes manifests pass is one their command has: a
// renamed flag fails here, not in a user's cluster.
func TestDeployManifestsUseRealFlags(t *testing.T) {
	arg := regexp.MustCompile(`^\s+- (--[a-z0-9-]+|[a-z]+)`)
	for _, f := range []string{"../../../deploy/k8s/trainer.yaml", "../../../deploy/k8s/workers.yaml"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		cmd, help, n := "", "", 0
		for _, line := range strings.Split(string(b), "\n") {
			m := arg.FindStringSubmatch(line)
			switch {
			case m == nil:
			case !strings.HasPrefix(m[1], "--"):
				if m[1] == "train" || m[1] == "worker" {
					cmd, help = m[1], frogHelp(t, m[1])
				}
			case cmd == "":
				t.Errorf("%s: flag %s before a command", f, m[1])
			case !strings.Contains(help, "  "+m[1]+" ") && !strings.Contains(help, ", "+m[1]+" "):
				t.Errorf("%s: frog %s has no flag %s", f, cmd, m[1])
			default:
				n++
			}
		}
		if cmd == "" || n < 4 {
			t.Errorf("%s: found command %q and %d flags; the test reads nothing", f, cmd, n)
		}
	}
}

func frogHelp(t *testing.T, cmd string) string {
	t.Helper()
	var out, errb bytes.Buffer
	if err := cli.Run(context.Background(), []string{cmd, "--help"}, &out, &errb); err != nil {
		t.Fatalf("frog %s --help: %v", cmd, err)
	}
	return out.String()
}
