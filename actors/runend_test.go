package actors

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/frognano/frog/env"
)

func TestGroupsLeft(t *testing.T) {
	for _, tt := range []struct {
		n    int64
		g    int
		want int64
	}{{0, 8, 0}, {1, 8, 1}, {8, 8, 1}, {9, 8, 2}, {math.MaxInt64, 8, math.MaxInt64/8 + 1}, {math.MaxInt64, 1, math.MaxInt64}} {
		if got := groupsLeft(tt.n, tt.g); got != tt.want {
			t.Errorf("groupsLeft(%d, %d) = %d, want %d", tt.n, tt.g, got, tt.want)
		}
	}
}

// A budget of MaxInt64 episodes is "until the duration ends": the run must
// end then (a count of groups left once overflowed and admission never
// stopped asking for tasks).
func TestHugeBudgetEndsAtTheDuration(t *testing.T) {
	deps, _, _ := simDeps(t, simSetup{seed: 3})
	cfg := testConfig(math.MaxInt64, 64)
	cfg.Duration = 300 * time.Millisecond
	sum, err := runWithin(t, time.Minute, context.Background(), cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	checkAccounting(t, sum, -1)
	if sum.Episodes.Completed == 0 {
		t.Errorf("no episode completed: %+v", sum.Episodes)
	}
}

// Closing Deps.Drain ends admission like a duration: the episodes running
// then finish and are filed, none is cancelled, and the run ends (its
// episode budget is unbounded: only the drain can end it). How many more
// complete after the close depends on how fast the drain reaches the
// scheduler (simulated episodes end at once), so that is not asserted.
func TestDrainEndsAdmission(t *testing.T) {
	deps, _, _ := simDeps(t, simSetup{seed: 4})
	drain := make(chan struct{})
	var once sync.Once
	var filed atomic.Int64
	deps.OnEpisode = func(*EpisodeResult) {
		if filed.Add(1) == 100 {
			once.Do(func() { close(drain) })
		}
	}
	deps.Drain = drain
	cfg := testConfig(math.MaxInt64, 16)
	sum, err := runWithin(t, time.Minute, context.Background(), cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	checkAccounting(t, sum, -1)
	if sum.Episodes.Cancelled != 0 {
		t.Errorf("%d episodes cancelled: a drain lets running ones finish", sum.Episodes.Cancelled)
	}
	if n := sum.Episodes.Completed; n < 100 {
		t.Errorf("completed %d episodes: want the 100 filed before the drain, and those running then", n)
	}
}

// slowClose makes every sandbox take d to close, so that a cancelled run
// spends a while shutting down.
type slowClose struct {
	env.Provider
	d time.Duration
}

func (p slowClose) Open(ctx context.Context, o env.OpenOptions) (env.Sandbox, error) {
	sb, err := p.Provider.Open(ctx, o)
	if err != nil {
		return nil, err
	}
	return slowCloseSandbox{sb, p.d}, nil
}

type slowCloseSandbox struct {
	env.Sandbox
	d time.Duration
}

func (s slowCloseSandbox) Close(ctx context.Context) error {
	time.Sleep(s.d)
	return s.Sandbox.Close(ctx)
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// While a cancelled run drains, Run waits; it does not spin on the
// cancelled context's channel (which stays ready once closed).
func TestCancelledRunWaitsWithoutSpinning(t *testing.T) {
	deps, prov, _ := simDeps(t, simSetup{seed: 3, timeScale: 1})
	deps.Provider = slowClose{deps.Provider, time.Second}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var cpu0 time.Duration
	var wall0 time.Time
	go func() {
		for prov.Stats().Live < 4 { // sandboxes open, which must close
			time.Sleep(5 * time.Millisecond)
		}
		cpu0, wall0 = cpuTime(), time.Now()
		cancel()
	}()
	sum, err := runWithin(t, time.Minute, ctx, testConfig(1000, 8), deps)
	if err != nil {
		t.Fatal(err)
	}
	cpu, wall := cpuTime()-cpu0, time.Since(wall0)
	checkAccounting(t, sum, -1)
	// The shutdown waits about a second for the sandboxes to close. A loop
	// spinning on ctx.Done() burns a core all that time; waiting costs
	// next to nothing. (A resource bound, not a speed: a busier machine
	// only lowers it.)
	if wall < 900*time.Millisecond {
		t.Fatalf("the shutdown took %v; the slow sandboxes should hold it for a second", wall)
	}
	if cpu > wall/2 {
		t.Errorf("the shutdown used %v of CPU in %v: Run spins while it waits", cpu, wall)
	}
}
