package gotask

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/synth"
	"github.com/frognano/frog/synth/source"
	"github.com/frognano/frog/synth/store"
)

var stored struct {
	sync.Mutex
	recs []synth.TaskRecord
}

// storedTasks synthesizes every task of the tiny module (single and
// combined mutants) into a JSONL store and loads it back, once per test
// binary.
func storedTasks(t *testing.T) []synth.TaskRecord {
	t.Helper()
	stored.Lock()
	defer stored.Unlock()
	if stored.recs != nil {
		return stored.recs
	}
	m, err := source.Local(tinyModule)
	if err != nil {
		t.Fatal(err)
	}
	s := newSynth(t, []source.Module{m}, source.Config{})
	path := filepath.Join(t.TempDir(), "tasks.jsonl")
	err = s.Generate(context.Background(), 0, func(r synth.TaskRecord) error { return store.Append(path, r) })
	if !errors.Is(err, source.ErrExhausted) {
		t.Fatalf("Generate = %v, want ErrExhausted", err)
	}
	recs, err := store.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) < 3 {
		t.Fatalf("only %d tasks; stats %+v", len(recs), s.Stats())
	}
	if !slices.ContainsFunc(recs, func(r synth.TaskRecord) bool { return r.Features.K > 1 }) {
		t.Fatalf("no combined task among %d: the rechecks would not cover multi-mutation patches", len(recs))
	}
	stored.recs = recs
	return recs
}

// checkStored checks every stored task with the run's task check (a
// Quarantine over workspaces of the tiny module, judged by a Harness) in
// sandboxes of newProv, and checks that a corrupted task is quarantined.
func checkStored(t *testing.T, newProv func(*testing.T, *Workspaces) env.Provider, recs []synth.TaskRecord) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	m, err := source.Local(tinyModule)
	if err != nil {
		t.Fatal(err)
	}
	ws := newWorkspaces(t, []source.Module{m})
	q := NewQuarantine(ws, NewHarness(ws, HarnessConfig{}), newProv(t, ws), "stored", zerolog.Nop())
	combos := 0
	for _, r := range recs {
		if err := q.Check(ctx, &r.Task); err != nil {
			t.Errorf("%v\npatch:\n%s", err, r.Patch)
		}
		if r.Features.K > 1 {
			combos++
		}
	}
	t.Logf("%d tasks checked, %d of them combined mutants", len(recs), combos)

	bad := recs[0]
	bad.ID += "-corrupt"
	bad.PassToPass = append(append([]string(nil), bad.PassToPass...), bad.FailToPass...)
	if err := q.Check(ctx, &bad.Task); !errors.Is(err, synth.ErrQuarantined) || !strings.Contains(err.Error(), "PASS_TO_PASS tests did not pass") {
		t.Errorf("a task whose FAIL_TO_PASS test is also listed as PASS_TO_PASS: Check = %v, want it quarantined for that", err)
	}
}

func TestStoredTasksHoldUpInProcessSandbox(t *testing.T) {
	recs := storedTasks(t)
	checkStored(t, processProvider, recs)
}

func TestStoredTasksHoldUpInDockerSandbox(t *testing.T) {
	recs := storedTasks(t)
	// A go test run costs seconds in a container: a single and a combined
	// task are enough here; the process sandbox checks them all.
	var some []synth.TaskRecord
	for _, k := range []int{1, 2, 3} {
		for _, r := range recs {
			if r.Features.K == k {
				some = append(some, r)
				break
			}
		}
	}
	checkStored(t, dockerProvider, some)
}

// A stored task's paths that leave the module are refused before anything
// is read or written: "../", absolute paths, and a symbolic link in the
// module that points out of it. The check quarantines such a task: it
// never reaches a sandbox (the quarantine here has none).
func TestQuarantineRefusesPathsOutsideTheModule(t *testing.T) {
	top := t.TempDir()
	mod := filepath.Join(top, "mod")
	if err := os.CopyFS(mod, os.DirFS(tinyModule)); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(top, "outside.go")
	if err := os.WriteFile(outside, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../outside.go", filepath.Join(mod, "calc", "link.go")); err != nil {
		t.Fatal(err)
	}
	m, err := source.Local(mod)
	if err != nil {
		t.Fatal(err)
	}
	ws := newWorkspaces(t, []source.Module{m})
	q := NewQuarantine(ws, nil, nil, "escape", zerolog.Nop())
	tests := []struct {
		name, file, want string
	}{
		{"up and out", "../outside.go", "leaves the module"},
		{"further up", "calc/../../../outside.go", "leaves the module"},
		{"absolute", outside, "is absolute"},
		{"a link out of the module", "calc/link.go", "escapes"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			task := env.Task{
				ID: fmt.Sprintf("example.com__tiny.bad%d", i), Repo: "example.com/tiny", File: tt.file,
				Patch:      "--- a/" + tt.file + "\n+++ b/" + tt.file + "\n@@ -1 +1 @@\n-y\n+x\n",
				FailToPass: []string{"TestSqrt"}, PassToPass: []string{"TestMax"},
				TestCmd: []string{"go", "test", "-count=1", "./calc"},
				Mutations: []synth.Mutation{{Op: "test", Family: "token", File: tt.file, Line: 1, EndLine: 1,
					Edits: []synth.Edit{{Offset: 0, Old: "x", New: "y"}}}},
			}
			err := q.Check(context.Background(), &task)
			if !errors.Is(err, synth.ErrQuarantined) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Check of a task on %s = %v, want it quarantined, saying %q", tt.file, err, tt.want)
			}
			if data, _ := os.ReadFile(outside); string(data) != "x\n" {
				t.Errorf("the file outside the module now holds %q", data)
			}
		})
	}
}
