package gotask

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/env/envtest"
	"github.com/frognano/frog/env/process"
	"github.com/frognano/frog/synth"
	"github.com/frognano/frog/synth/source"
	"github.com/frognano/frog/synth/store"
)

const words = "../synth/validate/testdata/words"

var oracleStore struct {
	sync.Mutex
	recs []synth.TaskRecord
	mods []source.Module
}

// oracleTasks synthesizes the tasks of two local modules (tiny and words,
// single and combined mutants) into a store and loads it back, once per
// test binary, with the modules it came from.
func oracleTasks(t *testing.T) ([]synth.TaskRecord, []source.Module) {
	t.Helper()
	oracleStore.Lock()
	defer oracleStore.Unlock()
	if oracleStore.recs != nil {
		return oracleStore.recs, oracleStore.mods
	}
	var mods []source.Module
	for _, d := range []string{tinyModule, words} {
		m, err := source.Local(d)
		if err != nil {
			t.Fatal(err)
		}
		mods = append(mods, m)
	}
	s := newSynth(t, mods, source.Config{})
	path := filepath.Join(t.TempDir(), "tasks.jsonl")
	if err := s.Generate(context.Background(), 0, func(r synth.TaskRecord) error { return store.Append(path, r) }); !errors.Is(err, source.ErrExhausted) {
		t.Fatalf("Generate = %v, want ErrExhausted", err)
	}
	recs, err := store.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	oracleStore.recs, oracleStore.mods = recs, mods
	return recs, mods
}

// oracleSample picks, per module, a few single tasks and every combined one
// (capped), so the oracle covers both kinds in both modules.
func oracleSample(t *testing.T, recs []synth.TaskRecord, perModule int) []synth.TaskRecord {
	t.Helper()
	var out []synth.TaskRecord
	count := map[[2]any]int{}
	for _, r := range recs {
		k := [2]any{r.Repo, r.Features.K > 1}
		if count[k] < perModule {
			count[k]++
			out = append(out, r)
		}
	}
	for _, repo := range []string{"example.com/tiny", "example.com/words"} {
		for _, combined := range []bool{false, true} {
			if count[[2]any{repo, combined}] == 0 {
				t.Fatalf("no %s task with combined=%v among %d", repo, combined, len(recs))
			}
		}
	}
	return out
}

func newWorkspaces(t *testing.T, mods []source.Module) *Workspaces {
	t.Helper()
	ws, err := NewWorkspaces(t.TempDir(), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mods {
		ws.AddLocal(m)
	}
	return ws
}

func oracleCases(t *testing.T, ws *Workspaces, recs []synth.TaskRecord) []envtest.OracleTask {
	t.Helper()
	var out []envtest.OracleTask
	for i := range recs {
		task := recs[i].Task
		fixed, err := ws.Fixed(context.Background(), &task)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, envtest.OracleTask{Task: &task, Fixed: fixed})
	}
	return out
}

func TestOracleProcess(t *testing.T) {
	recs, mods := oracleTasks(t)
	ws := newWorkspaces(t, mods)
	prov := processProvider(t, ws)
	h := NewHarness(ws, HarnessConfig{})
	envtest.RunOracle(t, prov, h, oracleCases(t, ws, oracleSample(t, recs, 2)))
}

// TestOracleDocker is the oracle in Docker sandboxes, each task laid out
// from its template under the mounted workspace root. A go test costs
// seconds in a container: one single and one combined task of each module.
func TestOracleDocker(t *testing.T) {
	recs, mods := oracleTasks(t)
	ws := newWorkspaces(t, mods)
	prov := dockerProvider(t, ws)
	h := NewHarness(ws, HarnessConfig{})
	envtest.RunOracle(t, prov, h, oracleCases(t, ws, oracleSample(t, recs, 1)))
}

func TestWorkspaceTemplates(t *testing.T) {
	recs, mods := oracleTasks(t)
	ws := newWorkspaces(t, mods)
	ctx := context.Background()
	r := recs[0]
	a, err := ws.Template(ctx, &r.Task)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ws.Template(ctx, &r.Task)
	if err != nil || a != b {
		t.Fatalf("second Template = %q, %v; want the first, %q", b, err, a)
	}
	// A task whose edits no longer apply is an error naming it, and so is
	// one whose module is unknown.
	bad := r.Task
	bad.ID = "bad.edits"
	bad.Mutations = slices.Clone(bad.Mutations)
	bad.Mutations[0].Edits = []synth.Edit{{Offset: 0, Old: "no such text", New: "x"}}
	if _, err := ws.Template(ctx, &bad); err == nil || !containsAll(err.Error(), "bad.edits", "do not apply") {
		t.Errorf("Template of a task whose edits do not apply: %v", err)
	}
	gone := r.Task
	gone.ID, gone.Repo, gone.Version = "gone.module", "example.com/nowhere", ""
	if _, err := ws.Template(ctx, &gone); err == nil || !containsAll(err.Error(), "gone.module", "example.com/nowhere") {
		t.Errorf("Template of a task of an unknown module: %v", err)
	}
	// A real task in a provider without Workspaces is refused, not laid
	// out empty.
	prov, err := process.New(process.DefaultConfig(), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if sb, err := prov.Open(ctx, env.OpenOptions{Task: &r.Task}); err == nil {
		sb.Close(ctx)
		t.Error("a real task opened in a provider that cannot lay it out")
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// TestRedTeamProcess plays the red team's forgeries in process sandboxes
// (env/envtest.RunRedTeam), against a harness that screens the change and
// shares its builds, and against one whose screen is off (its canaries
// alone must catch what claims a pass).
func TestRedTeamProcess(t *testing.T) {
	recs, mods := oracleTasks(t)
	ws := newWorkspaces(t, mods)
	prov := processProvider(t, ws)
	tasks := oracleCases(t, ws, oracleSample(t, recs, 1)[:1])
	t.Run("screened", func(t *testing.T) {
		h := NewHarness(ws, HarnessConfig{BinCache: filepath.Join(ws.Root(), "bin")})
		envtest.RunRedTeam(t, prov, h, tasks, envtest.RedTeamOptions{Screened: true})
	})
	t.Run("canaries alone", func(t *testing.T) {
		h := NewHarness(ws, HarnessConfig{NoScreen: true})
		envtest.RunRedTeam(t, prov, h, tasks, envtest.RedTeamOptions{})
	})
}

// TestRedTeamDocker plays the red team in Docker sandboxes.
func TestRedTeamDocker(t *testing.T) {
	recs, mods := oracleTasks(t)
	ws := newWorkspaces(t, mods)
	prov := dockerProvider(t, ws)
	tasks := oracleCases(t, ws, oracleSample(t, recs, 1)[:1])
	t.Run("screened", func(t *testing.T) {
		h := NewHarness(ws, HarnessConfig{BinCache: filepath.Join(ws.Root(), "bin")})
		envtest.RunRedTeam(t, prov, h, tasks, envtest.RedTeamOptions{Screened: true})
	})
	t.Run("canaries alone", func(t *testing.T) {
		h := NewHarness(ws, HarnessConfig{NoScreen: true})
		envtest.RunRedTeam(t, prov, h, tasks, envtest.RedTeamOptions{})
	})
}
