package actors

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/policy"
)

// BenchConfig shapes `frog bench`: the actor pipeline against the plain
// goroutine baseline, at zero latency, in one process.
type BenchConfig struct {
	// Episodes and Concurrency shape each throughput run.
	Episodes    int64
	Concurrency int
	// Repeats is how many runs of each pipeline are made, interleaved; the
	// report gives medians.
	Repeats int
	// Live lists the numbers of concurrent live episodes at which memory is
	// measured.
	Live []int
	// NewDeps builds fresh parts for one run (a new provider, learner,
	// source and curriculum), seeded alike for both pipelines.
	NewDeps func() (Deps, error)
	// Progress, when set, is told what is being measured.
	Progress func(what string)
}

// BenchReport is what `frog bench --json` prints.
type BenchReport struct {
	Episodes    int64 `json:"episodes"`
	Concurrency int   `json:"concurrency"`
	Repeats     int   `json:"repeats"`
	GOMAXPROCS  int   `json:"gomaxprocs"`
	// Actors and Baseline are median episodes/s of the two pipelines;
	// Ratio is Actors / Baseline.
	Actors   PipelineFigures `json:"actors"`
	Baseline PipelineFigures `json:"baseline"`
	Ratio    float64         `json:"ratio"`
	// Memory is bytes per live episode at each measured concurrency.
	Memory []MemoryFigures `json:"memory"`
}

// PipelineFigures are one pipeline's throughput runs.
type PipelineFigures struct {
	EpisodesPerSecond float64   `json:"episodes_per_second"`
	Runs              []float64 `json:"runs"`
	MeanBatch         float64   `json:"mean_batch"`
}

// MemoryFigures are the bytes per live episode of both pipelines at one
// number of live episodes: the growth of the Go heap and stacks in use while
// that many episodes are parked mid-episode (sandbox open, waiting for the
// policy's answer), divided by their number.
type MemoryFigures struct {
	Live        int     `json:"live"`
	ActorsBytes float64 `json:"actors_bytes_per_episode"`
	// ActorsStackBytes is the part of ActorsBytes that is goroutine stacks.
	ActorsStackBytes float64 `json:"actors_stack_bytes_per_episode"`
	BaselineBytes    float64 `json:"baseline_bytes_per_episode"`
	ActorsTotalBytes uint64  `json:"actors_total_bytes"`
}

// Bench measures both pipelines.
func Bench(ctx context.Context, cfg BenchConfig) (BenchReport, error) {
	rep := BenchReport{Episodes: cfg.Episodes, Concurrency: cfg.Concurrency, Repeats: max(cfg.Repeats, 1), GOMAXPROCS: runtime.GOMAXPROCS(0)}
	note := func(f string, a ...any) {
		if cfg.Progress != nil {
			cfg.Progress(fmt.Sprintf(f, a...))
		}
	}
	rc := DefaultConfig()
	rc.Episodes, rc.Concurrency = cfg.Episodes, cfg.Concurrency
	var actorBatch, baseBatch []float64
	for i := range rep.Repeats {
		for _, p := range []struct {
			name string
			run  func(context.Context, Config, Deps) (Summary, error)
			out  *PipelineFigures
			mb   *[]float64
		}{{"actors", Run, &rep.Actors, &actorBatch}, {"baseline", RunBaseline, &rep.Baseline, &baseBatch}} {
			note("throughput %s run %d/%d", p.name, i+1, rep.Repeats)
			deps, err := cfg.NewDeps()
			if err != nil {
				return rep, err
			}
			runtime.GC()
			sum, err := p.run(ctx, rc, deps)
			if err != nil {
				return rep, fmt.Errorf("%s: %w", p.name, err)
			}
			if !sum.Episodes.Accounted || sum.Episodes.Completed != cfg.Episodes {
				return rep, fmt.Errorf("%s: %d of %d episodes completed", p.name, sum.Episodes.Completed, cfg.Episodes)
			}
			p.out.Runs = append(p.out.Runs, sum.EpisodesPerSecond)
			*p.mb = append(*p.mb, sum.PolicyServer.MeanBatch)
		}
	}
	rep.Actors.EpisodesPerSecond, rep.Actors.MeanBatch = median(rep.Actors.Runs), median(actorBatch)
	rep.Baseline.EpisodesPerSecond, rep.Baseline.MeanBatch = median(rep.Baseline.Runs), median(baseBatch)
	if rep.Baseline.EpisodesPerSecond > 0 {
		rep.Ratio = rep.Actors.EpisodesPerSecond / rep.Baseline.EpisodesPerSecond
	}
	for _, n := range cfg.Live {
		m := MemoryFigures{Live: n}
		note("memory actors at %d live episodes", n)
		per, stack, total, err := liveBytes(ctx, n, cfg.NewDeps, Run)
		if err != nil {
			return rep, fmt.Errorf("memory at %d live episodes (actors): %w", n, err)
		}
		m.ActorsBytes, m.ActorsStackBytes, m.ActorsTotalBytes = per, stack, total
		note("memory baseline at %d live episodes", n)
		if m.BaselineBytes, _, _, err = liveBytes(ctx, n, cfg.NewDeps, RunBaseline); err != nil {
			return rep, fmt.Errorf("memory at %d live episodes (baseline): %w", n, err)
		}
		rep.Memory = append(rep.Memory, m)
	}
	return rep, nil
}

// liveBytes runs n episodes at concurrency n, holds them all parked after
// their first act request (their sandboxes open, the policy withholding its
// answers), and measures the heap and stacks in use then against before the
// run.
func liveBytes(ctx context.Context, n int, newDeps func() (Deps, error), run func(context.Context, Config, Deps) (Summary, error)) (perEpisode, stackPerEpisode float64, total uint64, err error) {
	deps, err := newDeps()
	if err != nil {
		return 0, 0, 0, err
	}
	stats, ok := deps.Provider.(env.ProviderStats)
	if !ok {
		return 0, 0, 0, fmt.Errorf("provider %T keeps no statistics", deps.Provider)
	}
	gate := make(chan struct{})
	deps.Learner = &gatedLearner{Learner: deps.Learner, gate: gate}
	cfg := DefaultConfig()
	cfg.Episodes, cfg.Concurrency = int64(n), n
	before, stackBefore := inUse()
	var (
		wg     sync.WaitGroup
		sum    Summary
		runErr error
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		sum, runErr = run(ctx, cfg, deps)
	}()
	deadline := time.Now().Add(5 * time.Minute)
	for stats.Stats().Live < int64(n) {
		if time.Now().After(deadline) || ctx.Err() != nil {
			close(gate)
			wg.Wait()
			return 0, 0, 0, fmt.Errorf("only %d of %d episodes went live", stats.Stats().Live, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // let the last act requests land
	during, stackDuring := inUse()
	close(gate)
	wg.Wait()
	if runErr != nil {
		return 0, 0, 0, runErr
	}
	if sum.Episodes.Completed != int64(n) {
		return 0, 0, 0, fmt.Errorf("%d of %d episodes completed", sum.Episodes.Completed, n)
	}
	grow := float64(during) - float64(before)
	return grow / float64(n), (float64(stackDuring) - float64(stackBefore)) / float64(n), during, nil
}

// inUse is the heap and stacks in use after a collection, and the stacks
// alone.
func inUse() (total, stacks uint64) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse + ms.StackInuse, ms.StackInuse
}

// gatedLearner hands out a policy that withholds every answer until the
// gate opens, so that a known number of episodes are live at once.
type gatedLearner struct {
	policy.Learner
	gate chan struct{}
}

func (g *gatedLearner) Policy() policy.Policy {
	return gatedPolicy{Policy: g.Learner.Policy(), gate: g.gate}
}

type gatedPolicy struct {
	policy.Policy
	gate chan struct{}
}

func (g gatedPolicy) Act(ctx context.Context, obs []env.Observation, acts []env.Action) error {
	select {
	case <-g.gate:
	case <-ctx.Done():
		return ctx.Err()
	}
	return g.Policy.Act(ctx, obs, acts)
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
