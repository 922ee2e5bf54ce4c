package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rs/zerolog"
	"github.com/spf13/pflag"

	"github.com/frognano/frog/gotask"
	"github.com/frognano/frog/policy/openai"
	"github.com/frognano/frog/policy/openai/openaitest"
	"github.com/frognano/frog/synth"
	"github.com/frognano/frog/synth/source"
	"github.com/frognano/frog/synth/store"
)

const tinyModule = "../../../synth/validate/testdata/tiny"

// rolloutFixture synthesizes tasks from the tiny module into a store and
// returns it with the workspaces directory and each task's gold fix, which
// only the scripted model (the test) knows.
func rolloutFixture(t *testing.T, n string) (tasks, ws string, fixes map[string]map[string][]byte) {
	t.Helper()
	if testing.Short() {
		t.Skip("synthesizes tasks and runs go test")
	}
	dir := t.TempDir()
	tasks, ws = filepath.Join(dir, "tasks.jsonl"), filepath.Join(dir, "ws")
	var out, errb bytes.Buffer
	if err := Run(context.Background(), []string{"synth", "--source", tinyModule, "--n", n, "--out", tasks, "--min-timeout", "5s", "--log-level", "warn"}, &out, &errb); err != nil {
		t.Fatalf("synth: %v\n%s", err, errb.String())
	}
	recs, err := store.Load(tasks)
	if err != nil {
		t.Fatal(err)
	}
	w, err := gotask.NewWorkspaces(ws, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	m, err := source.Local(tinyModule)
	if err != nil {
		t.Fatal(err)
	}
	w.AddLocal(m)
	fixes = map[string]map[string][]byte{}
	for _, r := range recs {
		f, err := w.Fixed(context.Background(), &r.Task)
		if err != nil {
			t.Fatal(err)
		}
		fixes[r.ID] = f
	}
	return tasks, ws, fixes
}

// planner is a scripted model: on its first turn it plans to solve (every
// other episode) or not, says so, and runs the tests; then it writes the
// gold fix, or makes a malformed call; then it submits. Every fifth
// request first gets a 503, which frog must retry.
func planner(fixes map[string]map[string][]byte) func(openaitest.Request) openaitest.Reply {
	var plans atomic.Int64
	return func(r openaitest.Request) openaitest.Reply {
		if r.N%5 == 0 {
			return openaitest.Reply{Status: 503}
		}
		id := strings.TrimSpace(strings.TrimPrefix(r.Messages[1].Content, "Task:"))
		var asst []openaitest.Message
		for _, m := range r.Messages {
			if m.Role == "assistant" {
				asst = append(asst, m)
			}
		}
		call := func(name string, args any) openaitest.Reply {
			b, _ := json.Marshal(args)
			return openaitest.Reply{ToolCalls: []openaitest.ToolCall{openaitest.Call(name, string(b))}}
		}
		switch len(asst) {
		case 0:
			plan := "plan: fail"
			if plans.Add(1)%2 == 0 {
				plan = "plan: solve"
			}
			rep := call("run_tests", map[string]any{})
			rep.Content = plan
			return rep
		case 1:
			if asst[0].Content == "plan: solve" {
				fix := fixes[id]
				f := slices.Sorted(maps.Keys(fix))[0]
				return call("edit", map[string]string{"path": f, "new": string(fix[f])})
			}
			return call("frobnicate", map[string]any{})
		}
		return call("submit", map[string]any{})
	}
}

func TestRolloutAgainstAFakeServer(t *testing.T) {
	tasks, ws, fixes := rolloutFixture(t, "4")
	srv := openaitest.New(planner(fixes))
	defer srv.Close()
	prompt := filepath.Join(t.TempDir(), "task.tmpl")
	if err := os.WriteFile(prompt, []byte("Task: {{.Task.ID}}"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	m := runJSON(t, "rollout", "--base-url", srv.BaseURL(), "--model", "test-model", "--tasks", tasks, "--local", tinyModule,
		"--workspaces", ws, "--group-size", "4", "--concurrency", "8", "--out", out, "--task-prompt-file", prompt,
		"--max-turns", "6", "--json", "--log-level", "warn")
	num := func(k string) float64 { v, _ := path(m, k); f, _ := v.(float64); return f }
	const episodes = 16
	if c, f := num("outcomes.completed"), num("outcomes.failed_infra"); c != episodes || f != 0 {
		t.Fatalf("completed %v, failed_infra %v; want all %d completed (the 503s retried)", c, f, episodes)
	}
	if s := num("solved.k"); s != episodes/2 {
		t.Errorf("solved %v, want %d (every other episode writes the fix)", s, episodes/2)
	}
	if num("llm.mistakes") != episodes/2 || num("model_calls.calls") == 0 || num("model_calls.overhead_p50_ms") <= 0 {
		t.Errorf("llm %v, model calls %v: want %d mistakes and timed calls", m["llm"], m["model_calls"], episodes/2)
	}
	if v, _ := path(m, "run.episodes.accounted"); v != true {
		t.Errorf("accounting does not hold: %v", m["run"])
	}
	// The export round-trips through frog's reader, and reads as chat.
	recs, err := openai.ReadShards(filepath.Join(out, "trajectories"))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != episodes || num("export.records") != episodes {
		t.Fatalf("%d records read, %v written; want %d", len(recs), num("export.records"), episodes)
	}
	groups := map[string][]openai.Record{}
	for _, r := range recs {
		groups[r.GroupID] = append(groups[r.GroupID], r)
		if r.Outcome != "completed" || r.Reward == nil || r.Advantage == nil {
			t.Fatalf("record %d: outcome %s reward %v advantage %v", r.Episode, r.Outcome, r.Reward, r.Advantage)
		}
		roles := []string{}
		for _, msg := range r.Messages {
			roles = append(roles, msg.Role)
		}
		if got, want := strings.Join(roles, " "), "system user assistant tool assistant tool assistant tool"; got != want {
			t.Errorf("record %d: roles %q, want %q", r.Episode, got, want)
		}
		if r.Messages[2].ToolCalls[0].ID != r.Messages[3].ToolCallID || len(r.Tools) == 0 || len(r.Turns) != 3 || r.PromptTokens == 0 {
			t.Errorf("record %d: tool calls and results do not pair, or tools/turns/tokens missing", r.Episode)
		}
	}
	if len(groups) != 4 {
		t.Errorf("%d groups, want 4", len(groups))
	}
	for id, g := range groups {
		var sum float64
		for _, r := range g {
			sum += *r.Advantage
			if (*r.Reward == 1) != (*r.Advantage > 0) && *r.Advantage != 0 {
				t.Errorf("group %s: reward %v with advantage %v", id, *r.Reward, *r.Advantage)
			}
		}
		if len(g) != 4 || math.Abs(sum) > 1e-6 {
			t.Errorf("group %s: %d records, advantages sum to %v; want 4 summing to 0", id, len(g), sum)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "summary.json")); err != nil {
		t.Error(err)
	}
}

// TestRolloutServerDownIsInfra: a server that passes the check and then
// answers only 500s fails every episode as an infrastructure fault, after
// retries, and never scores one.
func TestRolloutServerDownIsInfra(t *testing.T) {
	tasks, ws, _ := rolloutFixture(t, "2")
	srv := openaitest.New(func(openaitest.Request) openaitest.Reply { return openaitest.Reply{Status: 500} })
	defer srv.Close()
	out := filepath.Join(t.TempDir(), "out")
	m := runJSON(t, "rollout", "--base-url", srv.BaseURL(), "--model", "test-model", "--tasks", tasks, "--local", tinyModule,
		"--workspaces", ws, "--group-size", "2", "--out", out, "--max-retries", "1", "--max-retries-llm", "1", "--json", "--log-level", "disabled")
	num := func(k string) float64 { v, _ := path(m, k); f, _ := v.(float64); return f }
	if num("outcomes.failed_infra") != 4 || num("outcomes.completed") != 0 || num("solved.n") != 0 {
		t.Fatalf("outcomes %v, solved %v; want 4 failed_infra and nothing scored", m["outcomes"], m["solved"])
	}
	if got := srv.Requests(); got != 16 {
		t.Errorf("server got %d requests; want 16 (4 episodes × 2 sandboxes × 2 attempts of their first call)", got)
	}
	recs, err := openai.ReadShards(filepath.Join(out, "trajectories"))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.Outcome != "failed_infra" || r.Reward != nil || r.Advantage != nil {
			t.Errorf("record %d: outcome %s reward %v; want failed_infra with no reward", r.Episode, r.Outcome, r.Reward)
		}
	}
}

func TestRolloutBadInputExitsTwoBeforeAnyEpisode(t *testing.T) {
	srv := openaitest.New(nil)
	defer srv.Close()
	srv.APIKey = "sekrit"
	gone := openaitest.New(nil)
	goneURL := gone.BaseURL()
	gone.Close()
	// A store of one task (an empty one is an error of its own).
	var one bytes.Buffer
	r := synth.TaskRecord{}
	r.ID, r.Repo, r.Patch, r.TestCmd = "t", "example.com/m", "--- a/f.go\n+++ b/f.go\n", []string{"go", "test"}
	r.FailToPass, r.PassToPass = []string{"TestA"}, []string{"TestB"}
	r.Mutations = []synth.Mutation{{Op: "op", File: "f.go", Edits: []synth.Edit{{Old: "a", New: "b"}}}}
	if err := store.Write(&one, r); err != nil {
		t.Fatal(err)
	}
	tasks := filepath.Join(t.TempDir(), "tasks.jsonl")
	if err := os.WriteFile(tasks, one.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("FROG_ROLLOUT_KEY", "")
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"no base url", []string{"--model", "m"}, "--base-url: a model server is required"},
		{"unreachable", []string{"--base-url", goneURL, "--model", "test-model"}, "unreachable"},
		{"missing key", []string{"--base-url", srv.BaseURL(), "--model", "test-model", "--api-key-env", "FROG_ROLLOUT_KEY"}, "$FROG_ROLLOUT_KEY is not set"},
		{"unknown policy", []string{"--policy", "claude", "--base-url", srv.BaseURL(), "--model", "test-model"}, `--policy "claude"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			args := append([]string{"rollout", "--tasks", tasks, "--out", out, "--log-level", "disabled"}, tt.args...)
			var stdout, stderr bytes.Buffer
			err := Run(context.Background(), args, &stdout, &stderr)
			if ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("frog %s: exit %d, %v; want exit 2 saying %q", strings.Join(args, " "), ExitCode(err), err, tt.want)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("the export directory was made before the check failed")
			}
		})
	}
	t.Setenv("FROG_ROLLOUT_KEY", "sekrit")
	var stdout, stderr bytes.Buffer
	err := Run(context.Background(), []string{"rollout", "--tasks", tasks, "--out", t.TempDir() + "/o", "--base-url", srv.BaseURL(), "--model", "nosuch",
		"--api-key-env", "FROG_ROLLOUT_KEY", "--log-level", "disabled"}, &stdout, &stderr)
	if ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), `unknown model "nosuch"`) {
		t.Errorf("unknown model: exit %d, %v", ExitCode(err), err)
	}
}

func TestLLMFlagsOverrideTheConfigFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "m.json")
	os.WriteFile(file, []byte(`{"base_urls": ["http://a:1/v1"], "model": "from-file", "temperature": 0.2, "max_turns": 9}`), 0o644)
	var lo llmOptions
	fs := pflag.NewFlagSet("rollout", pflag.ContinueOnError)
	lo.flags(fs)
	if err := fs.Parse([]string{"--llm-config", file, "--model", "from-flag", "--max-inflight", "3"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := lo.resolve()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Model != "from-flag" || cfg.Temperature != 0.2 || cfg.MaxTurns != 9 || cfg.MaxInflight != 3 || cfg.BaseURLs[0] != "http://a:1/v1" {
		t.Errorf("resolved %+v; want the flags over the file over the defaults", cfg)
	}
}

// TestTrainWithAnExternalTrainer: frog train --policy openai runs the
// curriculum over a store with the scripted model and exports every
// completed group, with advantages, for the trainer; the trainer's version
// file is read into the records.
func TestTrainWithAnExternalTrainer(t *testing.T) {
	tasks, ws, fixes := rolloutFixture(t, "4")
	srv := openaitest.New(planner(fixes))
	defer srv.Close()
	tmp := t.TempDir()
	prompt, vf, dir := filepath.Join(tmp, "task.tmpl"), filepath.Join(tmp, "version"), filepath.Join(tmp, "run")
	os.WriteFile(prompt, []byte("Task: {{.Task.ID}}"), 0o644)
	os.WriteFile(vf, []byte("7"), 0o644)
	m := runJSON(t, "train", "--policy", "openai", "--base-url", srv.BaseURL(), "--model", "test-model", "--tasks", tasks, "--local", tinyModule,
		"--workspaces", ws, "--episodes", "8", "--group-size", "2", "--groups-per-update", "2", "--concurrency", "4", "--sandbox", "process",
		"--task-prompt-file", prompt, "--policy-version-file", vf, "--max-turns", "6", "--run-dir", dir, "--json", "--log-level", "warn")
	num := func(k string) float64 { v, _ := path(m, k); f, _ := v.(float64); return f }
	if v, _ := path(m, "episodes.accounted"); v != true || num("episodes.admitted") != 8 {
		t.Fatalf("episodes %v: want 8 admitted and accounted", m["episodes"])
	}
	completed := num("episodes.completed")
	if completed == 0 || num("exported") != completed || num("learner.updates") == 0 {
		t.Fatalf("exported %v of %v completed after %v updates; want all of them", num("exported"), completed, num("learner.updates"))
	}
	recs, err := openai.ReadShards(filepath.Join(dir, "trajectories"))
	if err != nil {
		t.Fatal(err)
	}
	if float64(len(recs)) != completed {
		t.Fatalf("%d records read back, want %v", len(recs), completed)
	}
	for _, r := range recs {
		if r.Advantage == nil || r.Reward == nil || r.TrainerVersion != 7 || r.GroupSize != 2 || len(r.Messages) < 4 {
			t.Errorf("record %d: advantage %v reward %v trainer version %d group size %d, %d messages", r.Episode, r.Advantage, r.Reward, r.TrainerVersion, r.GroupSize, len(r.Messages))
		}
	}
	metrics, err := os.ReadFile(filepath.Join(dir, "metrics.jsonl"))
	if err != nil || !strings.Contains(string(metrics), `"exported":`) {
		t.Errorf("metrics.jsonl has no update lines with the export's count: %v %.200s", err, metrics)
	}
}
