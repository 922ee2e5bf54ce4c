package neural

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/frognano/frog/cuda"
	"github.com/frognano/frog/env"
	"github.com/frognano/frog/policy"
	"github.com/frognano/frog/policy/repair"
)

// refLoss is the GRPO loss of a batch in float64, from first principles:
// the reference the backend's gradient is checked against.
func refLoss(d Dims, p []float64, b batch, cfg Config) float64 {
	l := d.layout()
	var ref []float64 // the reference policy's parameters: the start
	for _, v := range Init(d, cfg.Seed, cfg.Prior) {
		ref = append(ref, float64(v))
	}
	score := func(p []float64, x []float32) float64 {
		h1 := make([]float64, d.H1)
		for j := range d.H1 {
			s := p[l.b1+j]
			for i := range d.F {
				s += float64(x[i]) * p[l.w1+i*d.H1+j]
			}
			h1[j] = math.Max(s, 0)
		}
		var out float64
		for j := range d.H2 {
			s := p[l.b2+j]
			for i := range d.H1 {
				s += h1[i] * p[l.w2+i*d.H2+j]
			}
			out += math.Max(s, 0) * p[l.w3+j]
		}
		for i := range d.F {
			out += float64(x[i]) * p[l.wl+i]
		}
		return out / cfg.Temperature
	}
	// logSoftmax of decision k's options under p.
	logSoftmax := func(p []float64, k int) []float64 {
		lo, hi := int(b.off[k]), int(b.off[k+1])
		s := make([]float64, hi-lo)
		m := math.Inf(-1)
		for r := lo; r < hi; r++ {
			s[r-lo] = score(p, b.x[r*d.F:(r+1)*d.F])
			m = math.Max(m, s[r-lo])
		}
		var z float64
		for _, v := range s {
			z += math.Exp(v - m)
		}
		lz := m + math.Log(z)
		for i := range s {
			s[i] -= lz
		}
		return s
	}
	D := len(b.chosen)
	var loss, ent, kl float64
	for k := range D {
		lps := logSoftmax(p, k)
		for _, lp := range lps {
			ent -= math.Exp(lp) * lp
		}
		c := int(b.chosen[k] - b.off[k])
		lpc := lps[c]
		ratio := math.Exp(lpc - b.old[k])
		a := float64(b.adv[k])
		loss -= math.Min(ratio*a, math.Max(math.Min(ratio, 1+cfg.Clip), 1-cfg.Clip)*a)
		if cfg.KL > 0 {
			lr := logSoftmax(ref, k)[c]
			kl += math.Exp(lr-lpc) - (lr - lpc) - 1
		}
	}
	return loss/float64(D) - cfg.Entropy*ent/float64(D) + cfg.KL*kl/float64(D)
}

// minPreactivation is the smallest |pre-activation| of any hidden unit on
// any row of x.
func minPreactivation(d Dims, p []float32, x []float32) float64 {
	l := d.layout()
	low := math.Inf(1)
	h1 := make([]float64, d.H1)
	for r := range len(x) / d.F {
		row := x[r*d.F : (r+1)*d.F]
		for j := range d.H1 {
			z := float64(p[l.b1+j])
			for i, v := range row {
				z += float64(v) * float64(p[l.w1+i*d.H1+j])
			}
			low = math.Min(low, math.Abs(z))
			h1[j] = math.Max(z, 0)
		}
		for j := range d.H2 {
			z := float64(p[l.b2+j])
			for i, v := range h1 {
				z += v * float64(p[l.w2+i*d.H2+j])
			}
			low = math.Min(low, math.Abs(z))
		}
	}
	return low
}

// randomBatch makes D decisions of 2..12 options of random features, with
// behaviour log-probabilities from the learner's own policy shifted by
// shift (0: on-policy).
func randomBatch(t *testing.T, l *Learner, D int, seed uint64, shift float64) batch {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	var b batch
	b.off = []int32{0}
	F := l.cfg.Dims.F
	for range D {
		n := 2 + rng.IntN(11)
		rows := make([]float32, n*F)
		for i := range rows {
			if rng.Float64() < 0.5 {
				rows[i] = float32(rng.Float64())
			}
		}
		start := b.off[len(b.off)-1]
		ch := rng.IntN(n)
		lp := logSoftmax(scores(l.cfg.Dims, l.cur.Params, rows, l.cfg.Temperature))
		b.x = append(b.x, rows...)
		b.off = append(b.off, start+int32(n))
		b.chosen = append(b.chosen, start+int32(ch))
		b.adv = append(b.adv, float32(rng.NormFloat64()))
		b.old = append(b.old, lp[ch]+shift*rng.NormFloat64())
	}
	return b
}

func TestGradientMatchesFiniteDifferences(t *testing.T) {
	for _, tt := range []struct {
		name  string
		shift float64
		cfg   func(*Config)
	}{
		{"on-policy", 0, func(*Config) {}},
		{"off-policy, some clipped", 0.5, func(*Config) {}},
		{"no entropy, temperature 2", 0, func(c *Config) { c.Entropy, c.Temperature = 0, 2 }},
		{"no KL penalty", 0.5, func(c *Config) { c.KL = 0 }},
		{"strong KL penalty, off-policy", 0.5, func(c *Config) { c.KL = 2 }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Dims = Dims{F: repair.Dim, H1: 8, H2: 4}
			cfg.Entropy = 0.05
			tt.cfg(&cfg)
			l, err := NewLearner(cuda.NewCPU(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			// Random deep weights that are not tiny, so every path matters.
			p := Init(cfg.Dims, 7, true)
			lay := cfg.Dims.layout()
			for i := lay.w3; i < lay.w3+cfg.Dims.H2; i++ {
				p[i] *= 20
			}
			if err := l.setParams(p); err != nil {
				t.Fatal(err)
			}
			// A batch none of whose hidden units sits near its kink, where
			// a central difference straddles two slopes and means nothing.
			var b batch
			for seed := uint64(3); ; seed++ {
				if b = randomBatch(t, l, 12, seed, tt.shift); minPreactivation(cfg.Dims, p, b.x) > 1e-3 {
					break
				}
				if seed > 100 {
					t.Fatal("no batch away from the kinks in 100 seeds")
				}
			}
			loss, g, err := l.gradient(b)
			if err != nil {
				t.Fatal(err)
			}
			p64 := make([]float64, len(p))
			for i, v := range p {
				p64[i] = float64(v)
			}
			if ref := refLoss(cfg.Dims, p64, b, cfg); math.Abs(ref-loss) > 1e-4*math.Max(1, math.Abs(ref)) {
				t.Fatalf("loss %v, reference %v", loss, ref)
			}
			const h = 1e-4
			worst := 0.0
			checked := 0
			for i := range p64 {
				q := append([]float64(nil), p64...)
				q[i] += h
				up := refLoss(cfg.Dims, q, b, cfg)
				q[i] -= 2 * h
				down := refLoss(cfg.Dims, q, b, cfg)
				fd := (up - down) / (2 * h)
				diff := math.Abs(fd - float64(g[i]))
				if diff > 2e-3*math.Max(0.05, math.Abs(fd)) {
					t.Errorf("parameter %d: gradient %.6g, finite difference %.6g", i, g[i], fd)
				}
				worst = math.Max(worst, diff)
				checked++
			}
			t.Logf("%d parameters, worst absolute difference %.3g", checked, worst)
		})
	}
}

// smallLearner is a CPU learner of cfg, closed when the test ends.
func smallLearner(t *testing.T, cfg Config) *Learner {
	t.Helper()
	l, err := NewLearner(cuda.NewCPU(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// twoOptions are the rows of a decision between two options alike but for
// the feature alternatives (which has no prior), set on the first.
func twoOptions() [][]float32 {
	rows := [][]float32{make([]float32, repair.Dim), make([]float32, repair.Dim)}
	rows[0][0], rows[1][0], rows[0][featureIndex("alternatives")] = 1, 1, 1
	return rows
}

// tries is a trajectory of n tries, each choosing choice among rows with
// l's current policy as the behaviour policy, rewarded r.
func tries(l *Learner, rows [][]float32, choice, n int, r float64) *env.Trajectory {
	tr := &env.Trajectory{Reward: r}
	for range n {
		d := repair.Decision(Kind, rows, choice, 1)
		lp, _ := l.Current().LogProb(d)
		tr.Steps = append(tr.Steps, env.Step{Action: env.Action{Tool: env.ToolTry, Decision: d, LogProb: lp}})
	}
	return tr
}

func TestUpdateRaisesTheAdvantagedChoice(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Dims = Dims{F: repair.Dim, H1: 16, H2: 8}
	l := smallLearner(t, cfg)
	// Two options per decision, identical but for one feature; the
	// trajectories that chose option 0 were rewarded.
	rows := twoOptions()
	mk := func(choice int) *env.Trajectory {
		r := 0.0
		if choice == 0 {
			r = 1
		}
		return tries(l, rows, choice, 1, r)
	}
	before, _ := l.Current().LogProb(mk(0).Steps[0].Action.Decision)
	for range 60 {
		g := policy.Group{Trajectories: []*env.Trajectory{mk(0), mk(1), mk(0), mk(1)}}
		if _, st, err := l.Update(context.Background(), []policy.Group{g}); err != nil || st.Extra["decisions"] != 4 {
			t.Fatalf("update: %v %+v", err, st)
		}
	}
	after, _ := l.Current().LogProb(mk(0).Steps[0].Action.Decision)
	if !(math.Exp(after) > math.Exp(before)+0.15) {
		t.Errorf("log p(rewarded choice) %.3f → %.3f: the update did not raise it", before, after)
	}
	// A group whose rewards are all equal teaches nothing and is dropped.
	_, st, err := l.Update(context.Background(), []policy.Group{{Trajectories: []*env.Trajectory{mk(0), mk(0)}}})
	if err != nil || st.ZeroSignalGroups != 1 || st.Extra["decisions"] != 0 {
		t.Errorf("zero-variance group: %+v, %v", st, err)
	}
}

func TestCheckpointRoundTrip(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Dims = Dims{F: repair.Dim, H1: 8, H2: 4}
	a, err := NewLearner(cuda.NewCPU(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b := randomBatch(t, a, 6, 1, 0)
	w, _ := a.newWork(len(b.x)/cfg.Dims.F, len(b.chosen))
	w.upload(b)
	for range 3 {
		if _, err := w.step(b); err != nil {
			t.Fatal(err)
		}
	}
	w.free()
	data, err := a.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	c, _ := NewLearner(cuda.NewCPU(), cfg)
	defer c.Close()
	if err := c.Restore(data); err != nil {
		t.Fatal(err)
	}
	// Both continue identically: the same next step.
	la, ga, _ := a.gradient(b)
	lc, gc, _ := c.gradient(b)
	if la != lc || c.step != a.step {
		t.Fatalf("after restore: loss %v vs %v, step %d vs %d", lc, la, c.step, a.step)
	}
	for i := range ga {
		if ga[i] != gc[i] {
			t.Fatalf("gradient %d differs after restore", i)
		}
	}
	// Refused: corrupted, another shape, not a checkpoint.
	bad := append([]byte(nil), data...)
	bad[len(bad)/2] ^= 0x01
	other := cfg
	other.Dims.H1 = 9
	o, _ := NewLearner(cuda.NewCPU(), other)
	defer o.Close()
	for name, tt := range map[string]struct {
		l    *Learner
		data []byte
		want string
	}{
		"corrupted":   {c, bad, ""},
		"other shape": {o, data, "network"},
		"not json":    {c, []byte("hello"), "does not parse"},
	} {
		err := tt.l.Restore(tt.data)
		if err == nil || tt.want != "" && !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Restore = %v", name, err)
		}
	}
	// A checkpoint over another set of features (another frog version)
	// cannot be read as a policy of this one: its rows would be misread.
	fewer := cfg
	fewer.Dims.F = repair.Dim - 2
	f, err := NewLearner(cuda.NewCPU(), fewer)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fdata, err := f.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := FromCheckpoint(cuda.NewCPU(), fdata); err == nil || !strings.Contains(err.Error(), "features") {
		t.Errorf("FromCheckpoint of %d features = %v, want an error naming the features", fewer.Dims.F, err)
	}
	obs := []env.Observation{{}}
	if err := f.Current().Act(context.Background(), obs, make([]env.Action, 1)); err == nil {
		t.Error("a policy over other features acted")
	}
	// A checkpoint from before the restore-stmt features reads the first
	// repair.PrefixDim features, which kept their places: it loads and acts.
	older := cfg
	older.Dims.F = repair.PrefixDim
	o2, err := NewLearner(cuda.NewCPU(), older)
	if err != nil {
		t.Fatal(err)
	}
	defer o2.Close()
	odata, err := o2.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	ol, err := FromCheckpoint(cuda.NewCPU(), odata)
	if err != nil {
		t.Fatalf("FromCheckpoint of the %d features before restore-stmt: %v", repair.PrefixDim, err)
	}
	defer ol.Close()
	if err := ol.Current().Act(context.Background(), obs, make([]env.Action, 1)); err != nil {
		t.Errorf("a policy over the %d features before restore-stmt: %v", repair.PrefixDim, err)
	}
}

// TestTryCredit checks the per-try credit: in a rollout that tried a wrong
// candidate and then the fix, only the fix is advantaged; the episode
// credit advantages both alike. A group in which no try changed anything
// has no signal either way.
func TestTryCredit(t *testing.T) {
	step := func(allPass, improves bool) env.Step {
		rows := [][]float32{make([]float32, repair.Dim), make([]float32, repair.Dim)}
		tr := env.TryResult{Built: true, AllPass: allPass}
		if improves {
			tr.Fixed = []string{"TestA"}
		}
		return env.Step{Action: env.Action{Tool: env.ToolTry, Decision: repair.Decision(Kind, rows, 0, 1)},
			Result: env.StepResult{Detail: &env.StepDetail{Tries: []env.TryResult{tr}}}}
	}
	solved := &env.Trajectory{Reward: 1, Tries: 2, Steps: []env.Step{step(false, false), step(true, false)}}
	failed := &env.Trajectory{Reward: 0, Tries: 2, Steps: []env.Step{step(false, true), step(false, false)}}
	g := policy.Group{Trajectories: []*env.Trajectory{solved, failed}}
	for _, c := range []struct {
		credit string
		want   []float32 // signs of the four decisions' advantages
	}{
		{CreditEpisode, []float32{1, 1, -1, -1}},
		{CreditTry, []float32{-1, 1, 1, -1}}, // outcomes 0, 1, ½, 0: mean ⅜
	} {
		cfg := DefaultConfig()
		cfg.Credit = c.credit
		l := &Learner{cfg: cfg}
		b := l.collect([]policy.Group{g})
		if len(b.adv) != 4 {
			t.Fatalf("%s: %d decisions, want 4", c.credit, len(b.adv))
		}
		for i, a := range b.adv {
			if a*c.want[i] <= 0 {
				t.Errorf("%s: decision %d advantage %v, want the sign of %v", c.credit, i, a, c.want[i])
			}
		}
	}
	cfg := DefaultConfig()
	cfg.Credit = CreditTry
	l := &Learner{cfg: cfg}
	flat := policy.Group{Trajectories: []*env.Trajectory{{Steps: []env.Step{step(false, false)}}, {Steps: []env.Step{step(false, false)}}}}
	if b := l.collect([]policy.Group{flat}); b.zero != 1 || len(b.adv) != 0 {
		t.Errorf("no try changed anything: %d zero-signal groups, %d decisions; want 1, 0", b.zero, len(b.adv))
	}
	if err := (Config{Dims: DefaultDims, LR: 1, Clip: 0.2, Epochs: 1, Temperature: 1, Credit: "nope"}).Validate(); err == nil {
		t.Error("credit \"nope\" validated")
	}
}

// TestWideLearningRate checks that the wide part steps at WideLR and the
// deep part at LR: from one start and one batch, a first Adam step moves
// each weight by about its rate (the step is lr·ĝ/|ĝ|), so a tenfold wide
// rate moves the wide part ten times as far and the deep part as far.
func TestWideLearningRate(t *testing.T) {
	moved := func(wide float64) (deep, wideMove float64) {
		cfg := DefaultConfig()
		cfg.Dims = Dims{F: repair.Dim, H1: 8, H2: 4}
		cfg.Epochs, cfg.WideLR = 1, wide
		l := smallLearner(t, cfg)
		before := append([]float32(nil), l.Current().Params...)
		rows := twoOptions()
		p, _, err := l.Update(context.Background(), []policy.Group{{Trajectories: []*env.Trajectory{tries(l, rows, 0, 1, 1), tries(l, rows, 1, 1, 0)}}})
		if err != nil {
			t.Fatal(err)
		}
		after := p.(*Policy).Params
		wl := cfg.Dims.layout().wl
		for i := range before {
			d := math.Abs(float64(after[i] - before[i]))
			if i < wl {
				deep = math.Max(deep, d)
			} else {
				wideMove = math.Max(wideMove, d)
			}
		}
		return deep, wideMove
	}
	d1, w1 := moved(0) // WideLR 0: LR everywhere
	d10, w10 := moved(10 * DefaultConfig().LR)
	if w1 == 0 || d1 == 0 {
		t.Fatalf("nothing moved: deep %g, wide %g", d1, w1)
	}
	if r := w10 / w1; r < 9 || r > 11 {
		t.Errorf("wide part moved %.3g with a tenfold rate against %.3g: ratio %.2f, want 10", w10, w1, r)
	}
	if r := d10 / d1; r < 0.99 || r > 1.01 {
		t.Errorf("deep part moved %.3g against %.3g: its rate did not stay LR", d10, d1)
	}
}

// TestTrajectoriesWeighEqually checks that a trajectory's decisions share
// its advantage: a failing rollout of five tries and a rewarded one of one
// push with equal and opposite weight, so what every option shares against
// stopping does not drift with how long failures take.
func TestTrajectoriesWeighEqually(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Dims = Dims{F: repair.Dim, H1: 8, H2: 4}
	l := smallLearner(t, cfg)
	rows := twoOptions()
	b := l.collect([]policy.Group{{Trajectories: []*env.Trajectory{tries(l, rows, 0, 5, 0), tries(l, rows, 0, 1, 1)}}})
	if len(b.adv) != 6 {
		t.Fatalf("%d decisions, want 6", len(b.adv))
	}
	var fail, win float64
	for i, a := range b.adv {
		if i < 5 {
			fail += float64(a)
		} else {
			win += float64(a)
		}
	}
	if !(win > 0) || math.Abs(fail+win) > 1e-5 {
		t.Errorf("advantage summed over the failing rollout %.3f, over the rewarded one %.3f: want equal and opposite", fail, win)
	}
}

// TestNoStop checks that a policy whose protocol offers no stop goes on
// trying while candidates are left, however much its network favours
// stopping, and records decisions without a stop row; offered the stop, the
// same network takes it.
func TestNoStop(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Dims = Dims{F: repair.Dim, H1: 8, H2: 4}
	l := smallLearner(t, cfg)
	p := *l.Current()
	p.Params = slices.Clone(p.Params)
	p.Params[p.Dims.layout().wl+featureIndex("stop")] = 50
	p.Greedy = true
	st := &repair.State{List: []env.Candidate{{ID: 0, File: "a.go", Line: 3}, {ID: 1, File: "a.go", Line: 4}},
		Tried: map[int]env.TryResult{}, LineTries: map[env.Line]int{}, LineNoEffect: map[env.Line]int{}}
	for _, noStop := range []bool{true, false} {
		p.NoStop = noStop
		pick, dec, _ := chooser{&p}.Choose(st, []int{0, 1}, nil)
		rows := len(dec.Features) / dec.Dim
		switch {
		case noStop && (pick < 0 || rows != 2):
			t.Errorf("no stop offered: pick %d among %d rows; want a candidate among 2", pick, rows)
		case !noStop && (pick != -1 || rows != 3):
			t.Errorf("stop offered and favoured: pick %d among %d rows; want -1 among 3", pick, rows)
		}
	}
	if !DefaultConfig().NoStop {
		t.Error("the default protocol offers a stop")
	}
}

// TestKLHoldsTheStart checks the KL penalty to the reference policy: the
// same rewarded choice, taught for as many updates, moves a penalised
// policy less far from its start than an unpenalised one, the divergence is
// reported, and it stays where the penalty balances the advantage (the
// probability of the rewarded choice settles short of 1).
func TestKLHoldsTheStart(t *testing.T) {
	train := func(kl float64) (p0, p1, klRef float64) {
		cfg := DefaultConfig()
		cfg.Dims = Dims{F: repair.Dim, H1: 16, H2: 8}
		cfg.KL = kl
		l := smallLearner(t, cfg)
		rows := twoOptions()
		d := repair.Decision(Kind, rows, 0, 1)
		lp, _ := l.Current().LogProb(d)
		p0 = math.Exp(lp)
		for range 150 {
			g := policy.Group{Trajectories: []*env.Trajectory{tries(l, rows, 0, 1, 1), tries(l, rows, 1, 1, 0)}}
			_, st, err := l.Update(context.Background(), []policy.Group{g})
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := st.Extra["kl_ref"]; ok != (kl > 0) {
				t.Fatalf("KL %g: kl_ref reported %v", kl, ok)
			}
			klRef = st.Extra["kl_ref"]
		}
		lp, _ = l.Current().LogProb(d)
		return p0, math.Exp(lp), klRef
	}
	start, free, _ := train(0)
	start2, held, klRef := train(1)
	if start != start2 {
		t.Fatalf("the two learners start apart: %g, %g", start, start2)
	}
	t.Logf("p(rewarded) from %.3f: %.3f without the penalty, %.3f with β = 1 (KL to the start %.3f)", start, free, held, klRef)
	if !(held > start+0.05) {
		t.Errorf("with the penalty the rewarded choice did not rise: %.3f → %.3f", start, held)
	}
	if !(free > held+0.05) {
		t.Errorf("the penalty did not hold the policy nearer its start: %.3f without, %.3f with", free, held)
	}
	if !(klRef > 0) {
		t.Errorf("KL to the start %g after the policy moved: want > 0", klRef)
	}
	if err := (Config{Dims: DefaultDims, LR: 1, Clip: 0.2, Epochs: 1, Temperature: 1, KL: -1}).Validate(); err == nil {
		t.Error("KL weight -1 validated")
	}
}
