package curriculum

import "math"

// scored is index i and its key, for byScore.
type scored struct {
	key float64
	i   int
}

// ranker holds byScore's buffers.
type ranker struct {
	out, tmp []scored
	u, tu    []uint64
}

// grow returns s with length n, reallocated only when it has too little room.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// byScore orders indices 0..n-1 by key(i), lowest first, ties in index
// order: the order cmp.Compare gives the keys (NaN first, −0 equal to +0),
// then the indices. Plan ranks the whole buffer this way at every request
// and eviction at every admission, so it is a radix sort rather than a
// comparison sort: stable least-significant-digit passes over the keys'
// bits mapped to integers in the same order, skipping the bytes that all
// keys share (scores in [0, ¼] share most of their exponent). Being
// stable from index order, it leaves ties in index order.
//
// The slice it returns is r's, valid until its next call: Plan and
// eviction rank thousands of tasks hundreds of times a second, and keep
// the order only while they read it.
func (r *ranker) byScore(n int, key func(i int) float64) []scored {
	r.out, r.tmp = grow(r.out, n), grow(r.tmp, n)
	r.u, r.tu = grow(r.u, n), grow(r.tu, n)
	out, tmp, u, tu := r.out, r.tmp, r.u, r.tu
	if n == 0 {
		return out
	}
	var count [8][256]int
	for i := range out {
		k := key(i)
		out[i] = scored{k, i}
		u[i] = orderBits(k)
		for d := range 8 {
			count[d][byte(u[i]>>(8*d))]++
		}
	}
	for d := range 8 {
		c := &count[d]
		if c[byte(u[0]>>(8*d))] == n {
			continue // every key has this byte
		}
		pos := 0
		for b := range c {
			c[b], pos = pos, pos+c[b]
		}
		for i, x := range u {
			j := &c[byte(x>>(8*d))]
			tmp[*j], tu[*j] = out[i], x
			*j++
		}
		out, tmp, u, tu = tmp, out, tu, u
	}
	return out
}

// orderBits maps k to an integer in cmp.Compare's order of the float64s:
// NaN below everything, −0 and +0 equal.
func orderBits(k float64) uint64 {
	if k != k {
		return 0
	}
	if k == 0 {
		k = 0
	}
	b := math.Float64bits(k)
	if b>>63 != 0 {
		return ^b
	}
	return b | 1<<63
}
