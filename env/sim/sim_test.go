package sim

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/frognano/frog/env"
)

func TestFaultRateAndDeterminism(t *testing.T) {
	cfg := DefaultConfig()
	cfg.FaultRate = 0.3
	run := func() (faulted []bool) {
		p, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		task := &env.Task{ID: "t", File: "f", Patch: "p", TestCmd: []string{"t"}}
		for ep := uint64(0); ep < 2000; ep++ {
			sb, err := p.Open(context.Background(), env.OpenOptions{Episode: ep, Task: task})
			bad := err != nil
			if err == nil {
				_, e1 := sb.ReadFile(context.Background(), "f")
				e2 := sb.WriteFile(context.Background(), "f", []byte("p"))
				_, e3 := sb.Exec(context.Background(), env.ExecOptions{Cmd: task.TestCmd})
				bad = e1 != nil || e2 != nil || e3 != nil
				for _, e := range []error{e1, e2, e3} {
					if e != nil && !errors.Is(e, env.ErrInfra) {
						t.Fatalf("fault %v does not wrap ErrInfra", e)
					}
				}
				sb.Close(context.Background())
			}
			faulted = append(faulted, bad)
		}
		if st := p.Stats(); st.Live != 0 {
			t.Errorf("%d sandboxes live after closing all", st.Live)
		}
		return faulted
	}
	a, b := run(), run()
	n := 0
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("episode %d faulted in one run and not the other", i)
		}
		if a[i] {
			n++
		}
	}
	if rate := float64(n) / float64(len(a)); rate < 0.25 || rate > 0.35 {
		t.Errorf("fault rate %.3f, want about 0.3", rate)
	}
}

func TestTimeScaleWaitsOnInjectedClock(t *testing.T) {
	var slept time.Duration
	cfg := DefaultConfig()
	cfg.TimeScale = 2
	cfg.Start = LogNormal{Median: 100 * time.Millisecond}
	cfg.Sleep = func(_ context.Context, d time.Duration) error { slept += d; return nil }
	p, _ := New(cfg)
	sb, err := p.Open(context.Background(), env.OpenOptions{Task: &env.Task{ID: "t"}})
	if err != nil {
		t.Fatal(err)
	}
	sb.Close(context.Background())
	if slept != 200*time.Millisecond {
		t.Errorf("slept %v, want 200ms (100ms × time scale 2)", slept)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []Config{{TimeScale: -1}, {FaultRate: 2}, {FaultRate: 0.5}} {
		if err := c.Validate(); err == nil {
			t.Errorf("Validate(%+v) accepted it", c)
		}
	}
}
