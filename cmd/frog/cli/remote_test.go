package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

// Runs with workers are tested as processes in cmd/frog/remotetest.

// A worker on a host whose Docker engine does not answer, when the run
// wants docker sandboxes, says so instead of joining a run it cannot play.
func TestWorkerWithoutDocker(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	we := &workerEnv{o: &workerOptions{Slots: 1, Workspaces: t.TempDir()}, log: zerolog.Nop()}
	cfg, _ := json.Marshal(realWorkerEnv{Run: "r", Sandbox: sandboxOptions{Kind: "docker"}})
	if _, _, err := we.open("real", cfg); err == nil || !strings.Contains(strings.ToLower(err.Error()), "docker") {
		t.Errorf("open: %v, want an error that names docker", err)
	}
	we.close()
}
