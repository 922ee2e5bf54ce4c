package main

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// TestPackageBoundaries keeps the layering of DESIGN.md: cmd → actors →
// (env, policy, synth) → cuda; only actors imports protoactor-go, only
// env/docker the Docker client, only cuda uses cgo, and env's backends never
// import each other.
func TestPackageBoundaries(t *testing.T) {
	out, err := exec.Command("go", "list", "-json=ImportPath,Imports,CgoFiles", "github.com/frognano/frog/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const mod = "github.com/frognano/frog/"
	dec := json.NewDecoder(strings.NewReader(string(out)))
	seen := 0
	for dec.More() {
		var p struct {
			ImportPath string
			Imports    []string
			CgoFiles   []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		seen++
		pkg := strings.TrimPrefix(p.ImportPath, mod)
		top := strings.SplitN(pkg, "/", 2)[0]
		if len(p.CgoFiles) > 0 && top != "cuda" {
			t.Errorf("%s uses cgo; only cuda may", pkg)
		}
		for _, imp := range p.Imports {
			dep := strings.TrimPrefix(imp, mod)
			depTop := strings.SplitN(dep, "/", 2)[0]
			switch {
			case strings.HasPrefix(imp, "github.com/asynkron/protoactor-go") && top != "actors":
				t.Errorf("%s imports protoactor-go; only actors may", pkg)
			case (strings.HasPrefix(imp, "github.com/docker/") || strings.HasPrefix(imp, "github.com/moby/")) && !strings.HasPrefix(pkg, "env/docker"):
				t.Errorf("%s imports the Docker client (%s); only env/docker may", pkg, imp)
			case !strings.HasPrefix(imp, mod):
				continue
			}
			if !strings.HasPrefix(imp, mod) {
				continue
			}
			if !allowed(pkg, top, dep, depTop) {
				t.Errorf("%s imports %s, against the layering", pkg, dep)
			}
		}
	}
	if seen < 10 {
		t.Fatalf("go list saw only %d packages", seen)
	}
}

func allowed(pkg, top, dep, depTop string) bool {
	rank := map[string]int{"cmd": 6, "run": 5, "actors": 4, "curriculum": 3, "policy": 2, "synth": 2, "env": 1, "cuda": 0}
	if top == depTop {
		// Within env, backends (env/docker, env/process, env/sim) never
		// import each other; env/envtest and tests may use any. A backend's
		// test helpers (env/docker/dockertest) may use it and env/envtest.
		if top == "env" && pkg != "env" && dep != "env" && !strings.HasPrefix(pkg, "env/envtest") {
			helper := strings.HasSuffix(pkg, "test")
			return strings.HasPrefix(dep, pkg+"/") || // a backend's own internals
				helper && (strings.HasPrefix(pkg, dep+"/") || strings.HasPrefix(dep, "env/envtest"))
		}
		return true
	}
	if (top == "policy" || top == "synth") && depTop == "env" {
		return true
	}
	return rank[depTop] < rank[top] && !(rank[top] == 2 && rank[depTop] == 2)
}
