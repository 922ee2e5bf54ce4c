package validate

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/frognano/frog/env"
)

// moduleWorkspaces lays out tasks of the tiny module from a template of
// each task's own, and knows the module as published (treeKey's need).
type moduleWorkspaces map[string]string

func (w moduleWorkspaces) Template(_ context.Context, t *env.Task) (string, error) {
	return w[t.ID], nil
}

func (w moduleWorkspaces) ModuleDir(context.Context, *env.Task) (string, error) {
	return tinyModule, nil
}

// tinyTask is a task of the tiny module with one bug in calc/calc.go:
// old replaced by new, its template made under a directory of its own.
func tinyTask(t *testing.T, id, old, new string, failing string) (string, *env.Task) {
	t.Helper()
	dir, task := buggyTiny(t)
	src := string(mustRead(t, tinyModule, "calc/calc.go"))
	if !strings.Contains(src, old) {
		t.Fatalf("no %q in calc.go", old)
	}
	if err := os.WriteFile(filepath.Join(dir, "calc", "calc.go"), []byte(strings.Replace(src, old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	task.ID, task.Version = id, "v0.1.0"
	task.Mutations = []env.Mutation{{File: "calc/calc.go"}}
	task.FailToPass, task.PassToPass = []string{failing}, nil
	for _, n := range []string{"TestMax", "TestAbs", "TestCount", "TestSqrt"} {
		if n != failing {
			task.PassToPass = append(task.PassToPass, n)
		}
	}
	return dir, task
}

// TestRealBuildsSharedByTree: two tasks of one package whose gold patches
// give back the module as published build that tree once; an agent's
// exact fix of either is judged by that binary; a tree of its own (a
// wrong fix, one that does not compile) is built; every outcome is the
// one go test gives without the sharing.
func TestRealBuildsSharedByTree(t *testing.T) {
	maxDir, maxTask := tinyTask(t, "tiny.max", "if a > b {", "if a < b {", "TestMax")
	absDir, absTask := tinyTask(t, "tiny.abs", "if v < 0 {", "if v > 0 {", "TestAbs")
	ws := moduleWorkspaces{maxTask.ID: maxDir, absTask.ID: absDir}
	pristine := mustRead(t, tinyModule, "calc/calc.go")
	gold := map[string][]byte{"calc/calc.go": pristine}
	ctx := context.Background()

	shared := NewHarness(ws, HarnessConfig{BinCache: t.TempDir()})
	plain := NewHarness(ws, HarnessConfig{})
	for _, h := range []*Harness{shared, plain} {
		if err := h.Check(ctx, laidOut(t, maxDir), maxTask, gold); err != nil {
			t.Fatal(err)
		}
		if err := h.Check(ctx, laidOut(t, absDir), absTask, gold); err != nil {
			t.Fatal(err)
		}
	}
	if st := shared.Stats(); st.RealBuilds != 1 || st.RealShared != 1 {
		t.Fatalf("checks of two tasks with one gold tree: %d real builds, %d shared; want 1 and 1", st.RealBuilds, st.RealShared)
	}
	if st := plain.Stats(); st.RealBuilds != 0 || st.RealShared != 0 {
		t.Fatalf("with no binary cache: %d real builds, %d shared; want go test (0, 0)", st.RealBuilds, st.RealShared)
	}

	verdict := func(h *Harness, dir string, task *env.Task, calc string) bool {
		t.Helper()
		sb := laidOut(t, dir)
		ep := env.NewEpisode(task, env.RunOptions{MaxSteps: 5, Harness: h})
		before := string(mustRead(t, dir, "calc/calc.go"))
		if err := ep.Apply(ctx, sb, env.Action{Tool: env.ToolEdit, Path: "calc/calc.go", Old: before, New: calc}); err != nil {
			t.Fatal(err)
		}
		if r := ep.Trajectory().Steps[0].Result; r.Error != "" {
			t.Fatalf("edit: %s", r.Error)
		}
		traj, err := ep.Finish(ctx, sb)
		if err != nil {
			t.Fatal(err)
		}
		return traj.Reward == 1
	}
	src := string(pristine)
	for _, tt := range []struct {
		name   string
		dir    string
		task   *env.Task
		calc   string
		want   bool
		builds int64 // the shared harness's real builds after it
	}{
		{"the exact fix", absDir, absTask, src, true, 1},
		{"a fix of its own", maxDir, maxTask, strings.Replace(src, "if a > b {", "if b < a {", 1), true, 2},
		{"that tree from the other task", absDir, absTask, strings.Replace(src, "if a > b {", "if b < a {", 1), true, 2},
		{"a wrong fix", absDir, absTask, strings.Replace(src, "if v < 0 {", "if v >= 0 {", 1), false, 3},
		{"one that does not compile", maxDir, maxTask, strings.Replace(src, "func Max(", "func Max((", 1), false, 4},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := verdict(shared, tt.dir, tt.task, tt.calc)
			if want := verdict(plain, tt.dir, tt.task, tt.calc); got != want || got != tt.want {
				t.Errorf("verdict %v with shared builds, %v with go test; want %v", got, want, tt.want)
			}
			if st := shared.Stats(); st.RealBuilds != tt.builds {
				t.Errorf("%d real builds; want %d", st.RealBuilds, tt.builds)
			}
		})
	}
}
