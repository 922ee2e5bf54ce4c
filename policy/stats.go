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

// McNemar is the two-sided p-value of McNemar's exact test for paired
// successes: b pairs where the first of two policies succeeded and the
// second did not, c the other way round (pairs where both or neither
// succeeded say nothing of which is better). Under the hypothesis that
// neither is better, b is Binomial(b+c, 1/2); p is twice the smaller
// tail, at most 1. It is the exact (conditional) test, not the mid-p one:
// conservative, so p < 0.05 means at least what it says. No discordant
// pair gives 1. b or c negative is a programmer's error and gives NaN.
func McNemar(b, c int) float64 {
	if b < 0 || c < 0 {
		return math.NaN()
	}
	n, k := b+c, min(b, c)
	if n == 0 || b == c {
		return 1
	}
	// P(X <= k) for X ~ Binomial(n, 1/2), summed in log space so that
	// large n neither overflows nor underflows a term.
	lgn, _ := math.Lgamma(float64(n + 1))
	var tail float64
	for i := 0; i <= k; i++ {
		lgi, _ := math.Lgamma(float64(i + 1))
		lgr, _ := math.Lgamma(float64(n - i + 1))
		tail += math.Exp(lgn - lgi - lgr - float64(n)*math.Ln2)
	}
	return math.Min(1, 2*tail)
}
