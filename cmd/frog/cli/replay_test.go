package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rs/zerolog"

	"github.com/frognano/frog/actors"
	"github.com/frognano/frog/env/replay"
	"github.com/frognano/frog/run/taskenv"
)

// replayStore synthesizes a small store of real tasks from the tiny
// module, with the real caches and no network.
func replayStore(tb testing.TB, dir string) (store, tiny string) {
	tb.Helper()
	tiny, caches := tinyAndCaches(tb)
	for _, kv := range append(caches, "GOPROXY=off", "GOTOOLCHAIN=local") {
		k, v, _ := strings.Cut(kv, "=")
		tb.Setenv(k, v)
	}
	store = filepath.Join(dir, "tasks.jsonl")
	runFrog(tb, "synth", "--source", tiny, "--n", "6", "--out", store, "--min-timeout", "5s", "--log-level", "warn")
	return store, tiny
}

// runFrog runs the command line and returns its stdout; an error fails tb.
func runFrog(tb testing.TB, args ...string) string {
	tb.Helper()
	var out, errb bytes.Buffer
	if err := Run(context.Background(), args, &out, &errb); err != nil {
		tb.Fatalf("frog %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	return out.String()
}

// episode is what an episode did, as its trajectory line says: the
// candidates it tried, in order, and its reward.
type episode struct {
	Tried  []string
	Reward float64
}

// episodes reads the trajectories of frog eval --trajectories under dir,
// by task.
func episodes(t *testing.T, dir string) map[string]episode {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "shard-*.jsonl"))
	if len(files) == 0 {
		t.Fatalf("no trajectories under %s", dir)
	}
	out := map[string]episode{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 1<<26)
		for sc.Scan() {
			var rec struct {
				Task   string  `json:"task"`
				Kind   string  `json:"kind"`
				Reward float64 `json:"reward"`
				Steps  []struct {
					Action json.RawMessage `json:"action"`
					Result struct {
						Detail struct {
							Candidates []struct {
								File, Op string
								Line     int
							} `json:"candidates"`
						} `json:"detail"`
					} `json:"result"`
				} `json:"steps"`
			}
			if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
				t.Fatal(err)
			}
			if rec.Kind != "completed" {
				t.Errorf("%s: task %s: episode %s", f, rec.Task, rec.Kind)
			}
			var list []string
			e := episode{Reward: rec.Reward}
			for _, s := range rec.Steps {
				var a struct {
					Tool string `json:"tool"`
					Args struct {
						Candidates []int `json:"candidates"`
					} `json:"args"`
				}
				json.Unmarshal(s.Action, &a)
				switch a.Tool {
				case "candidates":
					list = list[:0]
					for _, c := range s.Result.Detail.Candidates {
						list = append(list, fmt.Sprintf("%s:%d %s", c.File, c.Line, c.Op))
					}
				case "try":
					for _, id := range a.Args.Candidates {
						e.Tried = append(e.Tried, list[id])
					}
				}
			}
			out[rec.Task] = e
		}
	}
	return out
}

// TestReplayAgreesWithReal plays the same greedy policies (the untrained
// prior and fl-greedy) on the same real tasks, once in process sandboxes
// and once against the table frog tabulate made of them: every task's
// episode must try the same candidates in the same order and end with the
// same reward, so the solve rate within any k tries is identical.
func TestReplayAgreesWithReal(t *testing.T) {
	if testing.Short() {
		t.Skip("synthesizes and plays real tasks")
	}
	dir := t.TempDir()
	store, tiny := replayStore(t, dir)
	table := filepath.Join(dir, "table.jsonl")
	ws := filepath.Join(dir, "ws")
	runFrog(t, "tabulate", "--tasks", store, "--out", table, "--local", tiny, "--workspaces", ws, "--concurrency", "4", "--log-level", "warn")

	f, err := os.Open(table)
	if err != nil {
		t.Fatal(err)
	}
	tab, err := replay.Decode(f, table)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(tab.Records) < 4 {
		t.Fatalf("%d tasks tabulated, left out %v", len(tab.Records), tab.LeftOut)
	}

	policies := "prior,fl-greedy"
	real := runFrog(t, "eval", "--tasks", store, "--policy", policies, "--local", tiny, "--workspaces", ws, "--ceiling=false",
		"--concurrency", "4", "--trajectories", filepath.Join(dir, "real"), "--json", "--log-level", "warn")
	rep := runFrog(t, "eval", "--env", "replay", "--table", table, "--policy", policies,
		"--concurrency", "4", "--trajectories", filepath.Join(dir, "replay"), "--json", "--log-level", "warn")
	if !strings.Contains(rep, `"policy":"prior (replay)"`) || !strings.Contains(rep, `"replay":{"table":`) {
		t.Errorf("the replay's report does not name it a replay:\n%s", rep)
	}
	for _, p := range strings.Split(policies, ",") {
		got := episodes(t, filepath.Join(dir, "replay", policyDirName(replayName(p))))
		want := episodes(t, filepath.Join(dir, "real", p))
		if len(want) != len(tab.Records) {
			t.Errorf("%s: %d real episodes of %d tasks", p, len(want), len(tab.Records))
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: replay against real, by task (-real +replay):\n%s", p, diff)
		}
		solved := 0
		for _, e := range want {
			solved += int(e.Reward)
		}
		t.Logf("%s: %d of %d tasks solved, alike in both", p, solved, len(want))
	}
	var r, p struct {
		Policies []struct {
			Policy  string `json:"policy"`
			AtTries []struct {
				Tries int `json:"tries"`
				K     int `json:"k"`
			} `json:"solved_at_tries"`
		} `json:"policies"`
	}
	if err := json.Unmarshal([]byte(real), &r); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(rep), &p); err != nil {
		t.Fatal(err)
	}
	for i := range r.Policies {
		r.Policies[i].Policy = replayName(r.Policies[i].Policy)
	}
	if diff := cmp.Diff(r.Policies, p.Policies); diff != "" {
		t.Errorf("solved within k tries (-real +replay):\n%s", diff)
	}

	// frog train plays the same table with the learner and the curriculum
	// of a real run, and says it was a replay.
	sum := runFrog(t, "train", "--env", "replay", "--table", table, "--episodes", "64", "--group-size", "4", "--device", "cpu",
		"--run-dir", filepath.Join(dir, "run"), "--json", "--log-level", "warn")
	for _, want := range []string{`"accounted":true`, `"replay":{"table":`, `"completed":64`} {
		if !strings.Contains(sum, want) {
			t.Errorf("frog train --env replay: the summary lacks %s:\n%s", want, sum)
		}
	}
	// So does the rounds curriculum: its calibration episodes are among
	// the budget's.
	sum = runFrog(t, "train", "--env", "replay", "--table", table, "--episodes", "64", "--group-size", "4", "--device", "cpu",
		"--curriculum", "rounds", "--round-size", "4", "--round-updates", "2", "--run-dir", filepath.Join(dir, "run-rounds"), "--json", "--log-level", "warn")
	for _, want := range []string{`"accounted":true`, `"completed":64`, `"kind":"rounds"`, `"calibration_episodes":`} {
		if !strings.Contains(sum, want) {
			t.Errorf("frog train --env replay --curriculum rounds: the summary lacks %s:\n%s", want, sum)
		}
	}
	var out, errb bytes.Buffer
	if err := Run(context.Background(), []string{"train", "--env", "replay", "--table", table, "--keep", "--run-dir", filepath.Join(dir, "run2")}, &out, &errb); err == nil || !strings.Contains(err.Error(), "not replayable") {
		t.Errorf("frog train --env replay --keep: %v, want it refused as not replayable", err)
	}

	// What the table cannot answer is refused before anything plays.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--policy", "fl-feedback"}, "keeps partial fixes"},
		{[]string{"--ceiling"}, "not replayable"},
		{[]string{"--tasks", store}, "the table holds its tasks"},
	} {
		var out, errb bytes.Buffer
		err := Run(context.Background(), append([]string{"eval", "--env", "replay", "--table", table}, tc.args...), &out, &errb)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("eval --env replay %s: %v, want an error saying %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
	keys := make([]string, 0, len(tab.LeftOut))
	for k := range tab.LeftOut {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	t.Logf("table: %d tasks, left out %v", len(tab.Records), keys)
}

// BenchmarkReplayAgainstReal plays the untrained prior, greedy, on the
// same real tasks of the tiny module: against their replay table, in
// process sandboxes with the outcome cache (warm after the first pass, as
// in a run that replays its tasks) and without it. It reports episodes/s.
func BenchmarkReplayAgainstReal(b *testing.B) {
	dir := b.TempDir()
	store, tiny := replayStore(b, dir)
	table := filepath.Join(dir, "table.jsonl")
	ws := filepath.Join(dir, "ws")
	runFrog(b, "tabulate", "--tasks", store, "--out", table, "--local", tiny, "--workspaces", ws, "--concurrency", "4", "--log-level", "warn")
	recs, err := taskenv.LoadStore("--tasks", store, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	pol, err := evalPolicy("prior", 1)
	if err != nil {
		b.Fatal(err)
	}
	cfg := actors.DefaultConfig()
	cfg.Concurrency, cfg.MaxTries, cfg.MaxSteps = 4, 10, 22
	play := func(b *testing.B, tasks []actors.EvalTask, samples int, deps actors.Deps) {
		eps := 0
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			rep, err := actors.EvaluateWhole(context.Background(), actors.EvalConfig{Run: cfg, Tasks: tasks, Samples: samples}, pol, deps)
			if err != nil {
				b.Fatal(err)
			}
			if rep.Outcomes.FailedInfra > 0 {
				b.Fatalf("%d episodes failed", rep.Outcomes.FailedInfra)
			}
			eps += rep.Episodes
		}
		b.ReportMetric(float64(eps)/b.Elapsed().Seconds(), "episodes/s")
	}
	b.Run("replay", func(b *testing.B) {
		rp, err := openReplay(table)
		if err != nil {
			b.Fatal(err)
		}
		play(b, replayTasks(rp.Table(), 0), 64, actors.Deps{Provider: rp, Harness: rp, Log: zerolog.Nop()})
	})
	for _, noCache := range []bool{false, true} {
		name := "real"
		if noCache {
			name = "real-no-outcome-cache"
		}
		b.Run(name, func(b *testing.B) {
			spec := sandboxSpec{sandboxOptions: sandboxOptions{Kind: "process"}, Run: "bench-" + name, Concurrency: 4}
			tenv, prov, release, err := openTaskEnv(context.Background(), taskOptions{Workspaces: ws, Locals: []string{tiny}, NoCache: noCache}, spec, zerolog.Nop())
			if err != nil {
				b.Fatal(err)
			}
			defer release()
			tasks, _, err := tenv.Check(context.Background(), recs, 4, zerolog.Nop())
			if err != nil {
				b.Fatal(err)
			}
			play(b, tasks, 1, actors.Deps{Provider: prov, Harness: tenv.Harness, Log: zerolog.Nop()})
		})
	}
}

// TestReplayUsage: bad tables and flags of a replay are usage errors (exit
// code 2) that say what is wrong, before anything runs.
func TestReplayUsage(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.jsonl")
	cut := filepath.Join(dir, "cut.jsonl")
	store := filepath.Join(dir, "store.jsonl")
	hdr := `{"kind":"header","format":1,"frog_version":"x","store":"s","store_sha256":"h","settings":{"protocol":{}}}` + "\n"
	for path, data := range map[string]string{
		empty: hdr + `{"kind":"end","tasks":0,"left_out":{"quarantined: gone":2}}` + "\n",
		cut:   hdr,
		store: `{"instance_id":"a"}` + "\n",
	} {
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"eval", "--env", "bogus"}, `--env "bogus": want real or replay`},
		{[]string{"eval", "--env", "replay"}, "--table is required"},
		{[]string{"eval", "--table", empty}, "only with --env replay"},
		{[]string{"eval", "--env", "replay", "--table", filepath.Join(dir, "nosuch")}, "no such file"},
		{[]string{"eval", "--env", "replay", "--table", empty}, "no task to replay (2 left out"},
		{[]string{"eval", "--env", "replay", "--table", cut}, "cut short"},
		{[]string{"eval", "--env", "replay", "--table", store}, "not a replay table"},
		{[]string{"eval", "--env", "replay", "--table", empty, "--sample", "3"}, "--sample is not supported"},
		{[]string{"tabulate", "--out", cut}, "a task store is required"},
		{[]string{"tabulate", "--tasks", store}, "--out: the table's file is required"},
		{[]string{"train", "--env", "replay", "--run-dir", filepath.Join(dir, "r")}, "--table is required"},
		{[]string{"train", "--env", "replay", "--table", cut, "--run-dir", filepath.Join(dir, "r")}, "cut short"},
		{[]string{"train", "--env", "replay", "--table", empty, "--heldout", store, "--run-dir", filepath.Join(dir, "r")}, "--heldout-table"},
		{[]string{"train", "--env", "replay", "--table", empty, "--policy", "openai", "--run-dir", filepath.Join(dir, "r")}, "built-in policy"},
	} {
		var out, errb bytes.Buffer
		err := Run(context.Background(), tc.args, &out, &errb)
		if err == nil || !strings.Contains(err.Error(), tc.want) || ExitCode(err) != 2 {
			t.Errorf("frog %s: %v (exit %d), want a usage error saying %q", strings.Join(tc.args, " "), err, ExitCode(err), tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "r")); err == nil {
		t.Error("a refused replay run made its run directory")
	}
}
