package curriculum

import (
	"fmt"
	"math"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestLearnability(t *testing.T) {
	for _, tt := range []struct{ a, b, want float64 }{
		{1, 1, 1.0 / 6},            // 1/(2·3)
		{2, 2, 4.0 / 20},           // 4/(4·5)
		{1, 9, 9.0 / 110},          // 9/(10·11)
		{50, 50, 2500.0 / 10100},   // near 1/4
		{0.5, 99.5, 49.75 / 10100}, // near 0
	} {
		if got := Learnability(tt.a, tt.b); !near(got, tt.want) {
			t.Errorf("Learnability(%v, %v) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

func newEst(t *testing.T, discount, strength float64) *Estimate {
	t.Helper()
	cfg := DefaultEstimateConfig()
	cfg.Discount, cfg.PriorStrength = discount, strength
	e, err := NewEstimate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestPosteriorAndPooledPrior checks the update against values computed by
// hand from the formulas in Estimate's comment.
func TestPosteriorAndPooledPrior(t *testing.T) {
	e := newEst(t, 1, 4)
	// An empty bin: m = 1/2, c = min(2, 4) = 2: Beta(1, 1).
	if a, b := e.Prior("x"); !near(a, 1) || !near(b, 1) {
		t.Errorf("empty bin prior Beta(%v, %v), want Beta(1, 1)", a, b)
	}
	// Task t1 in bin x: 3 passes, 1 failure. Bin x: S=3, F=1, m = 4/6,
	// c = min(6, 4) = 4: prior Beta(8/3, 4/3); t1: Beta(8/3+3, 4/3+1).
	for _, r := range []float64{1, 1, 0, 1} {
		e.Observe("t1", "x", r, true)
	}
	if a, b := e.Prior("x"); !near(a, 8.0/3) || !near(b, 4.0/3) {
		t.Errorf("bin x prior Beta(%v, %v), want Beta(8/3, 4/3)", a, b)
	}
	if a, b := e.Posterior("t1", "x"); !near(a, 8.0/3+3) || !near(b, 4.0/3+1) {
		t.Errorf("t1 posterior Beta(%v, %v), want Beta(17/3, 7/3)", a, b)
	}
	// An untried task of bin x gets the pooled prior; one of bin y Beta(1, 1).
	if got, want := e.Score("new", "x"), Learnability(8.0/3, 4.0/3); !near(got, want) {
		t.Errorf("untried task in x scores %v, want %v", got, want)
	}
	if got := e.Score("new", "y"); !near(got, 1.0/6) {
		t.Errorf("untried task in y scores %v, want 1/6", got)
	}
	if got, want := e.Mean("t1", "x"), (17.0/3)/8; !near(got, want) {
		t.Errorf("mean %v, want %v", got, want)
	}
	if e.Tries("t1") != 4 || e.Tries("new") != 0 {
		t.Errorf("tries %d, %d", e.Tries("t1"), e.Tries("new"))
	}
	// The bin's score is that of Beta(1+3, 1+1) = 8/42.
	if got := e.BinScore("x"); !near(got, 8.0/42) {
		t.Errorf("bin score %v, want 8/42", got)
	}
	// A replay's outcome moves its task's posterior, not its bin's.
	e.Observe("t1", "x", 0, false)
	if a, b := e.Posterior("t1", "x"); !near(a, 8.0/3+3) || !near(b, 4.0/3+2) {
		t.Errorf("t1 posterior after a replay Beta(%v, %v), want Beta(17/3, 10/3)", a, b)
	}
	if got := e.BinMean("x"); !near(got, 4.0/6) {
		t.Errorf("a replay moved the bin's mean to %v", got)
	}
}

func TestDiscountFadesEvidence(t *testing.T) {
	e := newEst(t, 0.5, 0)
	for range 8 {
		e.Observe("t", "b", 0, true)
	}
	// No pooled prior (strength 0): Beta(0+0, 0+8) → clamped a.
	if _, b := e.Posterior("t", "b"); !near(b, 8) {
		t.Fatalf("b = %v, want 8", b)
	}
	e.Discount(2) // 8 · 0.5² = 2
	if _, b := e.Posterior("t", "b"); !near(b, 2) {
		t.Errorf("after two discounted updates b = %v, want 2", b)
	}
	if got := e.BinMean("b"); !near(got, 1.0/4) { // (1+0)/(2+0+2)
		t.Errorf("bin mean %v, want 1/4", got)
	}
	e.Discount(0)
	if _, b := e.Posterior("t", "b"); !near(b, 2) {
		t.Errorf("Discount(0) changed the evidence: b = %v", b)
	}
}

func TestOutsideTheBand(t *testing.T) {
	e := newEst(t, 1, 0)
	// Beta(ε, 59) with no prior: P(p < 0.05) ≈ 1; 2 of 2 is not confident.
	for range 59 {
		e.Observe("hopeless", "b", 0, true)
	}
	if h, s := e.Outside("hopeless"); !h || s {
		t.Errorf("0 of 59: hopeless %v saturated %v, want hopeless", h, s)
	}
	if h, s := e.Outside("never"); h || s {
		t.Error("a task never tried is outside the band")
	}
	u := newEst(t, 1, 2)
	// 2 of 2 with the pooled prior: Beta(1.5+2, 0.5): not confident.
	u.Observe("lucky", "c", 1, true)
	u.Observe("lucky", "c", 1, true)
	if h, s := u.Outside("lucky"); h || s {
		t.Errorf("2 of 2: hopeless %v saturated %v, want neither", h, s)
	}
	for range 57 {
		u.Observe("t", "z", 0, true)
	}
	// Bin z now has F = 57: m = 1/59, c = 2: prior Beta(2/59, 116/59),
	// posterior Beta(0.034, 58.97): confident.
	if h, _ := u.Outside("t"); !h {
		a, b := u.Posterior("t", "z")
		t.Errorf("0 of 57 with the pooled prior Beta(%v, %v) not hopeless", a, b)
	}
}

// TestPredictorCorrectsThePrior checks the prior with a predictor against
// values computed by hand: a bin whose tasks did as predicted lends a new
// task its prediction; a bin whose tasks did worse pulls it down.
func TestPredictorCorrectsThePrior(t *testing.T) {
	e := newEst(t, 1, 4)
	pred := map[string]float64{"a1": 0.5, "a2": 0.5, "b1": 0.5, "b2": 0.5, "new": 0.8}
	e.Predictor = func(id string) (float64, bool) { p, ok := pred[id]; return p, ok }
	// Bin a: 2 of 4 passed, predicted 0.5 each: m = 3/6, p̄ = (1+2)/6.
	e.Observe("a1", "a", 1, true)
	e.Observe("a1", "a", 0, true)
	e.Observe("a2", "a", 1, true)
	e.Observe("a2", "a", 0, true)
	// Bin b: 0 of 4 passed, predicted 0.5 each: m = 1/6, p̄ = 3/6.
	for _, id := range []string{"b1", "b1", "b2", "b2"} {
		e.Observe(id, "b", 0, true)
	}
	// c = min(2+4, 4) = 4.
	if a, b := e.Posterior("new", "a"); !near(a, 4*0.8) || !near(b, 4*0.2) {
		t.Errorf("new task in bin a: Beta(%v, %v), want Beta(3.2, 0.8)", a, b)
	}
	logit := func(p float64) float64 { return math.Log(p / (1 - p)) }
	want := 1 / (1 + math.Exp(-(logit(0.8) + logit(1.0/6) - logit(0.5)))) // 0.4444…
	if got := e.Mean("new", "b"); !near(got, want) {
		t.Errorf("new task in bin b: mean %v, want %v", got, want)
	}
	// No prediction: the bin's prior as before.
	if a, b := e.Posterior("unknown", "b"); !near(a, 4.0/6) || !near(b, 4*5.0/6) {
		t.Errorf("task without a prediction in bin b: Beta(%v, %v), want Beta(2/3, 10/3)", a, b)
	}
}

// Outside's shortcut (a Cantelli bound before the Beta's CDF) gives the
// answer the CDF alone gives, over posteriors from nothing to thousands of
// outcomes on both sides of the band.
func TestOutsideShortcutAgreesWithTheCDF(t *testing.T) {
	cfg := DefaultEstimateConfig()
	e, err := NewEstimate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, pass := range []float64{0, 0.5, 1, 2, 3, 5, 10, 30, 100, 1000} {
		for _, fail := range []float64{0, 0.5, 1, 2, 3, 5, 10, 30, 100, 1000} {
			id := fmt.Sprintf("t%v-%v", pass, fail)
			e.tasks[id] = &taskBelief{bin: "b", ev: evidence{pass: pass, fail: fail}, tries: 1}
			a, b := e.Posterior(id, "b")
			d := distuv.Beta{Alpha: a, Beta: b}
			wantH, wantS := d.CDF(cfg.Lo) > cfg.Confidence, 1-d.CDF(cfg.Hi) > cfg.Confidence
			if h, s := e.Outside(id); h != wantH || s != wantS {
				t.Errorf("Beta(%v, %v): Outside = %v, %v; the CDF says %v, %v", a, b, h, s, wantH, wantS)
			}
			if wantH || wantS {
				n++
			}
		}
	}
	if n == 0 {
		t.Fatal("no posterior was outside the band: the test checks nothing")
	}
}
