package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/frognano/frog/policy/openai/openaitest"
	"github.com/frognano/frog/synth"
	"github.com/frognano/frog/synth/store"
)

// flakyTest fails the first time it runs in a tree and passes after: a
// marker file beside it remembers. With the bug, a task whose
// FAIL_TO_PASS names it fails once and then passes on a rerun, as a test
// that depends on timing does.
const flakyTest = `package calc

import (
	"os"
	"testing"
)

func TestFlaky(t *testing.T) {
	if _, err := os.Stat("flaky.marker"); err != nil {
		os.WriteFile("flaky.marker", nil, 0o644)
		t.Fatal("the first run fails")
	}
}
`

// oneCheckStore writes a store of three tasks of the tiny module (one
// whose gold patch changes nothing, one whose FAIL_TO_PASS includes a
// flaky test, and a healthy one) and returns it with the module's copy the
// flaky test is in.
func oneCheckStore(t *testing.T) (tasks, mod string, ids [3]string) {
	t.Helper()
	if testing.Short() {
		t.Skip("synthesizes tasks and runs go test")
	}
	dir := t.TempDir()
	mod = filepath.Join(dir, "tiny")
	if err := os.CopyFS(mod, os.DirFS(tinyModule)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mod, "calc", "flaky_test.go"), []byte(flakyTest), 0o644); err != nil {
		t.Fatal(err)
	}
	made := filepath.Join(dir, "made.jsonl")
	var out, errb bytes.Buffer
	if err := Run(context.Background(), []string{"synth", "--source", tinyModule, "--n", "3", "--out", made, "--min-timeout", "5s", "--log-level", "warn"}, &out, &errb); err != nil {
		t.Fatalf("synth: %v\n%s", err, errb.String())
	}
	recs, err := store.Load(made)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) < 3 {
		t.Fatalf("synth made %d tasks, want 3", len(recs))
	}
	goldFails, flaky, healthy := recs[0], recs[1], recs[2]
	// A gold patch that still applies and changes nothing.
	goldFails.Patch = noopPatch(t, goldFails.Patch)
	flaky.FailToPass = append(flaky.FailToPass, "TestFlaky")
	flaky.TestCmd[len(flaky.TestCmd)-2] = "^(" + strings.Join(flaky.Tests(), "|") + ")$"
	tasks = filepath.Join(dir, "tasks.jsonl")
	for _, r := range []synth.TaskRecord{goldFails, flaky, healthy} {
		if err := store.Append(tasks, r); err != nil {
			t.Fatal(err)
		}
	}
	return tasks, mod, [3]string{goldFails.ID, flaky.ID, healthy.ID}
}

// noopPatch turns a patch's added lines into the lines it removes: it
// still applies, and changes nothing.
func noopPatch(t *testing.T, patch string) string {
	t.Helper()
	lines := strings.Split(patch, "\n")
	var minus []string
	for _, l := range lines {
		if strings.HasPrefix(l, "-") && !strings.HasPrefix(l, "---") {
			minus = append(minus, l[1:])
		}
	}
	i := 0
	for j, l := range lines {
		if strings.HasPrefix(l, "+") && !strings.HasPrefix(l, "+++") {
			if i >= len(minus) {
				t.Fatalf("patch adds more lines than it removes:\n%s", patch)
			}
			lines[j] = "+" + minus[i]
			i++
		}
	}
	if i != len(minus) {
		t.Fatalf("patch removes more lines than it adds:\n%s", patch)
	}
	return strings.Join(lines, "\n")
}

// TestOneTaskCheck: every command that plays stored tasks, and `frog synth
// verify`, agree on which tasks of one store are quarantined and why: a
// task whose gold patch does not fix it, one whose FAIL_TO_PASS test is
// flaky, and a healthy one. Each command lays out its own workspaces, so
// none reads another's answer.
func TestOneTaskCheck(t *testing.T) {
	tasks, mod, ids := oneCheckStore(t)
	srv := openaitest.New(func(openaitest.Request) openaitest.Reply {
		return openaitest.Reply{ToolCalls: []openaitest.ToolCall{openaitest.Call("submit", "{}")}}
	})
	defer srv.Close()
	dir := t.TempDir()
	ws := func(name string) []string {
		return []string{"--tasks", tasks, "--local", mod, "--workspaces", filepath.Join(dir, name, "ws"), "--log-level", "warn"}
	}
	type quarantined struct {
		ID     string `json:"instance_id"`
		Reason string `json:"reason"`
		Error  string `json:"error"`
	}
	commands := []struct {
		name, key string
		args      []string
	}{
		{"synth verify", "failures", []string{"synth", "verify", "--tasks", tasks, "--source", mod, "--work-dir", filepath.Join(dir, "verify"), "--concurrency", "3", "--json", "--log-level", "warn"}},
		{"eval", "tasks.quarantined", append([]string{"eval", "--policy", "fl-greedy", "--tries", "2", "--concurrency", "3", "--json"}, ws("eval")...)},
		{"rollout", "harness.quarantined", append([]string{"rollout", "--base-url", srv.BaseURL(), "--model", "test-model", "--group-size", "2",
			"--concurrency", "3", "--out", filepath.Join(dir, "rollout", "out"), "--json"}, ws("rollout")...)},
		{"train", "tasks.quarantined", append([]string{"train", "--heldout", "", "--sandbox", "process", "--device", "cpu", "--episodes", "4",
			"--group-size", "2", "--concurrency", "3", "--run-dir", filepath.Join(dir, "train", "run"), "--json"}, ws("train")...)},
		{"sim", "tasks.quarantined", append([]string{"sim", "--sandbox", "process", "--episodes", "4", "--group-size", "2", "--concurrency", "3", "--no-run-dir", "--json"}, ws("sim")...)},
	}
	var first map[string]string
	for _, c := range commands {
		var out, errb bytes.Buffer
		err := Run(context.Background(), c.args, &out, &errb)
		if err != nil && c.name != "synth verify" { // verify exits 1 when a task does not hold up
			t.Fatalf("frog %s: %v\n%s", c.name, err, errb.String())
		}
		var m map[string]any
		if err := json.Unmarshal(out.Bytes(), &m); err != nil {
			t.Fatalf("frog %s: stdout is not one JSON object: %v\n%s\n%s", c.name, err, out.String(), errb.String())
		}
		v, _ := path(m, c.key)
		raw, _ := json.Marshal(v)
		var qs []quarantined
		if err := json.Unmarshal(raw, &qs); err != nil {
			t.Fatalf("frog %s: %s: %v", c.name, c.key, err)
		}
		got := map[string]string{}
		for _, q := range qs {
			got[q.ID] = q.Reason + q.Error
		}
		t.Logf("frog %s quarantined %d: %v", c.name, len(got), got)
		if !regexp.MustCompile(`with the gold patch, tests did not pass: Test`).MatchString(got[ids[0]]) {
			t.Errorf("frog %s: the task whose gold patch changes nothing: %q, want it quarantined for that", c.name, got[ids[0]])
		}
		if !strings.Contains(got[ids[1]], "(flaky): TestFlaky") {
			t.Errorf("frog %s: the task with a flaky FAIL_TO_PASS test: %q, want it quarantined as flaky", c.name, got[ids[1]])
		}
		if r, ok := got[ids[2]]; ok || len(got) != 2 {
			t.Errorf("frog %s quarantined %d tasks, the healthy one %v (%s); want the two others only", c.name, len(got), ok, r)
		}
		if first == nil {
			first = got
			continue
		}
		for id, why := range first {
			if got[id] != why {
				t.Errorf("frog %s says of %s:\n  %s\nfrog %s says:\n  %s", c.name, id, got[id], commands[0].name, why)
			}
		}
	}
}
