package neural

import (
	"cmp"
	"math"
	"slices"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/policy/repair"
)

// Weight is what a network makes of one input feature: the wide part's
// weight at the start and now, and what the whole network's choices owe to
// the feature.
type Weight struct {
	Feature string `json:"feature"`
	// Start and Wide are the wide (linear) part's weight of the feature
	// when the run started (the prior's, or 0 from scratch) and now.
	Start float32 `json:"start"`
	Wide  float32 `json:"wide"`
	// Effect is how far the network's choices move when the feature is
	// zeroed in every option: the mean, over the decisions given, of the
	// total variation distance between the softmax over the options with
	// the feature and without it (0: the feature changes nothing; 1: it
	// decides every choice outright). Flips is the share of those decisions
	// whose best option changes.
	Effect float64 `json:"effect"`
	Flips  float64 `json:"flips"`
}

// Explain weighs each of the network's input features, over decisions
// (recorded choices of this policy's kind, whose options are the rows of
// Decision.Features), and returns the features by Effect, largest first.
// start is the parameter vector the network started from (Init with the
// run's seed and prior); nil leaves Start at 0. Decisions of another
// width or with fewer than two options are skipped. The scores are at
// temperature 1, the network's own scale.
func Explain(d Dims, p, start []float32, decisions []*env.Decision) []Weight {
	l := d.layout()
	out := make([]Weight, d.F)
	for i := range out {
		out[i].Feature = featureName(i)
		out[i].Wide = p[l.wl+i]
		if start != nil {
			out[i].Start = start[l.wl+i]
		}
	}
	n := 0
	for _, dec := range decisions {
		if dec == nil || dec.Dim != d.F || dec.Options() < 2 {
			continue
		}
		n++
		x := slices.Clone(dec.Features)
		raw := scores(d, p, x, 1)
		base := softmax(raw)
		best := argmax(base)
		moved := slices.Clone(raw)
		for f := range d.F {
			// Zeroing f changes the scores of the options where it is not
			// zero, and only those: each is scored again alone.
			touched := false
			for r := range dec.Options() {
				row := x[r*d.F : (r+1)*d.F]
				if row[f] != 0 {
					v := row[f]
					row[f], touched = 0, true
					moved[r] = scores(d, p, row, 1)[0]
					row[f] = v
				}
			}
			if !touched {
				continue
			}
			q := softmax(moved)
			var tv float64
			for r := range q {
				tv += math.Abs(float64(q[r] - base[r]))
			}
			out[f].Effect += tv / 2
			if argmax(q) != best {
				out[f].Flips++
			}
			copy(moved, raw)
		}
	}
	if n > 0 {
		for i := range out {
			out[i].Effect /= float64(n)
			out[i].Flips /= float64(n)
		}
	}
	slices.SortStableFunc(out, func(a, b Weight) int { return cmp.Compare(b.Effect, a.Effect) })
	return out
}

func featureName(i int) string {
	if i < len(repair.FeatureNames) {
		return repair.FeatureNames[i]
	}
	return "?"
}

func softmax(s []float32) []float32 {
	m := s[0]
	for _, v := range s {
		m = max(m, v)
	}
	var z float64
	out := make([]float32, len(s))
	for i, v := range s {
		e := math.Exp(float64(v - m))
		out[i] = float32(e)
		z += e
	}
	for i := range out {
		out[i] = float32(float64(out[i]) / z)
	}
	return out
}

func argmax(s []float32) int {
	best := 0
	for i, v := range s {
		if v > s[best] {
			best = i
		}
	}
	return best
}
