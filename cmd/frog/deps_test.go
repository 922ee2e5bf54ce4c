package main

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// TestPackageBoundaries keeps the layering of DESIGN.md (the layers
// table): cmd → actors → curriculum → gotask → (policy, synth) →
// gotask/gotest → env → cuda; only actors imports protoactor-go, only
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
			if !allowed(pkg, dep) {
				t.Errorf("%s imports %s, against the layering", pkg, dep)
			}
		}
	}
	if seen < 10 {
		t.Fatalf("go list saw only %d packages", seen)
	}
}

// layers ranks the module's packages, each by the longest of these paths
// that it is or lies under: a package imports packages of a lower rank or
// of its own layer, never of a higher rank or of another layer of its own
// rank (policy and synth do not import each other). gotask/gotest, the go
// test layer that synth/validate and gotask share, lies between env and
// synth; gotask, a Go task at episode time, uses synth (its records, the
// repair templates, the synthesizer's modules) and is used by the
// curriculum's callers.
var layers = map[string]int{
	"cmd":           8,
	"run":           7,
	"actors":        6,
	"curriculum":    5,
	"gotask":        4,
	"policy":        3,
	"synth":         3,
	"gotask/gotest": 2,
	"env":           1,
	"cuda":          0,
}

// layer is pkg's layer (the longest path of layers that pkg is or lies
// under) and its rank; a package under none is a layer of its own top
// directory, of rank 0.
func layer(pkg string) (string, int) {
	best := ""
	for p := range layers {
		if (pkg == p || strings.HasPrefix(pkg, p+"/")) && len(p) > len(best) {
			best = p
		}
	}
	if best == "" {
		return strings.SplitN(pkg, "/", 2)[0], 0
	}
	return best, layers[best]
}

// allowed says whether package pkg may import dep (both module-relative).
func allowed(pkg, dep string) bool {
	pl, pr := layer(pkg)
	dl, dr := layer(dep)
	if pl == dl {
		// Within env, backends (env/docker, env/process, env/sim) never
		// import each other; env/envtest and tests may use any. A backend's
		// test helpers (env/docker/dockertest) may use it and env/envtest.
		if pl == "env" && pkg != "env" && dep != "env" && !strings.HasPrefix(pkg, "env/envtest") {
			helper := strings.HasSuffix(pkg, "test")
			return strings.HasPrefix(dep, pkg+"/") || // a backend's own internals
				helper && (strings.HasPrefix(pkg, dep+"/") || strings.HasPrefix(dep, "env/envtest"))
		}
		return true
	}
	return dr < pr
}

// TestAllowed: the layers let the arrows of DESIGN.md through and refuse
// a back arrow, an arrow between layers of one rank and one between env's
// backends.
func TestAllowed(t *testing.T) {
	for _, tc := range []struct {
		pkg, dep string
		want     bool
	}{
		{"synth/validate", "gotask/gotest", true},
		{"gotask", "gotask/gotest", true},
		{"gotask", "synth/mutate", true},
		{"gotask", "synth/source", true},
		{"actors", "gotask", true},
		{"cmd/frog/cli", "gotask", true},
		{"cmd/frog/cli", "run/experiment", true},
		{"run/experiment", "run/taskenv", true}, // one layer
		{"run/taskenv", "actors", true},
		{"run/taskenv", "cmd/frog/cli", false}, // the command line wires run/…, never the reverse
		{"gotask/gotest", "env", true},
		{"synth/source", "synth/validate", true},
		{"env/docker", "env/docker/internal", true},
		{"gotask/gotest", "gotask", false}, // a back arrow
		{"gotask/gotest", "synth", false},
		{"synth/source", "gotask", false},
		{"synth", "gotask/gotest/x", true},
		{"gotask", "curriculum", false},
		{"env", "gotask/gotest", false},
		{"policy", "synth", false}, // one rank, two layers
		{"synth/validate", "policy/neural", false},
		{"env/docker", "env/process", false},
		{"cuda", "env", false},
	} {
		if got := allowed(tc.pkg, tc.dep); got != tc.want {
			t.Errorf("allowed(%s, %s) = %v, want %v", tc.pkg, tc.dep, got, tc.want)
		}
	}
}
