package source

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/env/docker"
	"github.com/frognano/frog/env/docker/dockertest"
	"github.com/frognano/frog/env/process"
	"github.com/frognano/frog/synth"
	"github.com/frognano/frog/synth/store"
	"github.com/frognano/frog/synth/validate"
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
	s := newTiny(t)
	path := filepath.Join(t.TempDir(), "tasks.jsonl")
	err := s.Generate(context.Background(), 0, func(r synth.TaskRecord) error { return store.Append(path, r) })
	if !errors.Is(err, ErrExhausted) {
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

// recheck re-validates every stored task in a sandbox of prov, and checks
// that a corrupted task is caught.
func recheck(t *testing.T, prov env.Provider, recs []synth.TaskRecord) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	sb, err := prov.Open(ctx, env.OpenOptions{Run: "recheck"})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close(context.WithoutCancel(ctx))
	m, err := Local(tiny)
	if err != nil {
		t.Fatal(err)
	}
	c, err := validate.NewChecker(m.Dir, sb, "tiny", zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	combos := 0
	for _, r := range recs {
		if err := c.Check(ctx, r); err != nil {
			t.Errorf("%v\npatch:\n%s", err, r.Patch)
		}
		if r.Features.K > 1 {
			combos++
		}
	}
	t.Logf("%d tasks re-validated, %d of them combined mutants", len(recs), combos)

	bad := recs[0]
	bad.PassToPass = append(append([]string(nil), bad.PassToPass...), bad.FailToPass...)
	if err := c.Check(ctx, bad); !errors.Is(err, validate.ErrRecheck) {
		t.Errorf("a task whose FAIL_TO_PASS test is also listed as PASS_TO_PASS re-validated: %v", err)
	}
}

func TestStoredTasksRecheckInProcessSandbox(t *testing.T) {
	recs := storedTasks(t)
	cfg := process.DefaultConfig()
	cfg.Dir = t.TempDir()
	prov, err := process.New(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	recheck(t, prov, recs)
}

func TestStoredTasksRecheckInDockerSandbox(t *testing.T) {
	recs := storedTasks(t)
	cfg := docker.DefaultConfig()
	cfg.PoolSize = 0
	prov := dockertest.Provider(t, cfg)
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
	recheck(t, prov, some)
}
