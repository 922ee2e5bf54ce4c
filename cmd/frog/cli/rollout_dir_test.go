package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/frognano/frog/policy/openai"
	"github.com/frognano/frog/policy/openai/openaitest"
)

// writeShards writes records (task, group, episode, outcome; groups of
// two) as export shards under dir/trajectories, one shard per slice, and
// appends tail to the last.
func writeShards(t *testing.T, dir string, tail string, shards ...[]shardHead) {
	t.Helper()
	tdir := filepath.Join(dir, "trajectories")
	if err := os.MkdirAll(tdir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, recs := range shards {
		var b bytes.Buffer
		for _, r := range recs {
			r.GroupSize = 2
			line, _ := json.Marshal(r)
			b.Write(append(line, '\n'))
		}
		if i == len(shards)-1 {
			b.WriteString(tail)
		}
		if err := os.WriteFile(filepath.Join(tdir, fmt.Sprintf("shard-%05d.jsonl", i)), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// An export directory of a killed rollout is read for the one that
// continues it: the next group and episode numbers, the tasks with a whole
// group, a torn last line set aside; what cannot be continued is refused.
func TestReadPriorRollout(t *testing.T) {
	dir := t.TempDir()
	if p, err := readPriorRollout(filepath.Join(dir, "none"), 2); p != nil || err != nil {
		t.Fatalf("no export: %+v, %v; want nothing to continue", p, err)
	}
	rec := func(task string, g, ep uint64, outcome string) shardHead {
		return shardHead{TaskID: task, GroupID: fmt.Sprintf("g%d", g), Episode: ep, Outcome: outcome}
	}
	writeShards(t, dir, `{"messages":[{"role":"system","content":"You are`,
		[]shardHead{rec("a", 0, 0, "completed"), rec("a", 0, 1, "failed_infra"), rec("b", 1, 2, "completed"), rec("c", 2, 4, "completed"), rec("c", 2, 5, "cancelled")},
		[]shardHead{rec("d", 7, 14, "completed"), rec("d", 7, 15, "completed")})
	p, err := readPriorRollout(dir, 2)
	if err != nil {
		t.Fatal(err)
	}
	got := []any{p.Records, p.Groups, p.TasksDone, p.nextGroup, p.nextEpisode, p.done}
	want := []any{7, 4, 2, uint64(8), uint64(16), map[string]bool{"a": true, "d": true}}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("records, groups, tasks done, next group, next episode, done (-got +want):\n%s", diff)
	}
	last := filepath.Join(dir, "trajectories", "shard-00001.jsonl")
	if p.Torn != last+".torn" {
		t.Errorf("torn line set aside in %q, want %q", p.Torn, last+".torn")
	}
	if data, _ := os.ReadFile(last); bytes.Count(data, []byte("\n")) != 2 || data[len(data)-1] != '\n' {
		t.Errorf("the shard still ends with its torn line: %q", data)
	}
	if again, err := readPriorRollout(dir, 2); err != nil || again.Records != 7 || again.Torn != "" {
		t.Errorf("read again: %+v, %v; want the same 7 records and nothing torn", again, err)
	}

	for _, tc := range []struct {
		name, want string
		prep       func(dir string)
		size       int
	}{
		{"another group size", "--group-size 4: ", func(string) {}, 4},
		{"finished", "holds a finished rollout", func(d string) { os.WriteFile(filepath.Join(d, "summary.json"), []byte(`{"interrupted":false}`), 0o644) }, 2},
		{"a damaged record", "shard-00000.jsonl:2: not a record", func(d string) {
			f := filepath.Join(d, "trajectories", "shard-00000.jsonl")
			data, _ := os.ReadFile(f)
			os.WriteFile(f, bytes.Replace(data, []byte("\n"), []byte("\n}garbage{\n"), 1), 0o644)
		}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := t.TempDir()
			writeShards(t, d, "", []shardHead{rec("a", 0, 0, "completed"), rec("a", 0, 1, "completed")})
			tc.prep(d)
			if _, err := readPriorRollout(d, tc.size); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v; want one saying %q", err, tc.want)
			}
		})
	}
	d := t.TempDir()
	writeShards(t, d, "", []shardHead{rec("a", 0, 0, "cancelled")})
	os.WriteFile(filepath.Join(d, "summary.json"), []byte(`{"interrupted":true}`), 0o644)
	if p, err := readPriorRollout(d, 2); err != nil || p == nil || p.TasksDone != 0 || p.summary == "" {
		t.Errorf("interrupted rollout: %+v, %v; want it continued, its cancelled group played again", p, err)
	}
}

// frog rollout --out onto a rollout that was cut short continues it: the
// tasks it finished are not played again, the new groups and episodes are
// numbered after its own (no id twice in the export); onto a finished one
// it refuses. (Once it wrote new shards beside the old with the same
// group and episode numbers, without a word.)
func TestRolloutContinuesACutShortOne(t *testing.T) {
	tasks, ws, fixes := rolloutFixture(t, "4")
	srv := openaitest.New(planner(fixes))
	defer srv.Close()
	prompt := filepath.Join(t.TempDir(), "task.tmpl")
	if err := os.WriteFile(prompt, []byte("Task: {{.Task.ID}}"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	args := []string{"rollout", "--base-url", srv.BaseURL(), "--model", "test-model", "--tasks", tasks, "--local", tinyModule,
		"--workspaces", ws, "--group-size", "2", "--out", out, "--task-prompt-file", prompt, "--max-turns", "6", "--json", "--log-level", "warn"}
	// Two tasks, then gone before its summary, as a SIGKILL leaves it.
	runJSON(t, append(args, "--limit", "2")...)
	if err := os.Remove(filepath.Join(out, "summary.json")); err != nil {
		t.Fatal(err)
	}
	m := runJSON(t, args...)
	if v, _ := path(m, "continued.tasks_done"); v != 2.0 {
		t.Errorf("continued %v; want the 2 tasks done before", m["continued"])
	}
	recs, err := openai.ReadShards(filepath.Join(out, "trajectories"))
	if err != nil {
		t.Fatal(err)
	}
	episodes, groups, tasksOf := map[uint64]bool{}, map[string]string{}, map[string]int{}
	for _, r := range recs {
		if episodes[r.Episode] {
			t.Errorf("episode %d exported twice", r.Episode)
		}
		episodes[r.Episode] = true
		if task, ok := groups[r.GroupID]; ok && task != r.TaskID {
			t.Errorf("group %s holds tasks %s and %s", r.GroupID, task, r.TaskID)
		}
		groups[r.GroupID] = r.TaskID
		tasksOf[r.TaskID]++
	}
	if len(recs) != 8 || len(groups) != 4 || len(tasksOf) != 4 {
		t.Errorf("%d records of %d groups and %d tasks; want 8 of 4 groups, one per task", len(recs), len(groups), len(tasksOf))
	}
	var stdout, stderr bytes.Buffer
	err = Run(context.Background(), args, &stdout, &stderr)
	var u *UsageError
	if !errors.As(err, &u) || !strings.Contains(err.Error(), "holds a finished rollout") {
		t.Errorf("onto a finished rollout: %v; want it refused", err)
	}
}
