package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rs/zerolog"

	"github.com/frognano/frog/actors"
	"github.com/frognano/frog/env/replay"
	"github.com/frognano/frog/policy/neural"
	"github.com/frognano/frog/run/experiment"
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
		{[]string{"sim", "--env", "replay", "--run-dir", filepath.Join(dir, "r")}, "--table is required"},
		{[]string{"sim", "--env", "bogus"}, `--env "bogus": want sim or replay`},
		{[]string{"sim", "--table", empty}, "--table: only with --env replay"},
		{[]string{"sim", "--env", "replay", "--table", cut, "--run-dir", filepath.Join(dir, "r")}, "cut short"},
		{[]string{"sim", "--env", "replay", "--table", empty, "--tasks", "sim-bins"}, "the simulation's, not a replay's"},
		{[]string{"experiment", "curriculum", "--mode", "replay", "--dir", filepath.Join(dir, "r")}, "--table and --heldout-table are required"},
		{[]string{"experiment", "curriculum", "--table", empty, "--dir", filepath.Join(dir, "r")}, "only with --mode replay"},
		{[]string{"experiment", "curriculum", "--mode", "replay", "--table", cut, "--heldout-table", cut, "--dir", filepath.Join(dir, "r")}, "cut short"},
		{[]string{"experiment", "curriculum", "--mode", "replay", "--table", empty, "--heldout-table", empty, "--tasks", store, "--dir", filepath.Join(dir, "r")}, "the tables hold the tasks"},
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

// TestReplayTrajectoryDirHasNoSpaces: a policy's --trajectories directory
// is named without spaces, a replay's too ("prior (replay)" was a
// directory "prior (replay)").
func TestReplayTrajectoryDirHasNoSpaces(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"fl-greedy", "fl-greedy"},
		{replayName("prior"), "prior-replay"},
		{replayName("runs/train-1"), "runs_train-1-replay"},
		{"./runs/train 2/checkpoints/ck-10.bin", "runs_train-2_checkpoints_ck-10.bin"},
	} {
		if got := policyDirName(tc.name); got != tc.want {
			t.Errorf("policyDirName(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestReplayEvalSaysNoTaskWasChecked: frog eval --env replay checks no
// task (frog tabulate did), so its report says so and not "quarantined 0".
func TestReplayEvalSaysNoTaskWasChecked(t *testing.T) {
	var buf bytes.Buffer
	rep := evalReport{Replay: &replay.Report{Table: "t.jsonl", Tasks: 5, LeftOut: 2}}
	if err := rep.print(&buf, false); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if strings.Contains(out, "quarantined") || !strings.Contains(out, "5 from the table, checked when it was made (2 of the store's left out then); none checked here") {
		t.Errorf("frog eval --env replay's report:\n%s", out)
	}
	buf.Reset()
	if err := (evalReport{Quarantined: []string{"a"}}).print(&buf, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "quarantined  1") {
		t.Errorf("frog eval's report of real tasks:\n%s", buf.String())
	}
}

// splitTable writes the first n tasks of the table at path to train and
// the rest to heldout, each a table of its own.
func splitTable(t *testing.T, path string, n int, train, heldout string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	tab, err := replay.Decode(f, path)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(tab.Records) <= n {
		t.Fatalf("%d tasks tabulated, left out %v: want more than %d", len(tab.Records), tab.LeftOut, n)
	}
	for file, recs := range map[string][]replay.Record{train: tab.Records[:n], heldout: tab.Records[n:]} {
		var buf bytes.Buffer
		part := replay.Table{Header: tab.Header, Records: recs}
		if err := part.Encode(&buf); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReplaySimAndExperiment plays the tiny module's tasks, tabulated, with
// frog sim --env replay and frog experiment curriculum --mode replay: each
// plays every episode it admits against the table (none not replayable),
// and names itself a replay in its summary or table. frog tabulate's table
// is readable by all, and frog eval --env replay's trajectories are in a
// directory without spaces.
func TestReplaySimAndExperiment(t *testing.T) {
	if testing.Short() {
		t.Skip("synthesizes and tabulates real tasks")
	}
	dir := t.TempDir()
	store, tiny := replayStore(t, dir)
	table := filepath.Join(dir, "table.jsonl")
	runFrog(t, "tabulate", "--tasks", store, "--out", table, "--local", tiny, "--workspaces", filepath.Join(dir, "ws"), "--concurrency", "4", "--log-level", "warn")
	if st, err := os.Stat(table); err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("the table's mode: %v (%v), want 0644 as frog's other outputs", st.Mode().Perm(), err)
	}
	runFrog(t, "eval", "--env", "replay", "--table", table, "--policy", "prior", "--trajectories", filepath.Join(dir, "traj"), "--log-level", "warn")
	if _, err := os.Stat(filepath.Join(dir, "traj", "prior-replay")); err != nil {
		entries, _ := os.ReadDir(filepath.Join(dir, "traj"))
		t.Errorf("frog eval --env replay --trajectories: %v; the directory holds %v", err, entries)
	}

	sum := runFrog(t, "sim", "--env", "replay", "--table", table, "--episodes", "96", "--group-size", "4", "--concurrency", "8",
		"--device", "cpu", "--run-dir", filepath.Join(dir, "sim"), "--json", "--log-level", "warn")
	var s struct {
		Episodes actors.EpisodeCounts `json:"episodes"`
		Learner  actors.LearnerStats  `json:"learner"`
		Replay   *replay.Report       `json:"replay"`
		Sim      any                  `json:"sim"`
		Config   struct {
			Replay simReplay `json:"replay"`
		} `json:"config"`
	}
	if err := json.Unmarshal([]byte(sum), &s); err != nil {
		t.Fatalf("frog sim --env replay --json: %v\n%s", err, sum)
	}
	switch {
	case s.Replay == nil || s.Replay.Table != table || s.Replay.Answered == 0 || len(s.Replay.NotReplayable) > 0:
		t.Errorf("frog sim --env replay: replay %+v, want every call answered from %s", s.Replay, table)
	case !s.Episodes.Accounted || s.Episodes.Completed != 96 || s.Episodes.FailedInfra != 0:
		t.Errorf("frog sim --env replay: episodes %+v, want 96 completed", s.Episodes)
	case s.Learner.Updates == 0:
		t.Errorf("frog sim --env replay: no learner update (%+v)", s.Learner)
	case s.Sim != nil:
		t.Errorf("frog sim --env replay reports a simulated agent: %v", s.Sim)
	case s.Config.Replay.Env != envReplay || s.Config.Replay.Table != table:
		t.Errorf("frog sim --env replay: config %+v", s.Config.Replay)
	}
	text := runFrog(t, "sim", "--env", "replay", "--table", table, "--episodes", "16", "--group-size", "4", "--device", "cpu", "--no-run-dir", "--log-level", "warn")
	if !strings.HasPrefix(text, "replay of "+table) {
		t.Errorf("frog sim --env replay's summary does not start by naming the replay:\n%s", text)
	}

	train, held := filepath.Join(dir, "train.table.jsonl"), filepath.Join(dir, "heldout.table.jsonl")
	splitTable(t, table, 3, train, held)
	exp := filepath.Join(dir, "exp")
	out := runFrog(t, "experiment", "curriculum", "--mode", "replay", "--table", train, "--heldout-table", held, "--strategies", "frontier,uniform,uniform:refill",
		"--seeds", "2", "--budget", "64", "--points", "2", "--group-size", "4", "--concurrency", "8", "--device", "cpu", "--start", "scratch",
		"--dir", exp, "--json", "--log-level", "warn")
	var tab struct {
		Mode    string `json:"mode"`
		Heldout int    `json:"heldout_tasks"`
		Rows    []struct {
			Strategy string  `json:"strategy"`
			Seeds    int     `json:"seeds"`
			CurveX   []int64 `json:"curve_executions"`
			Distinct struct {
				Mean float64 `json:"mean"`
			} `json:"distinct_tasks"`
		} `json:"strategies"`
	}
	if err := json.Unmarshal([]byte(out), &tab); err != nil {
		t.Fatalf("frog experiment --mode replay --json: %v\n%s", err, out)
	}
	if tab.Mode != envReplay || len(tab.Rows) != 3 || tab.Rows[2].Strategy != "uniform:refill" || tab.Heldout < 1 {
		t.Fatalf("frog experiment --mode replay: %s", out)
	}
	for _, r := range tab.Rows {
		if r.Seeds != 2 || r.Distinct.Mean < 1 {
			t.Errorf("frog experiment --mode replay: arm %s: %d seeds, %.1f distinct tasks; want 2 seeds and some tasks", r.Strategy, r.Seeds, r.Distinct.Mean)
		}
	}
	var cfg struct {
		Config experiment.Options `json:"config"`
	}
	if data, err := os.ReadFile(filepath.Join(exp, "config.json")); err != nil || json.Unmarshal(data, &cfg) != nil ||
		cfg.Config.Start != neural.StartScratch || cfg.Config.Tables == nil || cfg.Config.Tables.Learner.Prior {
		t.Errorf("frog experiment --mode replay --start scratch: config.json %s (%v); want start scratch, no prior", data, err)
	}
	if len(tab.Rows) > 0 && !slices.Equal(tab.Rows[0].CurveX, []int64{0, 32, 64}) {
		t.Errorf("frog experiment --mode replay: curve at %v episodes, want 0, 32, 64", tab.Rows[0].CurveX)
	}
	txt, err := os.ReadFile(filepath.Join(exp, "table.txt"))
	if err != nil || !strings.HasPrefix(string(txt), "curriculum experiment (replay): budget 64 episodes per run") {
		t.Errorf("table.txt (%v):\n%s", err, txt)
	}
}
