package actors

import (
	"context"
	"testing"

	"github.com/rs/zerolog"

	envsim "github.com/frognano/frog/env/sim"
	policysim "github.com/frognano/frog/policy/sim"
	"github.com/frognano/frog/synth"
	synthsim "github.com/frognano/frog/synth/sim"
)

// simDeps wires the simulated parts for a run seeded with seed.
func simDeps(t testing.TB, seed uint64, faultRate float64) (Deps, *envsim.Provider, *policysim.Learner) {
	t.Helper()
	cfg := envsim.DefaultConfig()
	cfg.Seed = seed
	cfg.FaultRate = faultRate
	prov, err := envsim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cur, err := synth.NewTarget(0.5, 0, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	l := policysim.NewLearner(0, 0.001, seed)
	return Deps{Provider: prov, Learner: l, Source: synthsim.New(seed, 0.5), Curriculum: cur, Log: zerolog.Nop()}, prov, l
}

func TestRunSmoke(t *testing.T) {
	deps, prov, l := simDeps(t, 1, 0)
	cfg := DefaultConfig()
	cfg.Episodes = 2000
	cfg.Concurrency = 100
	sum, err := Run(context.Background(), cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v skill=%v live=%d", sum, l.Skill(), prov.Stats().Live)
}
