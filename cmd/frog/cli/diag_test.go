package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/frognano/frog/actors"
	"github.com/frognano/frog/env"
	"github.com/frognano/frog/policy/repair"
	"github.com/frognano/frog/run/taskenv"
	"github.com/rs/zerolog"
)

// diagCand is one candidate of a task's first list, labelled by whether it
// is the gold fix (for analysis only: no policy sees the label).
type diagCand struct {
	Op, Kind, Ctx, Desc string
	Edits               []env.Edit
	File                string
	Line                int
	// LineRank is the candidate's line's place in the order lines are
	// asked for (from 0).
	LineRank int
	Gold     bool
	X        []float32
}

type diagTask struct {
	ID, Repo string
	K        int
	Ops      []string
	// MutRank is the first mutated line's place in the order lines are
	// asked for (-1: no failing test ran it); Lines how many lines there
	// are in that order.
	MutRank, Lines int
	Cands          []diagCand
}

// recorder plays the repair protocol (cfg) up to an episode's first
// candidate list, keeps the state there, and submits.
type recorder struct {
	cfg  repair.Config
	mu   sync.Mutex
	seen map[string]*repair.State
}

func (r *recorder) Act(ctx context.Context, obs []env.Observation, acts []env.Action) error {
	for i := range obs {
		acts[i] = repair.Next(obs[i], r.cfg, r, nil)
	}
	return nil
}

func (r *recorder) Choose(st *repair.State, _ []int, _ *rand.Rand) (int, *env.Decision, float64) {
	r.mu.Lock()
	r.seen[st.Task.ID] = st
	r.mu.Unlock()
	return -1, nil, 0
}

// The two tests below are an analysis, not a check: they measure how far
// the repair features can rank a task's fix, from the gold patch, which no
// policy sees (docs/training.md, "What limits the trained policy"). They
// run only when asked:
//
//	FROG_DIAG_TASKS=runs/train.jsonl FROG_DIAG_OUT=runs/diag-train.jsonl go test -run TestDiagRanks -timeout 2h ./cmd/frog/cli
//	FROG_DIAG_TASKS=tasks/heldout.jsonl FROG_DIAG_OUT=runs/diag-heldout.jsonl go test -run TestDiagRanks -timeout 2h ./cmd/frog/cli
//	(FROG_DIAG_LINES=N: the first list at the N most suspicious lines; the protocol's 60 by default)
//	FROG_DIAG_TRAIN=runs/diag-train.jsonl FROG_DIAG_HELD=runs/diag-heldout.jsonl go test -run TestDiagFit -v ./cmd/frog/cli

// TestDiagRanks plays each task of FROG_DIAG_TASKS up to its first candidate
// list (process sandboxes) and writes that list to FROG_DIAG_OUT, each
// candidate with its features and whether it is the gold fix (single-bug
// tasks: the candidate's edit turns the buggy file into the fixed one).
func TestDiagRanks(t *testing.T) {
	in, out := os.Getenv("FROG_DIAG_TASKS"), os.Getenv("FROG_DIAG_OUT")
	if in == "" {
		t.Skip("an analysis: set FROG_DIAG_TASKS and FROG_DIAG_OUT (see the comment above)")
	}
	ctx := context.Background()
	log := zerolog.New(os.Stderr).Level(zerolog.WarnLevel)
	recs, err := taskenv.Load("--tasks", in, 0, 0, log)
	if err != nil {
		t.Fatal(err)
	}
	home, _ := os.UserHomeDir()
	tenv, prov, release, err := openTaskEnv(ctx, taskOptions{Workspaces: filepath.Join(home, ".cache/frog/workspaces")},
		sandboxSpec{sandboxOptions: sandboxOptions{Kind: "process"}, Run: "diag", Concurrency: 4}, log)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	tasks, _, err := tenv.Check(ctx, recs, 4, log)
	if err != nil {
		t.Fatal(err)
	}
	lines, _ := strconv.Atoi(os.Getenv("FROG_DIAG_LINES")) // 0: the protocol's
	rec := &recorder{cfg: repair.Config{Lines: lines}, seen: map[string]*repair.State{}}
	cfg := actors.DefaultConfig()
	cfg.Run, cfg.Concurrency, cfg.MaxSteps, cfg.MaxTries = "diag", 4, 22, 10
	deps := actors.Deps{Provider: prov, Harness: tenv.Harness, Log: log}
	if _, err := actors.Evaluate(ctx, actors.EvalConfig{Run: cfg, Tasks: tasks, Samples: 1}, rec, deps); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	defer w.Flush()
	enc := json.NewEncoder(w)
	byID := map[string]*env.Task{}
	for i := range recs {
		byID[recs[i].ID] = &recs[i].Task
	}
	for _, et := range tasks {
		task := byID[et.Task.ID]
		st := rec.seen[task.ID]
		d := diagTask{ID: task.ID, Repo: task.Repo, K: len(task.Mutations), MutRank: -1}
		for _, m := range task.Mutations {
			d.Ops = append(d.Ops, m.Op)
		}
		if st != nil {
			order := st.Lines(repair.Config{Lines: math.MaxInt32})
			d.Lines = len(order)
			rank := map[env.Line]int{}
			for i, l := range order {
				rank[l] = i
			}
			m := task.Mutations[0]
			if r, ok := rank[env.Line{File: m.File, Line: m.Line}]; ok {
				d.MutRank = r
			}
			fixed, err := tenv.Workspaces.Fixed(ctx, task)
			if err != nil {
				t.Fatal(err)
			}
			tmpl, _ := tenv.Workspaces.Template(ctx, task)
			fz := repair.NewFeaturizer(st)
			for _, c := range st.List {
				dc := diagCand{Op: c.Op, Kind: c.Kind, Ctx: c.Context, Desc: c.Desc, Edits: c.Edits, File: c.File, Line: c.Line, X: fz.Candidate(&c)}
				dc.LineRank = rank[env.Line{File: c.File, Line: c.Line}]
				if want, ok := fixed[c.File]; ok && d.K == 1 {
					src, err := os.ReadFile(filepath.Join(tmpl, c.File))
					if err == nil {
						got, err := env.Splice(src, c.Edits)
						dc.Gold = err == nil && string(got) == string(want)
					}
				}
				d.Cands = append(d.Cands, dc)
			}
		}
		if err := enc.Encode(d); err != nil {
			t.Fatal(err)
		}
	}
}

func readDiag(t *testing.T, p string) []diagTask {
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []diagTask
	dec := json.NewDecoder(f)
	for {
		var d diagTask
		if err := dec.Decode(&d); err != nil {
			break
		}
		out = append(out, d)
	}
	return out
}

func diagFeat(c diagCand, pos int, extra, natural bool) []float64 {
	x := make([]float64, 0, 64)
	for i, v := range c.X {
		if !natural && i < len(repair.FeatureNames) {
			switch repair.FeatureNames[i] {
			case "natural", "natural_best", "surprise":
				v = 0
			}
		}
		x = append(x, float64(v))
	}
	if !extra {
		return x
	}
	for _, o := range repair.Ops {
		x = append(x, b2f64(c.Op == o))
	}
	newv, oldv := "", ""
	if len(c.Edits) > 0 {
		newv, oldv = c.Edits[0].New, c.Edits[0].Old
	}
	x = append(x, b2f64(newv == "0"), b2f64(newv == "1"), b2f64(oldv == "0"), b2f64(oldv == "1"))
	x = append(x, b2f64(len(newv) < len(oldv)), b2f64(pos == 0), 1/float64(pos+1))
	return x
}

func diagIndex(name string) int {
	for i, n := range repair.FeatureNames {
		if n == name {
			return i
		}
	}
	panic("no feature " + name)
}

func b2f64(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// TestDiagFit reports where the gold fix ranks in list order (fl-greedy's)
// and under a linear softmax ranker fitted to the gold fixes of
// FROG_DIAG_TRAIN, on both stores: with the features recorded (the
// policy's at the time; the figures in docs/training.md were recorded with
// the 39 before the template and edit features) and with those added.
func TestDiagFit(t *testing.T) {
	trp, hp := os.Getenv("FROG_DIAG_TRAIN"), os.Getenv("FROG_DIAG_HELD")
	if trp == "" {
		t.Skip("an analysis: set FROG_DIAG_TRAIN and FROG_DIAG_HELD (see the comment above TestDiagRanks)")
	}
	train, held := readDiag(t, trp), readDiag(t, hp)
	type ex struct {
		x    [][]float64
		gold []bool
		ord  []int // list order rank
	}
	mk := func(ds []diagTask, extra, natural bool) (out []ex, total int) {
		for _, d := range ds {
			if d.K != 1 {
				continue
			}
			total++
			e := ex{}
			g := false
			line := map[string]int{}
			for _, c := range d.Cands {
				key := c.File + ":" + strconv.Itoa(c.Line)
				pos := line[key]
				line[key]++
				e.x = append(e.x, diagFeat(c, pos, extra, natural))
				e.gold = append(e.gold, c.Gold)
				g = g || c.Gold
			}
			if g {
				out = append(out, e)
			}
		}
		return
	}
	rank := func(scores []float64, gold []bool) int {
		gi := -1
		for i, gd := range gold {
			if gd && (gi < 0 || scores[i] > scores[gi]) {
				gi = i
			}
		}
		r := 1
		for i := range scores {
			if i != gi && (scores[i] > scores[gi] || scores[i] == scores[gi] && i < gi) {
				r++
			}
		}
		return r
	}
	report := func(name string, es []ex, total int, score func(e ex) []float64) {
		var top1, top5, top10 int
		for _, e := range es {
			r := rank(score(e), e.gold)
			if r <= 1 {
				top1++
			}
			if r <= 5 {
				top5++
			}
			if r <= 10 {
				top10++
			}
		}
		t.Logf("%-28s k=1 tasks %d, gold in list %d; gold within 1/5/10: %d/%d/%d (%.1f%% of tasks at 10)", name, total, len(es), top1, top5, top10, 100*float64(top10)/float64(total))
	}
	for pass := range 3 {
		extra, natural := pass == 2, pass > 0
		tr, ntr := mk(train, extra, natural)
		he, nhe := mk(held, extra, natural)
		order := func(e ex) []float64 {
			s := make([]float64, len(e.x))
			for i := range s {
				s[i] = -float64(i)
			}
			return s
		}
		if pass == 0 {
			report("list order, train", tr, ntr, order)
			report("list order, held-out", he, nhe, order)
		}
		if pass == 1 {
			// fl-greedy's line order, a line's candidates by naturalness.
			nat := func(e ex) []float64 {
				s := make([]float64, len(e.x))
				line := -1.0
				for i, x := range e.x {
					if x[diagIndex("first_alternative")] == 1 {
						line++
					}
					s[i] = -line*100 + x[diagIndex("natural")]
				}
				return s
			}
			report("lines in order, natural", tr, ntr, nat)
			report("lines in order, natural", he, nhe, nat)
		}
		dim := len(tr[0].x[0])
		w := make([]float64, dim)
		m, v := make([]float64, dim), make([]float64, dim)
		lin := func(e ex) []float64 {
			s := make([]float64, len(e.x))
			for i, x := range e.x {
				for j := range x {
					s[i] += w[j] * x[j]
				}
			}
			return s
		}
		for step := 1; step <= 3000; step++ {
			g := make([]float64, dim)
			for _, e := range tr {
				s := lin(e)
				mx := s[0]
				for _, z := range s {
					mx = max(mx, z)
				}
				var zs, zg float64
				for i, z := range s {
					p := math.Exp(z - mx)
					zs += p
					if e.gold[i] {
						zg += p
					}
				}
				for i, x := range e.x {
					p := math.Exp(s[i]-mx) / zs
					q := 0.0
					if e.gold[i] {
						q = math.Exp(s[i]-mx) / zg
					}
					for j := range x {
						g[j] += (p - q) * x[j] / float64(len(tr))
					}
				}
			}
			for j := range w {
				g[j] += 1e-3 * w[j]
				m[j] = 0.9*m[j] + 0.1*g[j]
				v[j] = 0.999*v[j] + 0.001*g[j]*g[j]
				mh := m[j] / (1 - math.Pow(0.9, float64(step)))
				vh := v[j] / (1 - math.Pow(0.999, float64(step)))
				w[j] -= 0.03 * mh / (math.Sqrt(vh) + 1e-8)
			}
		}
		name := []string{"linear, no naturalness", "linear, base features", "linear, + op features"}[pass]
		if pass == 1 {
			for _, n := range []string{"ochiai", "rank_inv", "top1", "first_alternative", "natural", "natural_best", "surprise"} {
				t.Logf("  weight %s %.2f", n, w[diagIndex(n)])
			}
		}
		report(name+", train", tr, ntr, lin)
		report(name+", held-out", he, nhe, lin)
	}
}
