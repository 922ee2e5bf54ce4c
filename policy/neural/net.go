package neural

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/frognano/frog/policy/repair"
)

// Dims are the network's sizes: F input features (repair.Dim), two hidden
// layers of H1 and H2 ReLU units.
type Dims struct {
	F, H1, H2 int
}

// DefaultDims is the network frog trains: repair's features, 64 and 32
// hidden units.
var DefaultDims = Dims{F: repair.Dim, H1: 64, H2: 32}

// Params is the number of parameters. The layout of the parameter vector:
//
//	W1 F×H1 | b1 H1 | W2 H1×H2 | b2 H2 | w3 H2 | wl F
//
// The score of an option with features x is
//
//	s(x) = relu(relu(x·W1 + b1)·W2 + b2)·w3 + x·wl
//
// the deep part and a wide, linear part (wl) that starts as a prior: the
// fault localisation that the hand-written baselines follow. No output bias:
// a softmax over one decision's options ignores it.
func (d Dims) Params() int { return d.F*d.H1 + d.H1 + d.H1*d.H2 + d.H2 + d.H2 + d.F }

type layout struct{ w1, b1, w2, b2, w3, wl int }

func (d Dims) layout() layout {
	var l layout
	l.b1 = d.F * d.H1
	l.w2 = l.b1 + d.H1
	l.b2 = l.w2 + d.H1*d.H2
	l.w3 = l.b2 + d.H2
	l.wl = l.w3 + d.H2
	return l
}

// MaxHidden bounds a hidden layer's units: 8192 × 8192 weights are 256 MiB
// of float32, and a size near math.MaxInt overflows the parameter count.
const MaxHidden = 8192

func (d Dims) valid() error {
	if d.F < 1 || d.H1 < 1 || d.H2 < 1 || d.F > MaxHidden || d.H1 > MaxHidden || d.H2 > MaxHidden {
		return fmt.Errorf("network dims %+v: want every size 1 to %d", d, MaxHidden)
	}
	return nil
}

// Init is how the parameters start: the deep part small and random
// (scaled so the first scores are near the prior's), the wide part the
// prior (prior) or zero (a uniform policy).
func Init(d Dims, seed uint64, prior bool) []float32 {
	p := make([]float32, d.Params())
	l := d.layout()
	rng := rand.New(rand.NewPCG(seed, 0x6e6575726f6e))
	he := func(fanIn int) float32 { return float32(math.Sqrt(2 / float64(fanIn))) }
	for i := range d.F * d.H1 {
		p[l.w1+i] = float32(rng.NormFloat64()) * he(d.F)
	}
	for i := range d.H1 * d.H2 {
		p[l.w2+i] = float32(rng.NormFloat64()) * he(d.H1)
	}
	for i := range d.H2 {
		p[l.w3+i] = float32(rng.NormFloat64()) * 0.1 / float32(math.Sqrt(float64(d.H2)))
	}
	if prior && repair.Readable(d.F) { // the prior's features are among the first PrefixDim
		for name, w := range Prior {
			if i := featureIndex(name); i >= 0 && i < d.F {
				p[l.wl+i] = w
			}
		}
	}
	return p
}

// Prior is the wide part's start: prefer the lines fault localisation
// ranks highest, as fl-greedy does, and the edits that make the code read
// more like the rest of its module, pass over lines that gave nothing, and
// stop only when nothing is left.
var Prior = map[string]float32{
	"ochiai": 3, "rank_inv": 2, "top1": 1, "top5": 0.5, "all_failing": 0.5, "in_package": 0.5, "named_line": 0.5,
	"line_no_effect": -1.5, "line_improved": 1, "stop": -3,
	"natural": 1, "natural_best": 0.5, "surprise": 0.25,
}

func featureIndex(name string) int {
	for i, n := range repair.FeatureNames {
		if n == name {
			return i
		}
	}
	return -1
}

// scores computes s(x)/temperature for each row of x (rows of d.F), on the
// host in float32: the policy's inference, where a batch is a few hundred
// options and a GPU would only add latency.
func scores(d Dims, p []float32, x []float32, temperature float64) []float32 {
	l := d.layout()
	n := len(x) / d.F
	out := make([]float32, n)
	h1 := make([]float32, d.H1)
	h2 := make([]float32, d.H2)
	inv := float32(1 / temperature)
	for r := range n {
		row := x[r*d.F : (r+1)*d.F]
		for j := range d.H1 {
			s := p[l.b1+j]
			for i, v := range row {
				if v != 0 {
					s += v * p[l.w1+i*d.H1+j]
				}
			}
			h1[j] = max(s, 0)
		}
		for j := range d.H2 {
			s := p[l.b2+j]
			for i, v := range h1 {
				s += v * p[l.w2+i*d.H2+j]
			}
			h2[j] = max(s, 0)
		}
		var s float32
		for j, v := range h2 {
			s += v * p[l.w3+j]
		}
		for i, v := range row {
			s += v * p[l.wl+i]
		}
		out[r] = s * inv
	}
	return out
}

// logSoftmax of scores, in float64.
func logSoftmax(s []float32) []float64 {
	m := math.Inf(-1)
	for _, v := range s {
		m = math.Max(m, float64(v))
	}
	var z float64
	for _, v := range s {
		z += math.Exp(float64(v) - m)
	}
	lz := m + math.Log(z)
	out := make([]float64, len(s))
	for i, v := range s {
		out[i] = float64(v) - lz
	}
	return out
}
