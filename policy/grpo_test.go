package policy

import (
	"math"
	"testing"

	"github.com/frognano/frog/env"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestAdvantages(t *testing.T) {
	tests := []struct {
		rewards []float64
		want    []float64
		std     float64
	}{
		{rewards: []float64{1, 0}, want: []float64{1, -1}, std: 0.5},
		{rewards: []float64{1, 1, 1}, want: []float64{0, 0, 0}, std: 0},
		{rewards: []float64{0, 0, 0, 1}, want: []float64{-1 / math.Sqrt(3), -1 / math.Sqrt(3), -1 / math.Sqrt(3), math.Sqrt(3)}, std: math.Sqrt(3) / 4},
		{rewards: nil, want: []float64{}, std: 0},
	}
	for _, tt := range tests {
		got := make([]float64, len(tt.rewards))
		std := Advantages(tt.rewards, got, 0)
		if diff := cmp.Diff(got, tt.want, cmpopts.EquateApprox(0, 1e-12), cmpopts.EquateEmpty()); diff != "" || math.Abs(std-tt.std) > 1e-12 {
			t.Errorf("Advantages(%v) = %v, std %v (-got +want):\n%s", tt.rewards, got, std, diff)
		}
	}
}

func TestVarianceIsLearnability(t *testing.T) {
	for _, tt := range []struct {
		r    []float64
		want float64
	}{{[]float64{1, 0}, 0.25}, {[]float64{1, 1}, 0}, {[]float64{1, 0, 0, 0}, 0.1875}} {
		if got := Variance(tt.r); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("Variance(%v) = %v, want p(1-p) = %v", tt.r, got, tt.want)
		}
	}
}

func TestClippedSurrogate(t *testing.T) {
	tests := []struct{ logp, old, adv, want float64 }{
		{0, 0, 1, 1},                 // on-policy: ratio 1
		{math.Log(2), 0, 1, 1.2},     // ratio 2, positive advantage: clipped at 1+ε
		{math.Log(2), 0, -1, -2},     // ratio 2, negative advantage: unclipped (pessimistic)
		{math.Log(0.5), 0, -1, -0.8}, // ratio 0.5, negative advantage: clipped at 1-ε
		{math.Log(0.5), 0, 1, 0.5},   // ratio 0.5, positive advantage: unclipped
	}
	for _, tt := range tests {
		if got := ClippedSurrogate(tt.logp, tt.old, tt.adv, 0.2); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("ClippedSurrogate(%v, %v, %v) = %v, want %v", tt.logp, tt.old, tt.adv, got, tt.want)
		}
	}
}

func TestStalenessWeight(t *testing.T) {
	if StalenessWeight(3, 5, 2) != 1 || StalenessWeight(2, 5, 2) != 0 || StalenessWeight(5, 5, 0) != 1 {
		t.Error("StalenessWeight does not drop exactly the actions older than the bound")
	}
}

func TestWilson(t *testing.T) {
	for _, tt := range []struct {
		k, n   int
		lo, hi float64
	}{
		{0, 0, 0, 1},
		{0, 10, 0, 0.2775},
		{10, 10, 0.7225, 1},
		{50, 100, 0.4038, 0.5962},
		{1, 200, 0.00088, 0.02776},
	} {
		lo, hi := Wilson(tt.k, tt.n)
		if math.Abs(lo-tt.lo) > 5e-4 || math.Abs(hi-tt.hi) > 5e-4 {
			t.Errorf("Wilson(%d, %d) = [%.4f, %.4f], want [%.4f, %.4f]", tt.k, tt.n, lo, hi, tt.lo, tt.hi)
		}
	}
}

// TestReturn checks the shaped return: a fix costs TryCost per try beyond
// the first, down to a tenth; a failure returns 0 however it went; a group
// whose rollouts all fix the task at different tries keeps its signal.
func TestReturn(t *testing.T) {
	for _, c := range []struct {
		reward  float64
		tries   int
		cost    float64
		want    float64
		comment string
	}{
		{1, 1, 0.1, 1, "first try"},
		{1, 5, 0.1, 0.6, "fifth try"},
		{1, 30, 0.1, 0.1, "floor"},
		{0, 5, 0.1, 0, "failure"},
		{0, 0, 0.1, 0, "no try"},
		{1, 5, 0, 1, "no cost"},
		{1, 0, 0.1, 1, "fixed without tries (a simulated agent)"},
	} {
		if got := Return(&env.Trajectory{Reward: c.reward, Tries: c.tries}, c.cost); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%s: Return(reward %v, tries %d, cost %v) = %v, want %v", c.comment, c.reward, c.tries, c.cost, got, c.want)
		}
	}
	g := Group{Trajectories: []*env.Trajectory{{Reward: 1, Tries: 1}, {Reward: 1, Tries: 4}}}
	if v := Variance(g.Returns()); v != 0 {
		t.Errorf("no try cost: variance %v, want 0 (equal rewards)", v)
	}
	g.TryCost = 0.1
	if v := Variance(g.Returns()); !(v > 0) {
		t.Errorf("try cost 0.1: variance %v, want > 0", v)
	}
	if r := g.Rewards(); r[0] != 1 || r[1] != 1 {
		t.Errorf("rewards %v changed by the try cost", r)
	}
}

// TestMcNemar checks the exact test's two-sided p against the binomial
// tails computed exactly (Python's fractions over math.comb).
func TestMcNemar(t *testing.T) {
	for _, tt := range []struct {
		b, c int
		want float64
	}{
		{0, 0, 1},
		{3, 3, 1},
		{1, 9, 0.021484375},
		{9, 1, 0.021484375},
		{2, 8, 0.109375},
		{0, 5, 0.0625},
		{0, 6, 0.03125},
		{10, 0, 0.001953125},
		{40, 60, 0.05688793364098079},
		{100, 150, 0.001883300935076157},
		{500, 540, 0.22651558839716396},
	} {
		if got := McNemar(tt.b, tt.c); math.Abs(got-tt.want) > 1e-9*math.Max(1, tt.want) {
			t.Errorf("McNemar(%d, %d) = %.12g, want %.12g", tt.b, tt.c, got, tt.want)
		}
	}
	if p := McNemar(-1, 3); !math.IsNaN(p) {
		t.Errorf("McNemar(-1, 3) = %v, want NaN", p)
	}
}
