package experiment

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/rs/zerolog"

	"github.com/frognano/frog/actors"
	"github.com/frognano/frog/curriculum"
	"github.com/frognano/frog/run"
)

// simOptions is a small sim experiment of frontier and uniform.
func simOptions(dir string) Options {
	d := curriculum.DefaultReplayConfig()
	return Options{Mode: "sim", Strategies: []string{"frontier", "uniform"}, Seeds: 2, FirstSeed: 1, Budget: 1200, Points: 4,
		Concurrency: 8, GroupSize: 8, GroupsPer: 4, TaskRefill: 4, Refill: true, LearningRate: 0.004, TaskSpread: 0.5, Noise: 0.5,
		Heldout: 50, TargetSolve: 0.3, Dir: dir,
		Replay: curriculum.ReplayOptions{FreshShare: d.FreshShare, Temperature: d.Temperature, Staleness: d.Staleness,
			Discount: d.Estimate.Discount, FixedSet: d.FixedSet, Capacity: d.Capacity, Compound: d.Compound}}
}

// simDeps makes the replay curricula as frog experiment curriculum does
// with its default flags.
func simDeps(o Options) Deps {
	return Deps{Version: "test", Log: zerolog.Nop(),
		Curriculum: func(a Arm, seed uint64, difficulty float64) (curriculum.Curriculum, error) {
			cfg := curriculum.DefaultReplayConfig()
			cfg.Strategy, cfg.Seed, cfg.Difficulty = a.Strategy, seed, difficulty
			o.Replay.Apply(&cfg)
			if a.Temperature > 0 {
				cfg.Temperature = a.Temperature
			}
			cfg.Return = cfg.Return || a.Return
			cfg.UpdateGroups = o.GroupsPer
			return curriculum.NewReplay(cfg)
		}}
}

// TestRunSim runs a small sim experiment through Run: every run spends
// exactly its budget and has a curve of Points+1 points; the table is
// what table.txt holds, with the curves drawn; a second Run runs nothing
// again, a further seed runs only that seed, and other settings in the
// same directory are a usage error.
func TestRunSim(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "exp")
	o := simOptions(dir)
	tab, err := Run(context.Background(), o, simDeps(o))
	if err != nil {
		t.Fatal(err)
	}
	results, err := ReadResults(dir)
	if err != nil || len(results) != 4 {
		t.Fatalf("results.jsonl: %d runs, %v; want 4", len(results), err)
	}
	var order []Key
	for _, r := range results {
		order = append(order, Key{r.Strategy, r.Seed})
		if r.Executions != o.Budget || r.Episodes != o.Budget || r.FrogVersion != "test" {
			t.Errorf("%s seed %d: %d test executions, %d episodes, version %q; want the budget, %d", r.Strategy, r.Seed, r.Executions, r.Episodes, r.FrogVersion, o.Budget)
		}
		if len(r.CurveX) != o.Points+1 || r.CurveX[o.Points] != o.Budget || r.Final != r.CurveY[o.Points] {
			t.Errorf("%s seed %d: curve %v → %v", r.Strategy, r.Seed, r.CurveX, r.CurveY)
		}
	}
	if diff := cmp.Diff(order, []Key{{"frontier", 1}, {"uniform", 1}, {"frontier", 2}, {"uniform", 2}}); diff != "" {
		t.Errorf("runs not seed by seed, every strategy in turn (-got +want):\n%s", diff)
	}
	if len(tab.Rows) != 2 || tab.Rows[0].Strategy != "frontier" || tab.Rows[0].VsUniform == nil || tab.Rows[1].VsUniform != nil {
		t.Errorf("table rows %+v: want frontier with its paired difference from uniform, then uniform", tab.Rows)
	}
	var printed strings.Builder
	if err := tab.Print(&printed); err != nil {
		t.Fatal(err)
	}
	if saved, err := os.ReadFile(filepath.Join(dir, "table.txt")); err != nil || string(saved) != printed.String() {
		t.Errorf("table.txt %q, %v; want what Print prints, %q", saved, err, printed.String())
	}
	for _, name := range []string{"config.json", "curriculum.png", "curriculum.svg"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}

	if _, err := Run(context.Background(), o, simDeps(o)); err != nil { // resumed: nothing left to run
		t.Fatal(err)
	}
	if again, _ := ReadResults(dir); len(again) != 4 {
		t.Errorf("a second Run left %d runs; want the same 4", len(again))
	}
	more := o
	more.Seeds = 3
	if got := Pending(more, results); !slices.Equal(got, []Key{{"frontier", 3}, {"uniform", 3}}) {
		t.Errorf("Pending with a third seed: %v; want that seed's runs only", got)
	}
	if _, err := Run(context.Background(), more, simDeps(more)); err != nil {
		t.Fatal(err)
	}
	if again, _ := ReadResults(dir); len(again) != 6 {
		t.Errorf("Seeds 3 after 2 left %d runs; want 6", len(again))
	}

	other := o
	other.Budget = 1400
	var ue *run.UsageError
	if _, err := Run(context.Background(), other, simDeps(other)); !errors.As(err, &ue) {
		t.Errorf("another budget in the same directory: %v; want a usage error", err)
	}
}

// TestRunCutShort: a run cut short by its context is not recorded.
func TestRunCutShort(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "exp")
	o := simOptions(dir)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Run(ctx, o, simDeps(o)); !errors.Is(err, context.Canceled) {
		t.Errorf("Run with a cancelled context: %v; want context.Canceled", err)
	}
	if results, err := ReadResults(dir); err != nil || len(results) != 0 {
		t.Errorf("results after a cancelled Run: %d, %v; want none", len(results), err)
	}
}

// TestSummarize: rows in the order the results first name the strategies,
// results of another budget left out, the paired difference from uniform
// on the seeds both have, and the median of the budgets that reached the
// target.
func TestSummarize(t *testing.T) {
	res := func(s string, seed uint64, budget int64, final float64, reach int64) Result {
		return Result{Strategy: s, Seed: seed, Budget: budget, Final: final, Reach: reach, CurveX: []int64{0, budget}, CurveY: []float64{0, final}}
	}
	results := []Result{
		res("uniform", 1, 100, 0.2, -1), res("frontier", 1, 100, 0.5, 60), res("frontier", 2, 100, 0.7, 40),
		res("uniform", 2, 100, 0.4, 100), res("frontier", 3, 100, 0.6, 50), res("hard", 1, 999, 0.9, 10),
	}
	tab := Summarize(results, Options{Mode: "sim", Budget: 100, Heldout: 10, Dir: "d"})
	var names []string
	for _, r := range tab.Rows {
		names = append(names, r.Strategy)
	}
	if diff := cmp.Diff(names, []string{"uniform", "frontier"}); diff != "" {
		t.Fatalf("rows (-got +want):\n%s", diff)
	}
	front := tab.Rows[1]
	if front.Seeds != 3 || front.Reached != 3 || front.Reach != 50 || front.VsUniform == nil {
		t.Fatalf("frontier row %+v", front)
	}
	if got, want := front.VsUniform.Mean, (0.3+0.3)/2; got < want-1e-9 || got > want+1e-9 {
		t.Errorf("frontier − uniform = %v; want %v, over the 2 seeds both have", got, want)
	}
	if u := tab.Rows[0]; u.VsUniform != nil || u.Reached != 1 {
		t.Errorf("uniform row %+v: want no difference from itself, 1 seed reaching", u)
	}
}

// TestRunRefusesAnUnknownMode: a mode Run has no Runner for (or real
// without its options), or a runner that cannot open, is an error before
// the directory is made.
func TestRunRefusesAnUnknownMode(t *testing.T) {
	for _, mode := range []string{"", "replay", "real"} {
		dir := filepath.Join(t.TempDir(), "exp")
		o := simOptions(dir)
		o.Mode = mode
		if _, err := Run(context.Background(), o, simDeps(o)); err == nil {
			t.Errorf("mode %q: no error", mode)
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("mode %q: the directory was made (%v)", mode, err)
		}
	}
	// A replay whose tables cannot be opened leaves no directory either,
	// so that the corrected command is not refused as other settings.
	dir := filepath.Join(t.TempDir(), "exp")
	o := simOptions(dir)
	o.Mode, o.Tables = "replay", &TableOptions{Table: filepath.Join(dir, "missing.jsonl"), HeldoutTable: filepath.Join(dir, "missing.jsonl")}
	if _, err := Run(context.Background(), o, simDeps(o)); err == nil {
		t.Error("replay of a missing table: no error")
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("replay of a missing table: the directory was made (%v)", err)
	}
}

// TestSummarizeRanks: the final held-out point's rates within 1, 3 and 10
// tries and its MRR are averaged over seeds, overall and per family, and
// printed; results without them (sim mode, an older frog) add no section.
func TestSummarizeRanks(t *testing.T) {
	point := func(w1, w3, w10, mrr float64) HeldoutPoint {
		at := []actors.RateAt{{Tries: 1, Rate: actors.Rate{Rate: w1}}, {Tries: 3, Rate: actors.Rate{Rate: w3}}, {Tries: 10, Rate: actors.Rate{Rate: w10}}}
		m := actors.Mean{Mean: mrr}
		return HeldoutPoint{Solved: w10, AtTries: at, MRR: &m, ByFamily: []actors.RateOf{{Key: "stmt", AtTries: at, MRR: m}}}
	}
	res := func(seed uint64, pts ...HeldoutPoint) Result {
		return Result{Strategy: "frontier", Seed: seed, Budget: 100, Points: pts, CurveX: []int64{0, 100}, CurveY: []float64{0, 0}}
	}
	results := []Result{
		res(1, point(0, 0, 0, 0), point(0.2, 0.4, 0.6, 0.3)),
		res(2, point(0, 0, 0, 0), point(0.4, 0.6, 0.8, 0.5)),
		{Strategy: "uniform", Seed: 1, Budget: 100, CurveX: []int64{0, 100}, CurveY: []float64{0, 0}}, // from before the ranks
	}
	tab := Summarize(results, Options{Mode: "real", Budget: 100, Heldout: 10, Dir: "d"})
	front, uni := tab.Rows[0], tab.Rows[1]
	if uni.Ranks != nil || front.Ranks == nil || len(front.ByFamily) != 1 {
		t.Fatalf("ranks: frontier %+v (families %+v), uniform %+v", front.Ranks, front.ByFamily, uni.Ranks)
	}
	var means []float64
	for _, w := range front.Ranks.Within {
		means = append(means, w.Mean)
	}
	if diff := cmp.Diff(means, []float64{0.3, 0.5, 0.7}, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
		t.Errorf("within 1, 3, 10 (-got +want):\n%s", diff)
	}
	if m := front.Ranks.MRR; math.Abs(m.Mean-0.4) > 1e-9 || m.Lo > 0.4 || m.Hi < 0.4 || front.ByFamily[0].Family != "stmt" {
		t.Errorf("MRR %+v, families %+v; want 0.4 inside its interval, stmt", m, front.ByFamily)
	}
	var out strings.Builder
	if err := tab.Print(&out); err != nil {
		t.Fatal(err)
	}
	for _, re := range []string{
		`(?m)^strategy +family +seeds +within 1 +within 3 +within 10 +MRR *$`,
		`(?m)^frontier +all +2 +30\.0% \[20\.0, 40\.0\] +50\.0% \[40\.0, 60\.0\] +70\.0% \[60\.0, 80\.0\] +0\.400 \[0\.300, 0\.500\] *$`,
		`(?m)^frontier +stmt +2 +30\.0% `,
	} {
		if !regexp.MustCompile(re).MatchString(out.String()) {
			t.Errorf("no line matches %s in\n%s", re, out.String())
		}
	}
	if strings.Contains(out.String(), "uniform  all") {
		t.Errorf("a ranks line for results without them:\n%s", out.String())
	}
}
