package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/frognano/frog/env"
)

// LogNormal is a latency distribution: exp(N(ln Median, Sigma²)).
type LogNormal struct {
	Median time.Duration
	Sigma  float64
}

func (l LogNormal) draw(r *rand.Rand) time.Duration {
	if l.Median <= 0 {
		return 0
	}
	return time.Duration(float64(l.Median) * math.Exp(l.Sigma*r.NormFloat64()))
}

// FaultMix weighs the kinds of injected fault; the weights need not sum to 1.
type FaultMix struct {
	// Crash: the sandbox dies at a random operation; it and every later one fail.
	Crash float64
	// Hang: one operation never answers and is cut by the harness timeout.
	Hang float64
	// SlowStart: starting takes so long that the start timeout expires.
	SlowStart float64
}

// Config describes the simulated sandboxes.
type Config struct {
	Seed uint64
	// TimeScale multiplies every simulated latency; 0 means no waiting at all.
	TimeScale float64
	// Start, Command and Test are the latencies of opening a sandbox, of a
	// command or file operation, and of a test run.
	Start, Command, Test LogNormal
	// FaultRate is the probability that one attempt's sandbox suffers a fault.
	FaultRate float64
	Faults    FaultMix
	// StartTimeout and CommandTimeout are the harness's limits, which a hang
	// or a slow start runs into (scaled by TimeScale like everything else).
	StartTimeout, CommandTimeout time.Duration
	// Sleep waits for d or until ctx is done; nil means a timer. Tests inject
	// a fake clock here.
	Sleep func(ctx context.Context, d time.Duration) error
}

// DefaultConfig is a sandbox with the latencies of a warm container:
// ~0.3 s to start, ~10 ms a command, ~1 s a test run.
func DefaultConfig() Config {
	return Config{
		Seed:           1,
		TimeScale:      0,
		Start:          LogNormal{Median: 300 * time.Millisecond, Sigma: 0.5},
		Command:        LogNormal{Median: 10 * time.Millisecond, Sigma: 0.5},
		Test:           LogNormal{Median: time.Second, Sigma: 0.6},
		Faults:         FaultMix{Crash: 0.5, Hang: 0.3, SlowStart: 0.2},
		StartTimeout:   60 * time.Second,
		CommandTimeout: 5 * time.Minute,
	}
}

// Validate reports the first nonsensical field.
func (c Config) Validate() error {
	switch {
	case c.TimeScale < 0 || math.IsNaN(c.TimeScale) || math.IsInf(c.TimeScale, 0):
		return fmt.Errorf("time scale %v: want a finite number >= 0", c.TimeScale)
	case c.FaultRate < 0 || c.FaultRate > 1 || math.IsNaN(c.FaultRate):
		return fmt.Errorf("fault rate %v: want a probability in [0, 1]", c.FaultRate)
	case c.Faults.Crash < 0 || c.Faults.Hang < 0 || c.Faults.SlowStart < 0:
		return errors.New("fault weights must be >= 0")
	case c.FaultRate > 0 && c.Faults.Crash+c.Faults.Hang+c.Faults.SlowStart == 0:
		return errors.New("fault rate > 0 but every fault weight is 0")
	}
	return nil
}

// Provider opens simulated sandboxes. It is safe for concurrent use.
type Provider struct {
	cfg                     Config
	opened, closed          atomic.Int64
	crashes, hangs, slowErr atomic.Int64
}

var (
	_ env.Provider      = (*Provider)(nil)
	_ env.ProviderStats = (*Provider)(nil)
	_ env.Immediate     = (*Provider)(nil)
	_ env.Sandbox       = (*Sandbox)(nil)
)

// New returns a Provider; cfg must be valid.
func New(cfg Config) (*Provider, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Sleep == nil {
		cfg.Sleep = sleep
	}
	return &Provider{cfg: cfg}, nil
}

// faultWindow is the number of operations among which a crash or a hang
// strikes: the first three, so that it hits even the shortest episode (view,
// edit, test).
const faultWindow = 3

type faultKind uint8

const (
	faultNone faultKind = iota
	faultCrash
	faultHang
	faultSlowStart
)

// Open starts a sandbox for one attempt of one episode.
func (p *Provider) Open(ctx context.Context, opts env.OpenOptions) (env.Sandbox, error) {
	if opts.Task == nil {
		return nil, errors.New("sim: open: no task")
	}
	s := &Sandbox{p: p, task: opts.Task}
	s.src.Seed(mix(p.cfg.Seed^seedTag), mix(opts.Episode<<8|uint64(opts.Attempt&0xff)))
	s.rng = *rand.New(&s.src) // in the sandbox: one allocation an episode less
	if p.cfg.FaultRate > 0 && s.rng.Float64() < p.cfg.FaultRate {
		f := p.cfg.Faults
		switch u := s.rng.Float64() * (f.Crash + f.Hang + f.SlowStart); {
		case u < f.Crash:
			s.fault = faultCrash
		case u < f.Crash+f.Hang:
			s.fault = faultHang
		default:
			s.fault = faultSlowStart
		}
		s.faultAt = s.rng.IntN(faultWindow)
	}
	start := p.cfg.Start.draw(&s.rng)
	if s.fault == faultSlowStart {
		p.slowErr.Add(1)
		if err := p.wait(ctx, p.cfg.StartTimeout); err != nil {
			return nil, err
		}
		return nil, env.Infra(fmt.Errorf("sim: start of sandbox for episode %d: no answer within %v", opts.Episode, p.cfg.StartTimeout))
	}
	if err := p.wait(ctx, start); err != nil {
		return nil, err
	}
	p.opened.Add(1)
	return s, nil
}

// Immediate reports whether the sandboxes never wait: at time scale 0.
func (p *Provider) Immediate() bool { return p.cfg.TimeScale == 0 }

// Stats reports what the provider did so far.
func (p *Provider) Stats() env.SandboxStats {
	o, c := p.opened.Load(), p.closed.Load()
	return env.SandboxStats{Opened: o, Closed: c, Live: o - c, Faults: map[string]int64{
		"crash": p.crashes.Load(), "hang": p.hangs.Load(), "slow_start": p.slowErr.Load(),
	}}
}

func (p *Provider) wait(ctx context.Context, d time.Duration) error {
	d = time.Duration(float64(d) * p.cfg.TimeScale)
	if d <= 0 {
		return ctx.Err()
	}
	return p.cfg.Sleep(ctx, d)
}

// Sandbox is one simulated workspace.
type Sandbox struct {
	p       *Provider
	task    *env.Task
	src     rand.PCG
	rng     rand.Rand
	fault   faultKind
	faultAt int // operation index at which the fault strikes
	ops     int
	crashed bool
	closed  bool
	fixed   bool
	files   []simFile // what WriteFile wrote, by cleaned path
}

// op accounts for one operation: it waits its latency and injects the fault
// when its turn comes.
func (s *Sandbox) op(ctx context.Context, lat LogNormal, verb, name string) error {
	if s.closed {
		return env.ErrClosed
	}
	if s.crashed {
		return env.Infra(fmt.Errorf("sim: %s %s: sandbox crashed", verb, name))
	}
	n := s.ops
	s.ops++
	d := lat.draw(&s.rng)
	if n == s.faultAt {
		switch s.fault {
		case faultCrash:
			s.crashed = true
			s.p.crashes.Add(1)
			return env.Infra(fmt.Errorf("sim: %s %s: sandbox crashed", verb, name))
		case faultHang:
			s.p.hangs.Add(1)
			if err := s.p.wait(ctx, s.p.cfg.CommandTimeout); err != nil {
				return err
			}
			return env.Infra(fmt.Errorf("sim: %s %s: no answer from sandbox within %v", verb, name, s.p.cfg.CommandTimeout))
		}
	}
	return s.p.wait(ctx, d)
}

// Exec runs a simulated command: the task's test command passes when the
// bug is fixed; anything else succeeds with no output.
func (s *Sandbox) Exec(ctx context.Context, opts env.ExecOptions) (env.ExecResult, error) {
	if len(opts.Cmd) == 0 {
		return env.ExecResult{}, errors.New("sim: exec: empty command")
	}
	isTest := slices.Equal(opts.Cmd, s.task.TestCmd)
	lat := s.p.cfg.Command
	if isTest {
		lat = s.p.cfg.Test
	}
	if err := s.op(ctx, lat, "exec", opts.Cmd[0]); err != nil {
		return env.ExecResult{}, err
	}
	if isTest && !s.fixed {
		return env.ExecResult{ExitCode: 1, Stdout: []byte("--- FAIL: simulated test\nFAIL\n")}, nil
	}
	return env.ExecResult{}, nil
}

// ReadFile returns what WriteFile wrote to the file, or a stand-in for
// its content when nothing was written.
func (s *Sandbox) ReadFile(ctx context.Context, name string) ([]byte, error) {
	if err := checkPath(name); err != nil {
		return nil, err
	}
	if err := s.op(ctx, s.p.cfg.Command, "read", name); err != nil {
		return nil, err
	}
	if data, ok := s.file(path.Clean(name)); ok {
		return slices.Clone(data), nil
	}
	return []byte("// simulated source\n"), nil
}

// WriteFile fixes the bug when data is the gold patch of the buggy file and
// breaks it otherwise.
func (s *Sandbox) WriteFile(ctx context.Context, name string, data []byte) error {
	if err := checkPath(name); err != nil {
		return err
	}
	if err := s.op(ctx, s.p.cfg.Command, "write", name); err != nil {
		return err
	}
	if name == s.task.File {
		s.fixed = string(data) == s.task.Patch
	}
	name = path.Clean(name)
	for i := range s.files {
		if s.files[i].name == name {
			s.files[i].data = slices.Clone(data)
			return nil
		}
	}
	s.files = append(s.files, simFile{name: name, data: slices.Clone(data)})
	return nil
}

// simFile is one file written to a simulated workspace; a workspace holds a
// handful, so a slice beats a map.
type simFile struct {
	name string
	data []byte
}

func (s *Sandbox) file(name string) ([]byte, bool) {
	for i := range s.files {
		if s.files[i].name == name {
			return s.files[i].data, true
		}
	}
	return nil, false
}

// Close releases the sandbox. It is idempotent and never waits.
func (s *Sandbox) Close(ctx context.Context) error {
	if s.closed {
		return nil
	}
	s.closed = true
	s.p.closed.Add(1)
	return nil
}

func checkPath(name string) error {
	if name == "" || path.IsAbs(name) || strings.HasPrefix(path.Clean(name), "..") {
		return fmt.Errorf("path %q is outside the workspace", name)
	}
	return nil
}

// mix is splitmix64's finalizer: nearby inputs give unrelated seeds.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// seedTag separates the sandboxes' draws from the policy's and the task
// source's, which are seeded from the same run seed.
const seedTag = 0x73616e64626f78 // "sandbox"
