package curriculum

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/frognano/frog/env"
)

// TestTargetFindsTheFrontier plays a logistic "policy" of fixed skill with
// outcomes arriving thousands of tasks late, as under high concurrency.
func TestTargetFindsTheFrontier(t *testing.T) {
	for _, skill := range []float64{-3, 0, 5} {
		c, err := NewTarget(0.5, 0, 0.01)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		const lag = 2000
		var inflight []float64
		for range 60000 {
			d := c.Difficulty() + 0.5*rng.NormFloat64()
			inflight = append(inflight, d)
			if len(inflight) > lag {
				d0 := inflight[0]
				inflight = inflight[1:]
				r := 0.0
				if rng.Float64() < 1/(1+math.Exp(d0-skill)) {
					r = 1
				}
				c.observe(d0, r)
			}
		}
		if got := c.Difficulty(); math.Abs(got-skill) > 0.3 {
			t.Errorf("skill %v: curriculum settled at difficulty %.3f", skill, got)
		}
	}
}

func TestNewTargetRejectsNonsense(t *testing.T) {
	for _, tt := range []struct{ p, rate float64 }{{0, 0.1}, {1, 0.1}, {0.5, 0}, {math.NaN(), 0.1}} {
		if _, err := NewTarget(tt.p, 0, tt.rate); err == nil {
			t.Errorf("NewTarget(%v, rate %v) accepted", tt.p, tt.rate)
		}
	}
}

func TestBins(t *testing.T) {
	f := &Fixed{D: 1}
	for _, o := range []struct{ d, r float64 }{{0.5, 1}, {0.7, 0}, {1.2, 1}, {-0.5, 0}} {
		f.Observe(&env.Task{Difficulty: o.d}, o.r, 0)
	}
	st := f.Stats()
	if len(st.Bins) != 3 || st.Bins[0].Lo != -1 || st.Bins[1].PassRate != 0.5 || st.Observed != 4 || st.PassRate != 0.5 {
		t.Errorf("stats %+v", st)
	}
}
