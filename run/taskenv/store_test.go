package taskenv

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/frognano/frog/run"
	"github.com/frognano/frog/synth"
	"github.com/frognano/frog/synth/store"
)

// A store that holds a task twice gives it once, with a warning naming it
// (eval counted it twice); an empty store says it is empty (eval said
// "all quarantined").
func TestLoadStore(t *testing.T) {
	dir := t.TempDir()
	rec := func(id string) synth.TaskRecord {
		r := synth.TaskRecord{}
		r.ID, r.Repo, r.TestCmd, r.FailToPass = id, "example.com/m", []string{"go", "test"}, []string{"TestA"}
		r.PassToPass, r.Patch = []string{"TestB"}, "--- a/f.go\n+++ b/f.go\n"
		r.Mutations = []synth.Mutation{{Op: "op", File: "f.go", Edits: []synth.Edit{{Old: "a", New: "b"}}}}
		return r
	}
	var buf bytes.Buffer
	if err := store.Write(&buf, rec("a"), rec("b"), rec("a"), rec("c"), rec("a")); err != nil {
		t.Fatal(err)
	}
	dup := filepath.Join(dir, "dup.jsonl")
	if err := os.WriteFile(dup, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	recs, err := LoadStore("--tasks", dup, zerolog.New(&logs))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 {
		t.Errorf("loaded %d tasks from a store of 3 (one of them thrice); want 3", len(recs))
	}
	if !strings.Contains(logs.String(), "more than once") || !strings.Contains(logs.String(), `"ids":["a"]`) {
		t.Errorf("no warning naming the repeated task: %s", logs.String())
	}

	empty := filepath.Join(dir, "empty.jsonl")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = LoadStore("--tasks", empty, zerolog.Nop())
	var ue *run.UsageError
	if err == nil || !strings.Contains(err.Error(), "the store holds no task") || errors.As(err, &ue) {
		t.Errorf("empty store: %v; want 'the store holds no task', not a usage error (exit 1)", err)
	}
}
