package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"image/color"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/frognano/frog/actors"
	"github.com/frognano/frog/run"
	"github.com/frognano/frog/run/chart"
	"github.com/spf13/cobra"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

func newReportCmd(g *globals) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "report RUN",
		Short: "Draw a training run's learning curves (PNG and SVG) and summarize it",
		Long: `report reads RUN/metrics.jsonl (written by frog train) and draws RUN/report.png
and RUN/report.svg: the training pass rate, the held-out solve rate with its 95%
interval as a band and the baselines' held-out rates as lines, the share of GRPO
groups whose rewards were all equal (no signal; with --refill-zero-variance
these are dropped and refilled before they reach a batch, and the panel shows
them all) among the groups judged between two updates, and the throughput
(episodes and tries per second). It prints a summary: where the network
started (--start), the first and last held-out evaluations against the
baselines (with --baselines prior, the hand prior's level) — solved, within 1, 3 and 10 tries
(95% Wilson intervals) and the mean reciprocal rank of the first fix (MRR,
95% percentile bootstrap interval) — and the last evaluation per operator
family of the bug (whose inverse template is the fix); the last evaluation
against the first and against each baseline task by task (how many tasks
only one of the two solved, and McNemar's exact p); and, for the built-in
policy, the features its network weighs most: for each, how far the network's
choices move when the feature is zeroed (over the last 300 decisions its
trajectories recorded) and its linear weight at the start and now, so that you
can see whether it rediscovered fault localisation and what it added.`,
		Example: `  frog report runs/train-20261201-120000`,
		Args:    cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			s, err := readRun(args[0])
			if err != nil {
				return err
			}
			files, err := s.draw(args[0])
			if err != nil {
				return err
			}
			s.Files = files
			s.explain(args[0])
			s.readStart(args[0])
			if asJSON {
				return json.NewEncoder(g.stdout).Encode(s)
			}
			return s.print(g.stdout)
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the summary as one JSON object")
	return c
}

// runSeries is what report reads from metrics.jsonl.
type runSeries struct {
	Run       string      `json:"run"`
	Updates   int         `json:"updates"`
	Train     plotter.XYs `json:"-"`
	ZeroShare plotter.XYs `json:"-"`
	Refilled  plotter.XYs `json:"-"`
	// Judged sums the groups the learner judged over the updates (runs of
	// a frog before it counted them have none).
	Judged    actors.GroupsJudged  `json:"groups_judged"`
	EpsPerSec plotter.XYs          `json:"-"`
	TriesSec  plotter.XYs          `json:"-"`
	Heldout   []run.Event          `json:"heldout"`
	Baselines map[string]run.Event `json:"baselines"`
	Files     []string             `json:"files"`
	// Weights is what the network of the last checkpoint makes of its
	// features (absent for runs without one: an LLM run).
	Weights *run.Explanation `json:"weights,omitempty"`
	// Start is where the run's network started (--start; readStart).
	Start string `json:"start,omitempty"`
	// Pairs compares the last held-out evaluation with the first and with
	// each baseline, task by task (pairs).
	Pairs []actors.Comparison `json:"pairs,omitempty"`
}

func readRun(dir string) (*runSeries, error) {
	f, err := os.Open(filepath.Join(dir, "metrics.jsonl"))
	if err != nil {
		return nil, &UsageError{Err: fmt.Errorf("report: %w (is %s a frog train run?)", err, dir)}
	}
	defer f.Close()
	s := &runSeries{Run: dir, Baselines: map[string]run.Event{}}
	// One point per update and one evaluation per update: a run resumed
	// by an older frog wrote the updates after its checkpoint again, and
	// the later copy is the one the run went on from.
	updates := map[int64]run.Event{}
	heldout := map[int64]run.Event{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var e run.Event
		if err := json.Unmarshal(line, &e); err != nil {
			continue // a torn last line of a killed run
		}
		switch e.Kind {
		case "update":
			if e.UpdateRecord == nil {
				continue
			}
			updates[e.Update] = e
		case "eval":
			if e.Solved != nil {
				heldout[e.AtUpdate] = e
			}
		case "baseline":
			if e.Solved != nil {
				s.Baselines[e.Policy] = e
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	for _, u := range slices.Sorted(maps.Keys(updates)) {
		e, x := updates[u], float64(u)
		s.Updates = max(s.Updates, int(u))
		s.Train = append(s.Train, plotter.XY{X: x, Y: e.TrainPassRate})
		s.ZeroShare = append(s.ZeroShare, plotter.XY{X: x, Y: e.ZeroSignalShare})
		if j := e.Judged; j.Groups > 0 {
			s.Judged = actors.GroupsJudged{Groups: s.Judged.Groups + j.Groups, ZeroSignal: s.Judged.ZeroSignal + j.ZeroSignal,
				Refilled: s.Judged.Refilled + j.Refilled}
		}
		if e.RefilledShare > 0 {
			s.Refilled = append(s.Refilled, plotter.XY{X: x, Y: e.RefilledShare})
		}
		s.EpsPerSec = append(s.EpsPerSec, plotter.XY{X: x, Y: e.EpisodesPerSecond})
		s.TriesSec = append(s.TriesSec, plotter.XY{X: x, Y: e.TriesPerSecond})
	}
	for _, u := range slices.Sorted(maps.Keys(heldout)) {
		s.Heldout = append(s.Heldout, heldout[u])
	}
	if len(s.Train) == 0 && len(s.Heldout) == 0 {
		return nil, fmt.Errorf("report: %s/metrics.jsonl holds no update and no evaluation", dir)
	}
	s.Pairs = s.pairs()
	return s, nil
}

// pairs compares the last held-out evaluation of the trained policy with
// its first and with each baseline on the tasks both played, at the last
// evaluation's marks, where both lines hold their episodes one by one.
func (s *runSeries) pairs() []actors.Comparison {
	n := len(s.Heldout)
	if n == 0 || len(s.Heldout[n-1].FirstSolves) == 0 {
		return nil
	}
	last := s.Heldout[n-1]
	of := func(e run.Event, name string) actors.EvalReport {
		return actors.EvalReport{Policy: name, FirstSolves: e.FirstSolves}
	}
	var marks []int
	for _, a := range last.AtTries {
		marks = append(marks, a.Tries)
	}
	a := of(last, fmt.Sprintf("update %d", last.AtUpdate))
	var out []actors.Comparison
	if first := s.Heldout[0]; n > 1 && len(first.FirstSolves) > 0 {
		out = append(out, actors.Compare(a, of(first, fmt.Sprintf("update %d", first.AtUpdate)), marks))
	}
	for _, name := range slices.Sorted(maps.Keys(s.Baselines)) {
		if b := s.Baselines[name]; len(b.FirstSolves) > 0 {
			out = append(out, actors.Compare(a, of(b, "baseline "+name), marks))
		}
	}
	return out
}

func (s *runSeries) plots() ([][]*plot.Plot, error) {
	mk := func(title, y string) *plot.Plot {
		p := plot.New()
		p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, "update", y
		p.Legend.Top = true
		return p
	}
	train := mk("training pass rate", "pass rate (last 200 episodes)")
	train.Y.Min, train.Y.Max = 0, 1
	held := mk("held-out solve rate (greedy)", "solved, 95% interval")
	held.Y.Min, held.Y.Max = 0, 1
	zero := mk("groups without signal (all rewards equal)", "share of the groups since the last update")
	zero.Y.Min, zero.Y.Max = 0, 1
	tput := mk("throughput", "per second")
	var errs []error
	errs = append(errs, chart.Line(train, s.Train, chart.Palette[0], false, ""))
	if len(s.Heldout) > 0 {
		var mid plotter.XYs
		var band plotter.XYs
		for _, e := range s.Heldout {
			mid = append(mid, plotter.XY{X: float64(e.AtUpdate), Y: e.Solved.Rate})
			band = append(band, plotter.XY{X: float64(e.AtUpdate), Y: e.Solved.Hi})
		}
		for i := len(s.Heldout) - 1; i >= 0; i-- {
			e := s.Heldout[i]
			band = append(band, plotter.XY{X: float64(e.AtUpdate), Y: e.Solved.Lo})
		}
		if poly, err := plotter.NewPolygon(band); err == nil {
			poly.Color = color.NRGBA{R: 31, G: 119, B: 180, A: 60}
			poly.LineStyle.Width = 0
			held.Add(poly)
		}
		errs = append(errs, chart.Line(held, mid, chart.Palette[0], false, "neural"))
		x0, x1 := 0.0, float64(max(s.Updates, int(s.Heldout[len(s.Heldout)-1].AtUpdate), 1))
		names := make([]string, 0, len(s.Baselines))
		for n := range s.Baselines {
			names = append(names, n)
		}
		sort.Strings(names)
		for i, n := range names {
			r := s.Baselines[n].Solved.Rate
			errs = append(errs, chart.Line(held, plotter.XYs{{X: x0, Y: r}, {X: x1, Y: r}}, chart.Palette[(i+1)%len(chart.Palette)], true, n))
		}
	}
	if len(s.Refilled) > 0 {
		errs = append(errs, chart.Line(zero, s.ZeroShare, chart.Palette[1], false, "no signal"),
			chart.Line(zero, s.Refilled, chart.Palette[4], true, "dropped and refilled"))
	} else {
		errs = append(errs, chart.Line(zero, s.ZeroShare, chart.Palette[1], false, ""))
	}
	errs = append(errs, chart.Line(tput, s.EpsPerSec, chart.Palette[2], false, "episodes/s"), chart.Line(tput, s.TriesSec, chart.Palette[3], false, "tries/s"))
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return [][]*plot.Plot{{train, held}, {zero, tput}}, nil
}

// draw writes report.png and report.svg into dir.
func (s *runSeries) draw(dir string) ([]string, error) {
	ps, err := s.plots()
	if err != nil {
		return nil, err
	}
	w, h := 28*vg.Centimeter, 20*vg.Centimeter
	tiles := draw.Tiles{Rows: 2, Cols: 2, PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	render := func(c draw.Canvas) {
		cs := plot.Align(ps, tiles, c)
		for j := range ps {
			for i := range ps[j] {
				ps[j][i].Draw(cs[j][i])
			}
		}
	}
	img := vgimg.New(w, h)
	render(draw.New(img))
	svg := vgsvg.New(w, h)
	render(draw.New(svg))
	var files []string
	for name, wt := range map[string]io.WriterTo{"report.png": vgimg.PngCanvas{Canvas: img}, "report.svg": svg} {
		var buf bytes.Buffer
		if _, err := wt.WriteTo(&buf); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		path := filepath.Join(dir, name)
		if err := run.WriteFileAtomic(path, buf.Bytes()); err != nil {
			return nil, err
		}
		files = append(files, path)
	}
	sort.Strings(files)
	return files, nil
}

func (s *runSeries) print(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "run\t%s\t%d updates\t\n", s.Run, s.Updates)
	if s.Start != "" {
		fmt.Fprintf(tw, "start\t%s\t\t\n", s.Start)
	}
	if n := len(s.Train); n > 0 {
		fmt.Fprintf(tw, "training pass rate\t%.1f%% at update %.0f\t%.1f%% at update %.0f\t\n", 100*s.Train[0].Y, s.Train[0].X, 100*s.Train[n-1].Y, s.Train[n-1].X)
	}
	if j := s.Judged; j.Groups > 0 {
		fmt.Fprintf(tw, "groups without signal\t%.1f%% of %d judged\t%.1f%% dropped and refilled\t\n",
			100*float64(j.ZeroSignal)/float64(j.Groups), j.Groups, 100*float64(j.Refilled)/float64(j.Groups))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// The held-out evaluations, first and last, and the baselines: one
	// column each.
	var cols []run.Event
	var heads []string
	if n := len(s.Heldout); n > 0 {
		cols, heads = append(cols, s.Heldout[0]), append(heads, fmt.Sprintf("held-out, update %d", s.Heldout[0].AtUpdate))
		if n > 1 {
			cols, heads = append(cols, s.Heldout[n-1]), append(heads, fmt.Sprintf("update %d", s.Heldout[n-1].AtUpdate))
		}
	}
	for _, n := range slices.Sorted(maps.Keys(s.Baselines)) {
		cols, heads = append(cols, s.Baselines[n]), append(heads, "baseline "+n)
	}
	if len(cols) > 0 {
		fmt.Fprintf(tw, "\t%s\t\n", strings.Join(heads, "\t"))
		row := func(name string, cell func(run.Event) string) {
			fmt.Fprintf(tw, "%s", name)
			for _, e := range cols {
				fmt.Fprintf(tw, "\t%s", cell(e))
			}
			fmt.Fprintf(tw, "\t\n")
		}
		rate := func(r actors.Rate) string {
			return fmt.Sprintf("%.1f%% [%.1f, %.1f] (%d/%d)", 100*r.Rate, 100*r.Lo, 100*r.Hi, r.K, r.N)
		}
		row("solved", func(e run.Event) string { return rate(*e.Solved) })
		for _, m := range actors.DefaultMarks {
			row("within "+triesWord(m), func(e run.Event) string {
				if r, ok := solvedWithin(e, m); ok {
					return rate(r)
				}
				return "—"
			})
		}
		row("MRR of the first fix", func(e run.Event) string {
			if e.MRR == nil {
				return "—" // a run of a frog before the MRR
			}
			return fmt.Sprintf("%.3f [%.3f, %.3f]", e.MRR.Mean, e.MRR.Lo, e.MRR.Hi)
		})
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if n := len(s.Heldout); n > 0 && len(s.Heldout[n-1].ByFamily) > 0 {
		last := s.Heldout[n-1]
		fmt.Fprintf(tw, "by family, update %d\tsolved\twithin 1\twithin 3\twithin 10\tMRR\t\n", last.AtUpdate)
		for _, f := range last.ByFamily {
			fmt.Fprintf(tw, "  %s\t%d/%d\t", f.Key, f.K, f.N)
			for _, m := range actors.DefaultMarks {
				cell := "—"
				for _, a := range f.AtTries {
					if a.Tries == m {
						cell = fmt.Sprintf("%d/%d", a.K, a.N)
					}
				}
				fmt.Fprintf(tw, "%s\t", cell)
			}
			fmt.Fprintf(tw, "%.3f [%.3f, %.3f]\t\n", f.MRR.Mean, f.MRR.Lo, f.MRR.Hi)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := printPairs(w, s.Pairs); err != nil {
		return err
	}
	for _, f := range s.Files {
		fmt.Fprintf(tw, "wrote\t%s\t\n", f)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return s.printWeights(w)
}

// solvedWithin is an evaluation's solve rate within tries tries, when its
// line has one (runs made before solved_at_tries have none, and runs
// before 1, 3 and 10 had 5 in place of 3).
func solvedWithin(e run.Event, tries int) (actors.Rate, bool) {
	for _, a := range e.AtTries {
		if a.Tries == tries {
			return a.Rate, true
		}
	}
	return actors.Rate{}, false
}
