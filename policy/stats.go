package policy

import (
	"math"
	"math/rand/v2"
	"slices"
)

// Wilson is the Wilson score interval of a proportion at 95% confidence:
// the range of success rates consistent with k successes in n trials. It
// stays inside [0, 1] and is sensible at k = 0 or k = n, where the normal
// approximation is not. n = 0 gives [0, 1].
func Wilson(k, n int) (lo, hi float64) {
	if n <= 0 {
		return 0, 1
	}
	const z = 1.959963984540054
	p := float64(k) / float64(n)
	nf := float64(n)
	d := 1 + z*z/nf
	c := p + z*z/(2*nf)
	r := z * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf))
	return math.Max(0, (c-r)/d), math.Min(1, (c+r)/d)
}

// BootstrapMean is the 95% percentile bootstrap interval of the mean of xs:
// resamples resamplings with replacement, drawn from rng. One value gives
// [x, x]; none gives [0, 0].
func BootstrapMean(xs []float64, resamples int, rng *rand.Rand) (lo, hi float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	means := make([]float64, resamples)
	for i := range means {
		var s float64
		for range xs {
			s += xs[rng.IntN(len(xs))]
		}
		means[i] = s / float64(len(xs))
	}
	slices.Sort(means)
	q := func(p float64) float64 { return means[min(len(means)-1, int(p*float64(len(means))))] }
	return q(0.025), q(0.975)
}

// Mean is the mean of xs (0 for none).
func Mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}
