package experiment

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/frognano/frog/actors"
	"github.com/frognano/frog/run"
)

// A Runner runs one strategy with one seed of an experiment to the end of
// its budget and measures its held-out curve: Sim for Mode "sim", Real
// for Mode "real", Replay for Mode "replay".
type Runner interface {
	Run(ctx context.Context, a Arm, seed uint64) (Result, error)
}

// Run runs every strategy of o with every seed that o.Dir's results do
// not hold yet, seed by seed and every strategy in turn, appending each
// result as it finishes; then it summarizes the results of o.Budget into
// the table, draws the held-out curves and writes table.txt (what
// Table.Print prints). A run cut short by ctx is not recorded: Run
// returns ctx's error, and the next invocation runs it again.
func Run(ctx context.Context, o Options, deps Deps) (Table, error) {
	if o.Mode != "sim" && (o.Mode != "real" || o.Real == nil) && (o.Mode != "replay" || o.Tables == nil) {
		return Table{}, fmt.Errorf("experiment mode %q: want sim, real with its RealOptions or replay with its TableOptions", o.Mode)
	}
	arms := map[string]Arm{}
	for _, s := range o.Strategies {
		a, err := ParseArm(s)
		if err != nil {
			return Table{}, &run.UsageError{Err: err}
		}
		arms[s] = a
	}
	// The directory is made once the runner has opened, so that settings
	// it refuses (tables that overlap, a backend that is missing) leave
	// no experiment behind.
	results, err := checkDir(o, deps.Version)
	if err != nil {
		return Table{}, err
	}
	pending := Pending(o, results)
	var runner Runner
	switch {
	case len(pending) == 0:
		// Nothing to run: the table from the results there (real mode
		// opens no sandbox and checks no task for it).
	case o.Mode == "sim":
		if runner, err = NewSim(o, deps); err != nil {
			return Table{}, err
		}
	case o.Mode == "replay":
		x, err := OpenReplay(o, deps)
		if err != nil {
			return Table{}, err
		}
		defer x.Close()
		runner = x
	default:
		x, err := OpenReal(ctx, o, deps)
		if err != nil {
			return Table{}, err
		}
		defer x.Close()
		runner = x
	}
	if err := writeConfig(o, deps.Version); err != nil {
		return Table{}, err
	}
	for _, p := range pending {
		if ctx.Err() != nil {
			return Table{}, ctx.Err()
		}
		r, err := runner.Run(ctx, arms[p.Strategy], p.Seed)
		if err != nil {
			return Table{}, fmt.Errorf("strategy %s seed %d: %w", p.Strategy, p.Seed, err)
		}
		if err := AppendResult(o.Dir, r); err != nil {
			return Table{}, err
		}
		deps.Log.Info().Str("strategy", p.Strategy).Uint64("seed", p.Seed).Float64("final_heldout", r.Final).
			Float64("seconds", r.Seconds).Msg("run finished")
	}
	if results, err = ReadResults(o.Dir); err != nil {
		return Table{}, err
	}
	tab := Summarize(results, o)
	if err := tab.Draw(o.Dir); err != nil {
		return Table{}, err
	}
	var buf strings.Builder
	if err := tab.Print(&buf); err != nil {
		return Table{}, err
	}
	return tab, run.WriteFileAtomic(filepath.Join(o.Dir, "table.txt"), []byte(buf.String()))
}

// Pending are the runs of o that results do not hold, seed by seed, every
// strategy in turn: an experiment cut short holds as many seeds of each
// strategy, give or take one.
func Pending(o Options, results []Result) []Key {
	done := map[Key]bool{}
	for _, r := range results {
		done[Key{r.Strategy, r.Seed}] = true
	}
	var pending []Key
	for i := range o.Seeds {
		seed := o.FirstSeed + uint64(i)
		for _, s := range o.Strategies {
			if k := (Key{s, seed}); !done[k] {
				pending = append(pending, k)
			}
		}
	}
	return pending
}

// runWhole runs the actors; a run cut short by ctx is an error (an
// experiment keeps whole runs only).
func runWhole(ctx context.Context, cfg actors.Config, deps actors.Deps) (actors.Summary, error) {
	sum, err := actors.Run(ctx, cfg, deps)
	if err == nil {
		err = ctx.Err()
	}
	return sum, err
}
