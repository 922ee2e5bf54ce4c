package actors

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/synth"
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
// cancelled context's channel (which stays ready once closed). The
// shutdown waits about a second for slow sandboxes to close: cpu/wall is
// the share of a core it used meanwhile, near 0 when it waits and near 1
// or more when a loop spins. A benchmark, not a test: the share depends on
// the machine's load (go test -bench CancelledRunShutdown ./actors).
func BenchmarkCancelledRunShutdown(b *testing.B) {
	var cpuSum, wallSum time.Duration
	for b.Loop() {
		deps, prov, _ := simDeps(b, simSetup{seed: 3, timeScale: 1})
		deps.Provider = slowClose{deps.Provider, time.Second}
		ctx, cancel := context.WithCancel(context.Background())
		var cpu0 time.Duration
		var wall0 time.Time
		go func() {
			for prov.Stats().Live < 4 { // sandboxes open, which must close
				time.Sleep(5 * time.Millisecond)
			}
			cpu0, wall0 = cpuTime(), time.Now()
			cancel()
		}()
		sum, err := runWithin(b, time.Minute, ctx, testConfig(1000, 8), deps)
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		cpuSum, wallSum = cpuSum+cpuTime()-cpu0, wallSum+time.Since(wall0)
		checkAccounting(b, sum, -1)
	}
	b.ReportMetric(float64(cpuSum)/float64(wallSum), "cpu/wall")
}

// drySource serves up to limit tasks from src, then answers as dry says:
// "empty" (no task, no error), "exhausted" (synth.ErrExhausted), "failing"
// (another error) or "blocking" (no answer until its context ends). It
// counts the requests it was asked.
type drySource struct {
	src   synth.Source
	limit int
	dry   string
	mu    sync.Mutex
	given int
	calls atomic.Int64
}

func (s *drySource) Tasks(ctx context.Context, n int, d float64) ([]env.Task, error) {
	s.calls.Add(1)
	s.mu.Lock()
	n = min(n, s.limit-s.given)
	s.given += n
	s.mu.Unlock()
	if n > 0 {
		return s.src.Tasks(ctx, n, d)
	}
	switch s.dry {
	case "exhausted":
		return nil, fmt.Errorf("store: %w", synth.ErrExhausted)
	case "failing":
		return nil, errors.New("sandbox: no space left on device")
	case "blocking":
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return nil, nil
}

// A source with nothing (more) to give ends the run with ErrNoTasks, the
// episodes it gave recorded: no actor asks again and again (a store whose
// every task was quarantined once spun the synthesizer through 16 million
// goroutines, and the run ignored every signal).
func TestRunEndsWhenTasksRunOut(t *testing.T) {
	for _, tc := range []struct {
		dry   string
		limit int
	}{
		{"empty", 0}, {"exhausted", 0}, {"failing", 0},
		{"empty", 5}, {"exhausted", 5}, {"failing", 5},
	} {
		t.Run(fmt.Sprintf("%s after %d", tc.dry, tc.limit), func(t *testing.T) {
			deps, _, _ := simDeps(t, simSetup{seed: 5, timeScale: 0})
			src := &drySource{src: deps.Source, limit: tc.limit, dry: tc.dry}
			deps.Source = src
			cfg := testConfig(1000, 8)
			cfg.GroupSize, cfg.TaskRefill = 2, 1
			sum, err := runWithin(t, time.Minute, context.Background(), cfg, deps)
			if !errors.Is(err, ErrNoTasks) {
				t.Fatalf("Run: %v; want ErrNoTasks", err)
			}
			checkAccounting(t, sum, int64(2*tc.limit))
			if sum.Scheduler.TasksRanOut == "" {
				t.Error("the summary does not say why the tasks ran out")
			}
			// A few asks after the last task, not a loop.
			if n := src.calls.Load(); n > int64(tc.limit)+maxEmptyAnswers+1 {
				t.Errorf("the source was asked %d times for %d tasks", n, tc.limit)
			}
		})
	}
}

// A cancelled run ends even while a request for tasks is on its way that
// the source never answers.
func TestCancelledRunDoesNotWaitForTasks(t *testing.T) {
	deps, _, _ := simDeps(t, simSetup{seed: 6, timeScale: 0})
	src := &drySource{src: deps.Source, limit: 0, dry: "blocking"}
	deps.Source = src
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for src.calls.Load() == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	sum, err := runWithin(t, time.Minute, ctx, testConfig(100, 8), deps)
	if err != nil {
		t.Fatal(err)
	}
	checkAccounting(t, sum, 0)
}

// Sizes so large that a count would overflow are refused, naming the
// field (commands name their flag: cmd/frog/cli's limits test).
func TestConfigRefusesAbsurdSizes(t *testing.T) {
	for _, tc := range []struct {
		set   func(*Config)
		field string
	}{
		{func(c *Config) { c.Concurrency = math.MaxInt }, "Concurrency"},
		{func(c *Config) { c.GroupSize = math.MaxInt }, "GroupSize"},
		{func(c *Config) { c.GroupsPerUpdate = math.MaxInt }, "GroupsPerUpdate"},
		{func(c *Config) { c.MaxStaleness = math.MaxInt }, "MaxStaleness"},
		{func(c *Config) { c.MaxAttempts = math.MaxInt }, "MaxAttempts"},
		{func(c *Config) { c.MaxSteps = math.MaxInt }, "MaxSteps"},
		{func(c *Config) { c.MaxTries = math.MaxInt }, "MaxTries"},
		{func(c *Config) { c.MaxBatch = math.MaxInt }, "MaxBatch"},
		{func(c *Config) { c.InferenceWorkers = math.MaxInt }, "InferenceWorkers"},
		{func(c *Config) { c.TaskRefill = math.MaxInt }, "TaskRefill"},
		{func(c *Config) { c.CheckpointEvery = -1 }, "CheckpointEvery"},
	} {
		c := DefaultConfig()
		tc.set(&c)
		var ce *ConfigError
		if err := c.Validate(); !errors.As(err, &ce) || ce.Field != tc.field {
			t.Errorf("%s: Validate() = %v; want a *ConfigError of %s", tc.field, err, tc.field)
		}
	}
}
