package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/frognano/frog/actors"
	"github.com/frognano/frog/curriculum"
	envsim "github.com/frognano/frog/env/sim"
	policysim "github.com/frognano/frog/policy/sim"
	"github.com/frognano/frog/run/taskenv"
	synthsim "github.com/frognano/frog/synth/sim"
)

type benchOptions struct {
	episodes    int64
	concurrency int
	repeats     int
	live        []int
	seed        uint64
	json        bool
}

func newBenchCmd(g *globals) *cobra.Command {
	o := &benchOptions{}
	c := &cobra.Command{
		Use:   "bench",
		Short: "Benchmark the actor runtime against a plain goroutine pipeline",
		Long: `bench measures the scheduler alone, at zero latency: the actor pipeline of
'frog sim' (simulated sandboxes and agent, no waiting) against a plain
goroutine-and-channel pipeline doing the same per-episode work, in the same
process and run, interleaved. It reports the median episodes/s of each over
--repeats runs and their ratio, and the bytes per live episode of both at each
--live concurrency (Go heap and stacks in use while that many episodes are
parked mid-episode, divided by their number).

Timings on a shared machine drift: compare the ratio, not absolute figures.`,
		Example: `  frog bench
  frog bench --json
  frog bench --episodes 50000 --concurrency 1000 --live 1000`,
		Args: cobra.NoArgs,
		PreRunE: func(*cobra.Command, []string) error {
			if o.episodes < 1 {
				return usagef("--episodes %d: want >= 1", o.episodes)
			}
			if err := firstErr(inRange("--concurrency", o.concurrency, 1, actors.MaxConcurrency), inRange("--repeats", o.repeats, 1, 1000)); err != nil {
				return err
			}
			for _, n := range o.live {
				if err := inRange("--live", n, 1, actors.MaxConcurrency); err != nil {
					return err
				}
			}
			return nil
		},
		RunE: func(c *cobra.Command, _ []string) error { return runBench(c.Context(), g, o) },
	}
	c.AddCommand(newBenchSandboxCmd(g), newBenchSynthCmd(g), newBenchTriesCmd(g), newBenchLLMCmd(g), newBenchWorkersCmd(g))
	f := c.Flags()
	f.Int64Var(&o.episodes, "episodes", 200000, "episodes per throughput run")
	f.IntVar(&o.concurrency, "concurrency", 10000, "concurrent episodes in throughput runs")
	f.IntVar(&o.repeats, "repeats", 3, "throughput runs of each pipeline (medians are reported)")
	f.IntSliceVar(&o.live, "live", []int{10000, 100000}, "numbers of live episodes at which to measure memory")
	f.Uint64Var(&o.seed, "seed", 1, "seed")
	f.BoolVar(&o.json, "json", false, "print the report as one JSON object")
	return c
}

func runBench(ctx context.Context, g *globals, o *benchOptions) error {
	log, err := g.logger()
	if err != nil {
		return err
	}
	// The benchmark's many runs log nothing below warnings unless asked to.
	quiet := log
	if log.GetLevel() > zerolog.DebugLevel {
		quiet = log.Level(zerolog.WarnLevel)
	}
	newDeps := func() (actors.Deps, error) {
		cfg := envsim.DefaultConfig()
		cfg.Seed = o.seed
		prov, err := envsim.New(cfg)
		if err != nil {
			return actors.Deps{}, err
		}
		cur, err := curriculum.NewTarget(0.5, 0, 0.01)
		if err != nil {
			return actors.Deps{}, err
		}
		oracle := policysim.NewOracle()
		return actors.Deps{Provider: prov, Learner: policysim.NewLearner(0, 0.001, o.seed, oracle),
			Source: taskenv.OracleSource(synthsim.New(o.seed, 0.5), oracle, taskenv.SimFix), Curriculum: cur, Log: quiet}, nil
	}
	rep, err := actors.Bench(ctx, actors.BenchConfig{
		Episodes: o.episodes, Concurrency: o.concurrency, Repeats: o.repeats, Live: o.live, NewDeps: newDeps,
		Progress: func(what string) { log.Info().Msg(what) },
	})
	if ctx.Err() != nil {
		// A run cut short fails its count: the error is the signal's.
		return interrupted("the benchmark was cut short; a partial measurement is not reported")
	}
	if err != nil {
		return err
	}
	return printBench(g.stdout, rep, o.json)
}

func printBench(w io.Writer, r actors.BenchReport, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(w).Encode(r)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "throughput\t%d episodes × %d runs at concurrency %d, GOMAXPROCS %d\n", r.Episodes, r.Repeats, r.Concurrency, r.GOMAXPROCS)
	fmt.Fprintf(tw, "  actors\t%.0f episodes/s (median)\tmean batch %.1f\n", r.Actors.EpisodesPerSecond, r.Actors.MeanBatch)
	fmt.Fprintf(tw, "  goroutines\t%.0f episodes/s (median)\tmean batch %.1f\n", r.Baseline.EpisodesPerSecond, r.Baseline.MeanBatch)
	fmt.Fprintf(tw, "  ratio\t%.2f× of the baseline\t\n", r.Ratio)
	for _, m := range r.Memory {
		fmt.Fprintf(tw, "memory at %d live\tactors %.0f B/episode (%.0f of it stacks)\tgoroutines %.0f B/episode\n", m.Live, m.ActorsBytes, m.ActorsStackBytes, m.BaselineBytes)
	}
	return tw.Flush()
}
