package remotetest

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/frognano/frog/actors"
	"github.com/frognano/frog/env"
	envsim "github.com/frognano/frog/env/sim"
	"github.com/frognano/frog/policy"
	policysim "github.com/frognano/frog/policy/sim"
)

// openedFirst is a worker's codec that records a call made before the
// worker's environment was open.
type openedFirst struct {
	policysim.Codec
	opened, early *atomic.Bool
}

func (c openedFirst) DecodePolicy(kind string, b []byte) (policy.Policy, error) {
	if !c.opened.Load() {
		c.early.Store(true)
	}
	return c.Codec.DecodePolicy(kind, b)
}

func (c openedFirst) DecodeTask(rec, or []byte) (*env.Task, error) {
	if !c.opened.Load() {
		c.early.Store(true)
	}
	return c.Codec.DecodeTask(rec, or)
}

// A worker whose environment takes a while to open gets the trainer's
// policy first: it holds it and decodes it once the environment is open,
// since a codec may depend on what Open chose (frog worker's does). Every
// episode then runs on the worker and is accounted. The worker runs in the
// test's own process (ownProcess), the trainer is a frog sim process.
func TestWorkerDecodesNothingBeforeItsEnvironmentIsOpen(t *testing.T) {
	if !ownProcess(t) {
		return
	}
	addr := freeAddr(t)
	trainer := startFrog(t, "sim", "--listen", addr, "--local-slots", "0", "--await-workers", "1", "--episodes", "40",
		"--concurrency", "4", "--time-scale", "0", "--json", "--no-run-dir")
	var opened, early atomic.Bool
	codec := openedFirst{Codec: policysim.Codec{Oracle: policysim.NewOracle()}, opened: &opened, early: &early}
	open := func(name string, config []byte) (env.Provider, env.Harness, error) {
		if name != "sim" {
			return nil, nil, errors.New("want the sim environment, got " + name)
		}
		var c struct {
			Seed      uint64  `json:"seed"`
			TimeScale float64 `json:"time_scale"`
		}
		if err := json.Unmarshal(config, &c); err != nil {
			return nil, nil, err
		}
		time.Sleep(2 * time.Second) // the policy comes while this runs
		cfg := envsim.DefaultConfig()
		cfg.Seed, cfg.TimeScale = c.Seed, c.TimeScale
		p, err := envsim.New(cfg)
		opened.Store(true)
		return p, nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	wsum, err := actors.Work(ctx, actors.WorkerConfig{Join: addr, Listen: "127.0.0.1:0", Name: "slow-open", Slots: 4,
		Build: cliVersion(t)}, actors.WorkerDeps{Codec: codec, Open: open, Log: zerolog.Nop()})
	if err != nil {
		t.Errorf("worker: %v (trainer's stderr:\n%s)", err, trainer.stderr.String())
	}
	rep := trainerReport(t, trainer)
	if early.Load() {
		t.Error("the worker decoded a policy or a task before its environment was open")
	}
	if e := rep.Episodes; !e.Accounted || e.Admitted != 40 || e.Completed != 40 {
		t.Errorf("episodes %+v: want 40 admitted and completed", e)
	}
	if rs := rep.Scheduler.Remote; rs == nil || rs.Local != 0 || wsum.Completed != 40 || wsum.PolicyPulls < 1 {
		t.Errorf("want all 40 episodes on the worker, its policy pulled; trainer %+v, worker %+v", rs, wsum)
	}
}
