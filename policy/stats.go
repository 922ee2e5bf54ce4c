package policy

import "math"

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
