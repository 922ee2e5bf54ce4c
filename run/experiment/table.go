package experiment

import (
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sort"
	"text/tabwriter"

	"github.com/frognano/frog/curriculum"
	"github.com/frognano/frog/policy"
)

// Interval is a mean and its 95% bootstrap interval over seeds.
type Interval struct {
	Mean float64 `json:"mean"`
	Lo   float64 `json:"lo"`
	Hi   float64 `json:"hi"`
}

func boot(xs []float64, rng *rand.Rand) Interval {
	lo, hi := policy.BootstrapMean(xs, 2000, rng)
	return Interval{policy.Mean(xs), lo, hi}
}

// Row is one strategy's line of the table.
type Row struct {
	Strategy   string    `json:"strategy"`
	Seeds      int       `json:"seeds"`
	Final      Interval  `json:"final_heldout"`
	AUC        Interval  `json:"auc"`
	ZeroSignal Interval  `json:"zero_signal_share"`
	TrainPass  float64   `json:"train_pass_rate"`
	Reached    int       `json:"reached"`
	Reach      float64   `json:"reach_median"`
	VsUniform  *Interval `json:"final_minus_uniform,omitempty"`
	CurveX     []int64   `json:"curve_executions"`
	Curve      []Interval
}

// Table is an experiment's summary: a row per strategy, in the order the
// results first name them.
type Table struct {
	Mode        string  `json:"mode"`
	Budget      int64   `json:"budget"`
	TargetSolve float64 `json:"target_solve"`
	Heldout     int     `json:"heldout_tasks"`
	Rows        []Row   `json:"strategies"`
	Dir         string  `json:"dir"`
}

// Summarize is the table of the results of o.Budget: per strategy, each
// measure's mean over seeds with its 95% bootstrap interval (a seeded
// bootstrap: the same results give the same table), and the paired
// difference from uniform on the same seeds.
func Summarize(results []Result, o Options) Table {
	rng := rand.New(rand.NewPCG(1, 2))
	by := map[string][]Result{}
	var order []string
	for _, r := range results {
		if r.Budget != o.Budget {
			continue
		}
		if by[r.Strategy] == nil {
			order = append(order, r.Strategy)
		}
		by[r.Strategy] = append(by[r.Strategy], r)
	}
	uniform := map[uint64]float64{}
	for _, r := range by[curriculum.StrategyUniform] {
		uniform[r.Seed] = r.Final
	}
	tab := Table{Mode: o.Mode, Budget: o.Budget, TargetSolve: o.TargetSolve, Heldout: o.Heldout, Dir: o.Dir}
	for _, r := range results {
		if r.HeldoutTasks > 0 && r.Budget == o.Budget {
			tab.Heldout = r.HeldoutTasks // what was played: the check may have quarantined some
		}
	}
	for _, s := range order {
		rs := by[s]
		sort.Slice(rs, func(i, j int) bool { return rs[i].Seed < rs[j].Seed })
		var final, auc, zero, train, reach, diff []float64
		for _, r := range rs {
			final, auc, zero, train = append(final, r.Final), append(auc, r.AUC), append(zero, r.ZeroSignal), append(train, r.TrainPass)
			if r.Reach >= 0 {
				reach = append(reach, float64(r.Reach))
			}
			if u, ok := uniform[r.Seed]; ok {
				diff = append(diff, r.Final-u)
			}
		}
		row := Row{Strategy: s, Seeds: len(rs), Final: boot(final, rng), AUC: boot(auc, rng), ZeroSignal: boot(zero, rng),
			TrainPass: policy.Mean(train), Reached: len(reach), Reach: -1, CurveX: rs[0].CurveX}
		if len(reach) > 0 {
			slices.Sort(reach)
			row.Reach = reach[len(reach)/2]
		}
		if len(diff) > 0 && s != curriculum.StrategyUniform {
			d := boot(diff, rng)
			row.VsUniform = &d
		}
		for i := range rs[0].CurveY {
			var ys []float64
			for _, r := range rs {
				if i < len(r.CurveY) {
					ys = append(ys, r.CurveY[i])
				}
			}
			row.Curve = append(row.Curve, boot(ys, rng))
		}
		tab.Rows = append(tab.Rows, row)
	}
	return tab
}

// Print writes the table as text: what table.txt holds.
func (t Table) Print(w io.Writer) error {
	fmt.Fprintf(w, "curriculum experiment (%s): budget %d test executions per run, %d held-out tasks; 95%% bootstrap intervals over seeds\n",
		t.Mode, t.Budget, t.Heldout)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "strategy\tseeds\tfinal held-out\tarea under curve\tzero-variance groups\ttrain pass\texecs to %.2f\tfinal − uniform (paired)\t\n", t.TargetSolve)
	pct := func(v Interval) string { return fmt.Sprintf("%.1f%% [%.1f, %.1f]", 100*v.Mean, 100*v.Lo, 100*v.Hi) }
	for _, r := range t.Rows {
		reach := "not reached"
		if r.Reached > 0 {
			reach = fmt.Sprintf("%.0f (%d/%d seeds)", r.Reach, r.Reached, r.Seeds)
		}
		vs := "—"
		if r.VsUniform != nil {
			vs = fmt.Sprintf("%+.1f [%+.1f, %+.1f] pts", 100*r.VsUniform.Mean, 100*r.VsUniform.Lo, 100*r.VsUniform.Hi)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%.1f%%\t%s\t%s\t\n", r.Strategy, r.Seeds, pct(r.Final), pct(r.AUC), pct(r.ZeroSignal), 100*r.TrainPass, reach, vs)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "wrote %s (results.jsonl, table.txt, curriculum.png, curriculum.svg)\n", t.Dir)
	return err
}
