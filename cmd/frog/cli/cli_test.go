package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/frognano/frog/actors"
	"github.com/frognano/frog/policy/neural"
	"github.com/frognano/frog/policy/openai/openaitest"
	"github.com/frognano/frog/run"
	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"frog": func() { os.Exit(Main()) },
		// ckpt-loop DIR saves ever larger checkpoints into DIR until killed;
		// ckpt-load DIR loads the latest and prints its version.
		"ckpt-loop": func() {
			c := run.NewCheckpoints(os.Args[1], 3)
			for v := int64(1); ; v++ {
				blob := bytes.Repeat([]byte{byte(v)}, 1<<20+int(v%7)*4096)
				if err := c.Save(actors.Checkpoint{Progress: actors.Progress{Version: v, Updates: v}, Learner: blob}); err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(1)
				}
			}
		},
		// fake-llm FILE [LATENCY] serves a scripted model (test-model)
		// until killed, its API root written to FILE once it listens: each
		// answer, after LATENCY (default 100ms), views go.mod, and the
		// sixth submits.
		"fake-llm": func() {
			lat := 100 * time.Millisecond
			if len(os.Args) > 2 {
				d, err := time.ParseDuration(os.Args[2])
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(2)
				}
				lat = d
			}
			srv := openaitest.New(func(r openaitest.Request) openaitest.Reply {
				turns := 0
				for _, m := range r.Messages {
					if m.Role == "assistant" {
						turns++
					}
				}
				if turns >= 5 {
					return openaitest.Reply{ToolCalls: []openaitest.ToolCall{openaitest.Call("submit", "{}")}}
				}
				return openaitest.Reply{ToolCalls: []openaitest.ToolCall{openaitest.Call("view", `{"path": "go.mod"}`)}}
			})
			srv.Latency = lat
			if err := run.WriteFileAtomic(os.Args[1], []byte(srv.BaseURL())); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			select {}
		},
		"ckpt-load": func() {
			ck, err := run.Load(os.Args[1])
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			if len(ck.Skipped) > 0 {
				fmt.Fprintf(os.Stderr, "latest does not load: %v\n", ck.Skipped)
				os.Exit(1)
			}
			for _, b := range ck.Learner {
				if b != byte(ck.Version) {
					fmt.Fprintf(os.Stderr, "%s: checkpoint %d holds bytes of another\n", ck.File, ck.Version)
					os.Exit(1)
				}
			}
			fmt.Printf("version %d whole\n", ck.Version)
			os.Exit(0)
		},
	})
}

// TestScripts runs testdata/script/*.txtar: frog as a user types it.
func TestScripts(t *testing.T) {
	tiny, caches := tinyAndCaches(t)
	testscript.Run(t, testscript.Params{Dir: "testdata/script", Condition: scriptCondition, Setup: func(e *testscript.Env) error {
		// frog synth runs the go command: give it the real caches, and
		// no network.
		e.Setenv("TINY", tiny)
		for _, kv := range caches {
			k, v, _ := strings.Cut(kv, "=")
			e.Setenv(k, v)
		}
		e.Setenv("GOPROXY", "off")
		e.Setenv("GOTOOLCHAIN", "local")
		return nil
	}})
}

// tinyAndCaches is the absolute path of tinyModule, which real-task tests
// synthesize from, and the go command's caches as KEY=VALUE (GOCACHE,
// GOMODCACHE), so that a test's go commands share them.
func tinyAndCaches(tb testing.TB) (tiny string, caches []string) {
	tb.Helper()
	tiny, err := filepath.Abs(tinyModule)
	if err != nil {
		tb.Fatal(err)
	}
	goenv, err := exec.Command("go", "env", "GOCACHE", "GOMODCACHE").Output()
	if err != nil {
		tb.Fatalf("go env: %v", err)
	}
	dirs := strings.Fields(string(goenv))
	if len(dirs) != 2 {
		tb.Fatalf("go env GOCACHE GOMODCACHE: %q", goenv)
	}
	return tiny, []string{"GOCACHE=" + dirs[0], "GOMODCACHE=" + dirs[1]}
}

// scriptCondition answers the scripts' own conditions: [tmpfs], whether
// a script can mount a tmpfs in a mount namespace of its own (unshare -m:
// root with CAP_SYS_ADMIN, as on frog's machines; not in every container).
// Under CI=true a machine that cannot is an error, not a skip.
func scriptCondition(cond string) (bool, error) {
	switch cond {
	case "tmpfs":
		dir, err := os.MkdirTemp("", "frog-tmpfs-")
		if err != nil {
			return false, err
		}
		defer os.Remove(dir)
		out, err := exec.Command("unshare", "-m", "mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", dir).CombinedOutput()
		if err != nil && os.Getenv("CI") == "true" {
			return false, fmt.Errorf("CI=true, and no tmpfs can be mounted in a mount namespace here (unshare -m mount -t tmpfs: %v: %s)", err, bytes.TrimSpace(out))
		}
		return err == nil, nil
	}
	return false, fmt.Errorf("unknown condition %q", cond)
}

func runJSON(t *testing.T, args ...string) map[string]any {
	t.Helper()
	var out, errb bytes.Buffer
	if err := Run(context.Background(), args, &out, &errb); err != nil {
		t.Fatalf("frog %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	var m map[string]any
	if err := json.Unmarshal(out.Bytes(), &m); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, out.String())
	}
	if n := bytes.Count(bytes.TrimSpace(out.Bytes()), []byte("\n")); n != 0 {
		t.Fatalf("stdout has %d extra lines; want one JSON object", n)
	}
	return m
}

// path looks up a dotted path ("episodes.admitted") in decoded JSON.
func path(m map[string]any, p string) (any, bool) {
	var v any = m
	for _, k := range strings.Split(p, ".") {
		o, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = o[k]; !ok {
			return nil, false
		}
	}
	return v, true
}

func TestSimJSONSummary(t *testing.T) {
	m := runJSON(t, "sim", "--episodes", "3000", "--concurrency", "200", "--seed", "1", "--json", "--no-run-dir", "--log-level", "disabled")
	for _, k := range []string{"episodes.admitted", "episodes.completed", "episodes.failed_infra", "episodes.cancelled",
		"episodes_per_second", "learner.updates", "learner.max_staleness_seen", "policy_server.mean_batch",
		"curriculum.final_difficulty", "sim.final_skill", "peak_rss_bytes"} {
		if _, ok := path(m, k); !ok {
			t.Errorf("summary lacks %s", k)
		}
	}
	num := func(k string) float64 { v, _ := path(m, k); f, _ := v.(float64); return f }
	if a, c, f, x := num("episodes.admitted"), num("episodes.completed"), num("episodes.failed_infra"), num("episodes.cancelled"); a != 3000 || a != c+f+x {
		t.Errorf("admitted %v != completed %v + failed_infra %v + cancelled %v (want 3000)", a, c, f, x)
	}
}

func TestSimIsReproducibleWithOneWorker(t *testing.T) {
	args := []string{"sim", "--episodes", "400", "--workers", "1", "--seed", "9", "--fault-rate", "0.1", "--json", "--no-run-dir", "--log-level", "disabled"}
	strip := func(m map[string]any) map[string]any {
		for _, k := range []string{"elapsed_seconds", "episodes_per_second", "peak_rss_bytes"} {
			delete(m, k)
		}
		if l, ok := m["learner"].(map[string]any); ok {
			delete(l, "update_seconds")
		}
		return m
	}
	a, b := strip(runJSON(t, args...)), strip(runJSON(t, args...))
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("two runs with one worker and one seed differ (-first +second):\n%s", diff)
	}
}

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{"950MiB": 950 << 20, "1GiB": 1 << 30, "512M": 512 << 20, "1048576": 1 << 20, "1.5GiB": 3 << 29, "2GB": 2e9} {
		if got, err := parseBytes(in); err != nil || got != want {
			t.Errorf("parseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "lots", "-1GiB", "0"} {
		if _, err := parseBytes(in); err == nil {
			t.Errorf("parseBytes(%q) accepted", in)
		}
	}
}

// TestEvalPriorIsTrainsStart checks that --policy prior is the network
// frog train starts from at the same seed, greedy, and that the seed
// reaches it.
func TestEvalPriorIsTrainsStart(t *testing.T) {
	p, err := evalPolicy("prior", 1)
	if err != nil {
		t.Fatal(err)
	}
	np, ok := p.(*neural.Policy)
	if !ok {
		t.Fatalf("prior is a %T, want a *neural.Policy", p)
	}
	if !np.Greedy {
		t.Error("prior is not greedy")
	}
	cfg := neural.DefaultConfig()
	if want := neural.Init(cfg.Dims, 1, cfg.Prior); !slices.Equal(np.Params, want) {
		t.Error("prior's weights are not neural.Init's at seed 1 with the prior")
	}
	p2, err := evalPolicy("prior", 2)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(p2.(*neural.Policy).Params, np.Params) {
		t.Error("seeds 1 and 2 gave the same weights")
	}
}
