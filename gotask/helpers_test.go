package gotask

import (
	"context"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/env/docker"
	"github.com/frognano/frog/env/docker/dockertest"
	"github.com/frognano/frog/env/process"
	"github.com/frognano/frog/synth/source"
)

// tinyModule is the synthesizer's tiny test module.
const tinyModule = "../synth/validate/testdata/tiny"

// sandbox opens a process sandbox closed at the end of the test.
func sandbox(t testing.TB) env.Sandbox {
	t.Helper()
	cfg := process.DefaultConfig()
	cfg.Dir = t.TempDir()
	prov, err := process.New(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	sb, err := prov.Open(context.Background(), env.OpenOptions{Run: "gotask-test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close(context.Background()) })
	return sb
}

// newSynth returns a synthesizer of mods in process sandboxes, closed at
// the end of the test.
func newSynth(t *testing.T, mods []source.Module, cfg source.Config) *source.Synthesizer {
	t.Helper()
	pcfg := process.DefaultConfig()
	pcfg.Dir = t.TempDir()
	prov, err := process.New(pcfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	cfg.Provider = prov
	if cfg.Validate.MinTimeout == 0 {
		cfg.Validate.MinTimeout = 5 * time.Second
	}
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	s, err := source.New(mods, cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

// processProvider returns process sandboxes that lay real tasks out from
// ws.
func processProvider(t *testing.T, ws *Workspaces) env.Provider {
	t.Helper()
	cfg := process.DefaultConfig()
	cfg.Dir, cfg.Workspaces = t.TempDir(), ws
	prov, err := process.New(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	return prov
}

// dockerProvider returns Docker sandboxes, without a pool, that lay real
// tasks out from ws under its mounted root.
func dockerProvider(t *testing.T, ws *Workspaces) env.Provider {
	t.Helper()
	cfg := docker.DefaultConfig()
	cfg.PoolSize = 0
	cfg.Workspaces, cfg.WorkspaceRoot = ws, ws.Root()
	return dockertest.Provider(t, cfg)
}
