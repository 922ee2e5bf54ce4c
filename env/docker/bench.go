package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"sync"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
	"github.com/rs/zerolog"

	"github.com/frognano/frog/env"
)

// BenchOptions sizes Bench.
type BenchOptions struct {
	// Samples of each start measurement (cold, warm, docker run); default 20.
	Samples int
	// ExecSamples of each command measurement; default 200 through the
	// agent, a tenth of it (at least 5) through docker exec.
	ExecSamples int
	// MaxConcurrent is how many containers the concurrency test tries to
	// hold open at once; default 64.
	MaxConcurrent int
	// Docker is the docker CLI for the baselines; default "docker".
	Docker string
}

// Latency summarizes samples in milliseconds.
type Latency struct {
	N     int     `json:"n"`
	P50MS float64 `json:"p50_ms"`
	P95MS float64 `json:"p95_ms"`
	MaxMS float64 `json:"max_ms"`
}

// BenchResult is what `frog bench sandbox --json` prints.
type BenchResult struct {
	Image string `json:"image"`
	// ColdStart is Provider.Open without a pool: create, attach, start and
	// the agent's hello. DockerRunCLI is `docker run --rm --network none
	// <image> true` through the CLI, the usual baseline.
	ColdStart    Latency `json:"cold_start"`
	DockerRunCLI Latency `json:"docker_run_cli"`
	// WarmAcquire is Provider.Open served by the warm pool.
	WarmAcquire Latency `json:"warm_acquire"`
	// Close is Sandbox.Close (force removal).
	Close Latency `json:"close"`
	// ExecAgent is Sandbox.Exec of `true` through the agent; ExecDockerCLI
	// `docker exec <container> true`; ExecDockerAPI the same through the
	// API (create, attach, start, inspect).
	ExecAgent     Latency `json:"exec_agent"`
	ExecDockerCLI Latency `json:"exec_docker_cli"`
	ExecDockerAPI Latency `json:"exec_docker_api"`
	// MaxConcurrent is the most containers held open at once, each running
	// a command, without an error, out of ConcurrentTried;
	// ConcurrentError is the first error, if any; ConcurrentOpenS the
	// seconds it took to open them all (8 opens at a time).
	MaxConcurrent   int     `json:"max_concurrent"`
	ConcurrentTried int     `json:"concurrent_tried"`
	ConcurrentOpenS float64 `json:"concurrent_open_s"`
	ConcurrentError string  `json:"concurrent_error,omitempty"`
}

func summarize(d []time.Duration) Latency {
	if len(d) == 0 {
		return Latency{}
	}
	slices.Sort(d)
	ms := func(x time.Duration) float64 { return float64(x.Microseconds()) / 1000 }
	q := func(p float64) time.Duration { return d[min(len(d)-1, int(p*float64(len(d))))] }
	return Latency{N: len(d), P50MS: ms(q(0.5)), P95MS: ms(q(0.95)), MaxMS: ms(d[len(d)-1])}
}

// Bench measures sandboxes of cfg.Image on this daemon: cold start against
// `docker run`, warm acquire, command latency through the agent against
// `docker exec`, and the most containers held at once. It leaves nothing
// behind. cfg's pool settings are overridden.
func Bench(ctx context.Context, cli *client.Client, cfg Config, opts BenchOptions) (BenchResult, error) {
	opts = opts.withDefaults()
	res := BenchResult{Image: cfg.Image}
	cfg.PoolSize = 0
	cold, err := New(ctx, cli, cfg, zerolog.Nop())
	if err != nil {
		return res, err
	}
	defer cold.Close(context.WithoutCancel(ctx))
	if res.ColdStart, res.Close, err = benchColdStart(ctx, cold, cfg.Run, opts.Samples); err != nil {
		return res, err
	}
	if res.DockerRunCLI, err = benchDockerRun(ctx, opts.Docker, cfg.Image, opts.Samples); err != nil {
		return res, err
	}
	// Commands: through the agent, docker exec, the exec API.
	sb, err := cold.Open(ctx, env.OpenOptions{Run: cfg.Run, Episode: 1 << 20})
	if err != nil {
		return res, err
	}
	defer sb.Close(context.WithoutCancel(ctx))
	if err := benchCommands(ctx, cli, sb, opts, &res); err != nil {
		return res, err
	}
	if res.WarmAcquire, err = benchWarmAcquire(ctx, cli, cfg, opts.Samples); err != nil {
		return res, err
	}
	sb.Close(ctx)

	res.ConcurrentTried = opts.MaxConcurrent
	res.MaxConcurrent, res.ConcurrentOpenS, err = concurrency(ctx, cold, cfg.Run, opts.MaxConcurrent)
	if err != nil {
		res.ConcurrentError = err.Error()
	}
	return res, nil
}

// withDefaults fills in the defaults of the options left zero.
func (o BenchOptions) withDefaults() BenchOptions {
	if o.Samples <= 0 {
		o.Samples = 20
	}
	if o.ExecSamples <= 0 {
		o.ExecSamples = 200
	}
	if o.MaxConcurrent <= 0 {
		o.MaxConcurrent = 64
	}
	if o.Docker == "" {
		o.Docker = "docker"
	}
	return o
}

// benchColdStart opens and closes samples sandboxes of cold, a provider
// without a pool, one after another, and returns the opens' latency and
// the closes'.
func benchColdStart(ctx context.Context, cold *Provider, run string, samples int) (Latency, Latency, error) {
	var starts, closes []time.Duration
	for i := range samples {
		t0 := time.Now()
		sb, err := cold.Open(ctx, env.OpenOptions{Run: run, Episode: uint64(i)})
		if err != nil {
			return Latency{}, Latency{}, err
		}
		starts = append(starts, time.Since(t0))
		t0 = time.Now()
		if err := sb.Close(ctx); err != nil {
			return Latency{}, Latency{}, err
		}
		closes = append(closes, time.Since(t0))
	}
	return summarize(starts), summarize(closes), nil
}

// benchDockerRun times samples runs of `docker run --rm --network none
// image true` through the docker CLI.
func benchDockerRun(ctx context.Context, docker, image string, samples int) (Latency, error) {
	var runs []time.Duration
	for range samples {
		t0 := time.Now()
		if out, err := exec.CommandContext(ctx, docker, "run", "--rm", "--network", "none", "--log-driver", "none", image, "true").CombinedOutput(); err != nil {
			return Latency{}, fmt.Errorf("docker run: %w: %s", err, out)
		}
		runs = append(runs, time.Since(t0))
	}
	return summarize(runs), nil
}

// benchCommands times `true` in sb: opts.ExecSamples times through the
// agent, then a tenth as many (at least 5) each through docker exec and
// the exec API, into res.
func benchCommands(ctx context.Context, cli *client.Client, sb env.Sandbox, opts BenchOptions, res *BenchResult) error {
	id := sb.(*Sandbox).ID()
	var execs []time.Duration
	for range opts.ExecSamples {
		t0 := time.Now()
		r, err := sb.Exec(ctx, env.ExecOptions{Cmd: []string{"true"}})
		if err != nil {
			return err
		}
		if r.ExitCode != 0 {
			return fmt.Errorf("true exited %d", r.ExitCode)
		}
		execs = append(execs, time.Since(t0))
	}
	res.ExecAgent = summarize(execs)
	n := max(5, opts.ExecSamples/10)
	var cliExecs, apiExecs []time.Duration
	for range n {
		t0 := time.Now()
		if out, err := exec.CommandContext(ctx, opts.Docker, "exec", id, "true").CombinedOutput(); err != nil {
			return fmt.Errorf("docker exec: %w: %s", err, out)
		}
		cliExecs = append(cliExecs, time.Since(t0))
		t0 = time.Now()
		if err := apiExec(ctx, cli, id, []string{"true"}); err != nil {
			return err
		}
		apiExecs = append(apiExecs, time.Since(t0))
	}
	res.ExecDockerCLI, res.ExecDockerAPI = summarize(cliExecs), summarize(apiExecs)
	return nil
}

// benchWarmAcquire times samples opens served by a warm pool of two, each
// once the pool has an idle container, and closes the pool.
func benchWarmAcquire(ctx context.Context, cli *client.Client, cfg Config, samples int) (Latency, error) {
	cfg.PoolSize, cfg.Reap = 2, false
	warm, err := New(ctx, cli, cfg, zerolog.Nop())
	if err != nil {
		return Latency{}, err
	}
	defer warm.Close(context.WithoutCancel(ctx))
	var acquires []time.Duration
	for i := range samples {
		if err := waitPool(ctx, warm, 1); err != nil {
			return Latency{}, err
		}
		t0 := time.Now()
		s, err := warm.Open(ctx, env.OpenOptions{Run: cfg.Run, Episode: uint64(i)})
		if err != nil {
			return Latency{}, err
		}
		acquires = append(acquires, time.Since(t0))
		s.Close(ctx)
	}
	warm.Close(ctx)
	return summarize(acquires), nil
}

func waitPool(ctx context.Context, p *Provider, n int) error {
	for {
		if st := p.PoolStats(); len(st) > 0 && st[0].Idle >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// apiExec runs cmd with the exec API and waits for it.
func apiExec(ctx context.Context, api dockerAPI, id string, cmd []string) error {
	ex, err := api.ContainerExecCreate(ctx, id, container.ExecOptions{Cmd: cmd, AttachStdout: true, AttachStderr: true})
	if err != nil {
		return err
	}
	hj, err := api.ContainerExecAttach(ctx, ex.ID, container.ExecAttachOptions{})
	if err != nil {
		return err
	}
	io.Copy(io.Discard, hj.Reader)
	hj.Close()
	ins, err := api.ContainerExecInspect(ctx, ex.ID)
	if err != nil {
		return err
	}
	if ins.ExitCode != 0 {
		return fmt.Errorf("exec exited %d", ins.ExitCode)
	}
	return nil
}

// concurrency opens up to max sandboxes, 8 at a time, each running a
// command, and holds them all; it returns how many it held when the first
// error came (or max), then closes them.
func concurrency(ctx context.Context, p *Provider, run string, max int) (int, float64, error) {
	var (
		mu    sync.Mutex
		open  []env.Sandbox
		first error
		wg    sync.WaitGroup
		sem   = make(chan struct{}, 8)
	)
	t0 := time.Now()
	for i := range max {
		mu.Lock()
		stop := first != nil
		mu.Unlock()
		if stop {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			sb, err := p.Open(ctx, env.OpenOptions{Run: run, Episode: uint64(i)})
			if err == nil {
				var r env.ExecResult
				r, err = sb.Exec(ctx, env.ExecOptions{Cmd: []string{"true"}})
				if err == nil && r.ExitCode != 0 {
					err = fmt.Errorf("true exited %d", r.ExitCode)
				}
				mu.Lock()
				open = append(open, sb)
				mu.Unlock()
			}
			if err != nil {
				mu.Lock()
				first = errors.Join(first, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	secs := time.Since(t0).Seconds()
	// Every one still answers with all of them open.
	held := 0
	for _, sb := range open {
		if r, err := sb.Exec(ctx, env.ExecOptions{Cmd: []string{"true"}}); err == nil && r.ExitCode == 0 {
			held++
		}
	}
	for _, sb := range open {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			sb.Close(context.WithoutCancel(ctx))
		}()
	}
	wg.Wait()
	return held, secs, first
}
