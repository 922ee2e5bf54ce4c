package cli

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/frognano/frog/env/docker/dockertest"
)

// TestDockerScripts runs testdata/docker/*.txtar: frog with real Docker
// sandboxes, as a user types it. It skips, saying so, when no daemon
// answers, except under CI=true, where it fails: Docker tests never skip in
// CI. Each script gets a unique $RUN to name its runs with.
func TestDockerScripts(t *testing.T) {
	// Build the sandbox image here, where the go command has its usual
	// environment, rather than in a script.
	dockertest.Image(t)
	if _, err := exec.LookPath("docker"); err != nil {
		t.Fatalf("a Docker daemon answers but there is no docker command: %v", err)
	}
	// frog mounts the host's Go toolchain and module cache into its
	// sandboxes, where `go env` says they are: give scripts the go
	// command's environment (testscript's own sets HOME=/no-home).
	goenv, err := exec.Command("go", "env", "GOROOT", "GOPATH", "GOMODCACHE", "GOCACHE").Output()
	if err != nil {
		t.Fatalf("go env: %v", err)
	}
	vals := strings.Split(strings.TrimSpace(string(goenv)), "\n")
	testscript.Run(t, testscript.Params{
		Dir: "testdata/docker",
		Setup: func(e *testscript.Env) error {
			for i, k := range []string{"GOROOT", "GOPATH", "GOMODCACHE", "GOCACHE"} {
				if i < len(vals) {
					e.Setenv(k, strings.TrimSpace(vals[i]))
				}
			}
			for _, k := range []string{"DOCKER_HOST", "DOCKER_CONFIG", "DOCKER_CERT_PATH", "DOCKER_TLS_VERIFY", "DOCKER_CONTEXT", "CI"} {
				if v, ok := os.LookupEnv(k); ok {
					e.Setenv(k, v)
				}
			}
			e.Setenv("RUN", dockertest.RunName(t))
			return nil
		},
	})
}
