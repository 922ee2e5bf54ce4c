package curriculum

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestByScoreOrdersAsASortByKeyThenIndex holds the radix sort to the
// comparison sort it replaced, on keys with ties, NaNs, signed zeros and
// infinities.
func TestByScoreOrdersAsASortByKeyThenIndex(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	special := []float64{math.NaN(), math.Copysign(0, -1), 0, math.Inf(1), math.Inf(-1), -1, 0.25, 1.0 / 6, math.SmallestNonzeroFloat64, -math.MaxFloat64}
	for _, n := range []int{0, 1, 2, 7, 100, 4096} {
		for trial := range 20 {
			keys := make([]float64, n)
			for i := range keys {
				switch trial % 4 {
				case 0:
					keys[i] = rng.Float64() / 4
				case 1:
					keys[i] = special[rng.IntN(len(special))]
				case 2:
					keys[i] = float64(rng.IntN(5)) / 8 // many ties
				default:
					keys[i] = rng.NormFloat64() * math.Pow(10, float64(rng.IntN(40)-20))
				}
			}
			var r ranker
			r.byScore(7, func(i int) float64 { return float64(-i) }) // buffers in use
			got := r.byScore(n, func(i int) float64 { return keys[i] })
			want := make([]scored, n)
			for i := range want {
				want[i] = scored{keys[i], i}
			}
			slices.SortFunc(want, func(a, b scored) int { return cmp.Or(cmp.Compare(a.key, b.key), cmp.Compare(a.i, b.i)) })
			if diff := gocmp.Diff(got, want, gocmp.AllowUnexported(scored{}), cmpopts.EquateNaNs()); diff != "" {
				t.Fatalf("n %d trial %d: byScore (-got +want):\n%s", n, trial, diff)
			}
		}
	}
}

func BenchmarkByScore(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	keys := make([]float64, 4096)
	for i := range keys {
		keys[i] = rng.Float64() / 4
	}
	var r ranker
	for b.Loop() {
		r.byScore(len(keys), func(i int) float64 { return keys[i] })
	}
}

func BenchmarkByScoreComparison(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	keys := make([]float64, 4096)
	for i := range keys {
		keys[i] = rng.Float64() / 4
	}
	for b.Loop() {
		out := make([]scored, len(keys))
		for i := range out {
			out[i] = scored{keys[i], i}
		}
		slices.SortFunc(out, func(a, b scored) int { return cmp.Or(cmp.Compare(a.key, b.key), cmp.Compare(a.i, b.i)) })
	}
}
