package docker

import (
	"os"
	"strings"
	"testing"
)

// requires returns the module versions a go.mod requires.
func requires(t *testing.T, gomod string) map[string]string {
	t.Helper()
	out := map[string]string{}
	inBlock := false
	for line := range strings.SplitSeq(gomod, "\n") {
		line = strings.TrimSpace(strings.Split(line, "//")[0])
		switch {
		case line == "require (":
			inBlock = true
			continue
		case line == ")":
			inBlock = false
			continue
		case strings.HasPrefix(line, "require "):
			line = strings.TrimPrefix(line, "require ")
		case !inBlock:
			continue
		}
		if f := strings.Fields(line); len(f) == 2 {
			out[f[0]] = f[1]
		}
	}
	return out
}

// TestAgentModule: the agent that BuildImage compiles (agent/agent.mod) uses
// the versions of frog's go.mod, the ones `go test ./env/docker/agent`
// tested, and every dependency it needs is pinned in it.
func TestAgentModule(t *testing.T) {
	root, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	frog, agent := requires(t, string(root)), requires(t, string(agentSources["agent.mod"]))
	for _, m := range []string{"github.com/u-root/u-root", "mvdan.cc/sh/v3"} {
		if agent[m] == "" {
			t.Errorf("agent.mod does not require %s", m)
		}
	}
	for m, v := range agent {
		if fv, ok := frog[m]; ok && fv != v {
			t.Errorf("agent.mod requires %s %s, frog's go.mod %s: regenerate agent.mod and agent.sum (copy the agent's non-test files and agent.mod into a temporary module as go.mod, set the versions, go mod tidy, copy go.mod and go.sum back)", m, v, fv)
		}
	}
	if len(agentSources["agent.sum"]) == 0 {
		t.Errorf("agent.sum is empty")
	}
}
