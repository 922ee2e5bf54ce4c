package experiment

import (
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"slices"
	"sort"
	"text/tabwriter"

	"github.com/frognano/frog/actors"
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
	// AUCVsUniform and FirstVsUniform are the paired differences from
	// uniform of the area under the curve and of the final point's rate
	// within one try (where the results have it).
	AUCVsUniform   *Interval `json:"auc_minus_uniform,omitempty"`
	FirstVsUniform *Interval `json:"first_try_minus_uniform,omitempty"`
	// Distinct is the number of distinct training tasks a run played.
	Distinct Interval `json:"distinct_tasks"`
	CurveX   []int64  `json:"curve_executions"`
	Curve    []Interval
	// Ranks are the final held-out point's rates within each number of
	// tries and its MRR (real mode), overall and per operator family of
	// the bug: absent where the results predate them.
	Ranks    *Ranks  `json:"final_ranks,omitempty"`
	ByFamily []Ranks `json:"final_by_family,omitempty"`
}

// Ranks are a group's held-out solve rates within each of Tries tries and
// its mean reciprocal rank of the first fix, each a mean over seeds with
// its 95% bootstrap interval.
type Ranks struct {
	Family string     `json:"family,omitempty"`
	Seeds  int        `json:"seeds"`
	Tries  []int      `json:"tries"`
	Within []Interval `json:"within"`
	MRR    Interval   `json:"mrr"`
}

// finalRanks are the Ranks of the final held-out points of rs, overall
// and per family; nil where no result has them.
func finalRanks(rs []Result, rng *rand.Rand) (*Ranks, []Ranks) {
	type acc struct {
		within map[int][]float64
		mrr    []float64
	}
	add := func(a *acc, at []actors.RateAt, mrr float64) {
		for _, x := range at {
			a.within[x.Tries] = append(a.within[x.Tries], x.Rate.Rate)
		}
		a.mrr = append(a.mrr, mrr)
	}
	all := &acc{within: map[int][]float64{}}
	fams := map[string]*acc{}
	for _, r := range rs {
		if len(r.Points) == 0 || r.Points[len(r.Points)-1].MRR == nil {
			continue
		}
		pt := r.Points[len(r.Points)-1]
		add(all, pt.AtTries, pt.MRR.Mean)
		for _, f := range pt.ByFamily {
			if fams[f.Key] == nil {
				fams[f.Key] = &acc{within: map[int][]float64{}}
			}
			add(fams[f.Key], f.AtTries, f.MRR.Mean)
		}
	}
	if len(all.mrr) == 0 {
		return nil, nil
	}
	ranks := func(family string, a *acc) Ranks {
		k := Ranks{Family: family, Seeds: len(a.mrr), Tries: slices.Sorted(maps.Keys(a.within)), MRR: boot(a.mrr, rng)}
		for _, t := range k.Tries {
			k.Within = append(k.Within, boot(a.within[t], rng))
		}
		return k
	}
	overall := ranks("", all)
	var by []Ranks
	for _, f := range slices.Sorted(maps.Keys(fams)) {
		by = append(by, ranks(f, fams[f]))
	}
	return &overall, by
}

// Table is an experiment's summary: a row per strategy, in the order the
// results first name them.
type Table struct {
	Mode string `json:"mode"`
	// Episodes says the budget counts episodes (replay mode, and real
	// mode with RealOptions.BudgetEpisodes).
	Episodes    bool    `json:"budget_episodes,omitempty"`
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
	uniform := map[uint64]Result{}
	for _, r := range by[curriculum.StrategyUniform] {
		uniform[r.Seed] = r
	}
	tab := Table{Mode: o.Mode, Episodes: o.budgetEpisodes(), Budget: o.Budget, TargetSolve: o.TargetSolve, Heldout: o.Heldout, Dir: o.Dir}
	for _, r := range results {
		if r.HeldoutTasks > 0 && r.Budget == o.Budget {
			tab.Heldout = r.HeldoutTasks // what was played: the check may have quarantined some
		}
	}
	for _, s := range order {
		rs := by[s]
		sort.Slice(rs, func(i, j int) bool { return rs[i].Seed < rs[j].Seed })
		var final, auc, zero, train, reach, diff, aucDiff, firstDiff, tasks []float64
		for _, r := range rs {
			final, auc, zero, train = append(final, r.Final), append(auc, r.AUC), append(zero, r.ZeroSignal), append(train, r.TrainPass)
			tasks = append(tasks, float64(r.Distinct))
			if r.Reach >= 0 {
				reach = append(reach, float64(r.Reach))
			}
			if u, ok := uniform[r.Seed]; ok {
				diff, aucDiff = append(diff, r.Final-u.Final), append(aucDiff, r.AUC-u.AUC)
				if a, b := firstTry(r), firstTry(u); a >= 0 && b >= 0 {
					firstDiff = append(firstDiff, a-b)
				}
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
		// Last, so that the intervals above come out as they did before
		// these were measured.
		row.Ranks, row.ByFamily = finalRanks(rs, rng)
		row.Distinct = boot(tasks, rng)
		if len(diff) > 0 && s != curriculum.StrategyUniform {
			d := boot(aucDiff, rng)
			row.AUCVsUniform = &d
			if len(firstDiff) > 0 {
				f := boot(firstDiff, rng)
				row.FirstVsUniform = &f
			}
		}
		tab.Rows = append(tab.Rows, row)
	}
	return tab
}

// firstTry is the final held-out point's rate within one try; -1 where
// the result does not have it.
func firstTry(r Result) float64 {
	if len(r.Points) == 0 {
		return -1
	}
	for _, at := range r.Points[len(r.Points)-1].AtTries {
		if at.Tries == 1 {
			return at.Rate.Rate
		}
	}
	return -1
}

// unit is what a budget counts: episodes (Table.Episodes), test
// executions otherwise; and its short name.
func (t Table) unit() (string, string) {
	if t.Episodes {
		return "episodes", "episodes"
	}
	return "test executions", "execs"
}

// Print writes the table as text: what table.txt holds.
func (t Table) Print(w io.Writer) error {
	unit, short := t.unit()
	fmt.Fprintf(w, "curriculum experiment (%s): budget %d %s per run, %d held-out tasks; 95%% bootstrap intervals over seeds\n",
		t.Mode, t.Budget, unit, t.Heldout)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "strategy\tseeds\tfinal held-out\tarea under curve\tzero-variance groups\tdistinct tasks\ttrain pass\t%s to %.2f\tfinal − uniform (paired)\t\n", short, t.TargetSolve)
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
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%.0f [%.0f, %.0f]\t%.1f%%\t%s\t%s\t\n", r.Strategy, r.Seeds, pct(r.Final), pct(r.AUC), pct(r.ZeroSignal),
			r.Distinct.Mean, r.Distinct.Lo, r.Distinct.Hi, 100*r.TrainPass, reach, vs)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := t.printPaired(w); err != nil {
		return err
	}
	if err := t.printRanks(w); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "wrote %s (results.jsonl, table.txt, curriculum.png, curriculum.svg)\n", t.Dir)
	return err
}

// printPaired writes each strategy's paired differences from uniform on
// the same seeds: the final point, the area under the curve and the
// final rate within one try; nothing when no strategy has them.
func (t Table) printPaired(w io.Writer) error {
	var rows []Row
	for _, r := range t.Rows {
		if r.VsUniform != nil {
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 {
		return nil
	}
	fmt.Fprintln(w, "paired differences from uniform on the same seeds (percentage points, mean and 95% bootstrap interval)")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "strategy\tfinal\tarea under curve\twithin 1 try\t")
	pts := func(v *Interval) string {
		if v == nil {
			return "—"
		}
		return fmt.Sprintf("%+.1f [%+.1f, %+.1f]", 100*v.Mean, 100*v.Lo, 100*v.Hi)
	}
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t\n", r.Strategy, pts(r.VsUniform), pts(r.AUCVsUniform), pts(r.FirstVsUniform))
	}
	return tw.Flush()
}

// printRanks writes the final held-out point's rates within 1, 3 and 10
// tries and its MRR per strategy, overall and per family (real mode).
func (t Table) printRanks(w io.Writer) error {
	var tries []int
	for _, r := range t.Rows {
		if r.Ranks != nil && len(r.Ranks.Tries) > len(tries) {
			tries = r.Ranks.Tries
		}
	}
	if tries == nil {
		return nil
	}
	fmt.Fprintln(w, "final held-out point by tries and by family of the bug (mean over seeds, 95% bootstrap interval; MRR: mean reciprocal rank of the first fix)")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := "strategy\tfamily\tseeds\t"
	for _, n := range tries {
		head += fmt.Sprintf("within %d\t", n)
	}
	fmt.Fprintln(tw, head+"MRR\t")
	pct := func(v Interval) string { return fmt.Sprintf("%.1f%% [%.1f, %.1f]", 100*v.Mean, 100*v.Lo, 100*v.Hi) }
	line := func(strategy string, k Ranks) {
		family := k.Family
		if family == "" {
			family = "all"
		}
		row := fmt.Sprintf("%s\t%s\t%d\t", strategy, family, k.Seeds)
		for _, n := range tries {
			cell := "—"
			if i := slices.Index(k.Tries, n); i >= 0 {
				cell = pct(k.Within[i])
			}
			row += cell + "\t"
		}
		fmt.Fprintln(tw, row+fmt.Sprintf("%.3f [%.3f, %.3f]\t", k.MRR.Mean, k.MRR.Lo, k.MRR.Hi))
	}
	for _, r := range t.Rows {
		if r.Ranks == nil {
			continue
		}
		line(r.Strategy, *r.Ranks)
		for _, f := range r.ByFamily {
			line(r.Strategy, f)
		}
	}
	return tw.Flush()
}
