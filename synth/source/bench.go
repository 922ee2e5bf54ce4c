package source

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/synth"
	"github.com/frognano/frog/synth/validate"
)

// BenchOptions say what BenchGremlins measures.
type BenchOptions struct {
	// Module is the module to mutate (see Open) and Package the package
	// directory in it ("./trees/binaryheap").
	Module  Module
	Package string
	// Gremlins is the gremlins binary; Workers its --workers and frog's.
	Gremlins string
	Workers  int
	// Repeats is how many times each tool runs, interleaved.
	Repeats int
	// Provider opens frog's sandbox.
	Provider env.Provider
}

// BenchRun is one run of one tool on the package.
type BenchRun struct {
	Seconds float64 `json:"seconds"`
	// Mutants is how many mutants the tool ran the tests of (not counting
	// those no test covers and, for frog, duplicates); Caught how many of
	// them the tests caught (gremlins: killed; frog: FAIL_TO_PASS found).
	Mutants   int     `json:"mutants"`
	Caught    int     `json:"caught"`
	PerSecond float64 `json:"mutants_per_second"`
	// Frog only: the verdicts.
	Counters *validate.Counters `json:"counters,omitempty"`
}

// BenchReport compares frog's validator with gremlins on one package.
type BenchReport struct {
	Module   string     `json:"module"`
	Package  string     `json:"package"`
	Workers  int        `json:"gremlins_workers"`
	Frog     []BenchRun `json:"frog"`
	Gremlins []BenchRun `json:"gremlins"`
	// FrogMedian and GremlinsMedian are the median mutants per second;
	// Ratio is frog's over gremlins'.
	FrogMedian     float64 `json:"frog_median"`
	GremlinsMedian float64 `json:"gremlins_median"`
	Ratio          float64 `json:"ratio"`
}

// BenchGremlins runs frog's synthesizer (every single mutant of the
// package, no combinations, Workers workers each in a fresh sandbox:
// baseline, coverage map, schema builds, vet, test runs) and gremlins'
// `unleash --workers Workers` on the same package, Repeats times each,
// interleaved, after one untimed warm-up of the build cache.
func BenchGremlins(ctx context.Context, o BenchOptions, log zerolog.Logger) (BenchReport, error) {
	rep := BenchReport{Module: o.Module.String(), Package: o.Package, Workers: o.Workers}
	if _, err := exec.LookPath(o.Gremlins); err != nil {
		return rep, fmt.Errorf("gremlins: %w (install it with `make gremlins`, or go install github.com/go-gremlins/gremlins/cmd/gremlins@v0.6.0)", err)
	}
	if _, err := o.frog(ctx, log); err != nil { // warm-up
		return rep, err
	}
	for range o.Repeats {
		g, err := o.gremlins(ctx)
		if err != nil {
			return rep, err
		}
		rep.Gremlins = append(rep.Gremlins, g)
		f, err := o.frog(ctx, log)
		if err != nil {
			return rep, err
		}
		rep.Frog = append(rep.Frog, f)
	}
	rep.FrogMedian, rep.GremlinsMedian = medianRate(rep.Frog), medianRate(rep.Gremlins)
	if rep.GremlinsMedian > 0 {
		rep.Ratio = rep.FrogMedian / rep.GremlinsMedian
	}
	return rep, nil
}

func medianRate(runs []BenchRun) float64 {
	r := make([]float64, len(runs))
	for i, x := range runs {
		r[i] = x.PerSecond
	}
	slices.Sort(r)
	if len(r) == 0 {
		return 0
	}
	if len(r)%2 == 1 {
		return r[len(r)/2]
	}
	return (r[len(r)/2-1] + r[len(r)/2]) / 2
}

func (o BenchOptions) frog(ctx context.Context, log zerolog.Logger) (BenchRun, error) {
	start := time.Now()
	var (
		mu  sync.Mutex
		run BenchRun
	)
	s, err := New([]Module{o.Module}, Config{
		Provider: o.Provider, Workers: o.Workers, MaxMutants: -1, Combos: -1, Packages: []string{o.Package},
		Observe: func(_ validate.Mutant, r validate.Result) {
			mu.Lock()
			defer mu.Unlock()
			if r.Runs > 0 || r.Outcome == validate.NonViable { // run, or compiled and rejected
				run.Mutants++
			}
			if len(r.FailToPass) > 0 {
				run.Caught++
			}
		},
	}, log)
	if err != nil {
		return BenchRun{}, err
	}
	defer s.Close(context.WithoutCancel(ctx))
	err = s.Generate(ctx, 0, func(synth.TaskRecord) error { return nil })
	if !errors.Is(err, ErrExhausted) {
		return BenchRun{}, fmt.Errorf("frog: %w", err)
	}
	st := s.Stats()
	if st.Modules[0].Prepared == 0 {
		return BenchRun{}, fmt.Errorf("frog: package %s not prepared: %v", o.Package, st.Modules[0].Skipped)
	}
	run.Seconds = time.Since(start).Seconds()
	run.PerSecond = float64(run.Mutants) / run.Seconds
	run.Counters = &st.Total
	return run, nil
}

func (o BenchOptions) gremlins(ctx context.Context) (BenchRun, error) {
	out := filepath.Join(os.TempDir(), fmt.Sprintf("frog-gremlins-%d.json", os.Getpid()))
	defer os.Remove(out)
	start := time.Now()
	// gremlins sets its timeouts from the time of its coverage run: a run
	// answered from the test cache makes every mutant time out.
	if b, err := exec.CommandContext(ctx, "go", "clean", "-testcache").CombinedOutput(); err != nil {
		return BenchRun{}, fmt.Errorf("go clean -testcache: %v: %s", err, b)
	}
	cmd := exec.CommandContext(ctx, o.Gremlins, "unleash", "--workers", fmt.Sprint(o.Workers), "-o", out, o.Package)
	cmd.Dir = o.Module.Dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=", "GOTOOLCHAIN=local", "GOPROXY=off")
	if b, err := cmd.CombinedOutput(); err != nil {
		return BenchRun{}, fmt.Errorf("gremlins: %v: %s", err, firstLine(b))
	}
	secs := time.Since(start).Seconds()
	data, err := os.ReadFile(out)
	if err != nil {
		return BenchRun{}, fmt.Errorf("gremlins report: %w", err)
	}
	var r struct {
		Files []struct {
			Mutations []struct{ Status string } `json:"mutations"`
		} `json:"files"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return BenchRun{}, fmt.Errorf("gremlins report: %w", err)
	}
	run := BenchRun{Seconds: secs}
	for _, f := range r.Files {
		for _, m := range f.Mutations {
			switch m.Status {
			case "KILLED":
				run.Mutants++
				run.Caught++
			case "LIVED", "TIMED OUT", "NOT VIABLE":
				run.Mutants++
			}
		}
	}
	run.PerSecond = float64(run.Mutants) / secs
	return run, nil
}
