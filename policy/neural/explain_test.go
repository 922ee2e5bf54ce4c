package neural

import (
	"testing"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/policy/repair"
)

// TestExplainFindsTheFeatureThatDecides gives a network whose choices
// depend on two features, one of them far more: Explain must put that one
// first, with the best option changed in every decision, the other second,
// and give the rest nothing.
func TestExplainFindsTheFeatureThatDecides(t *testing.T) {
	d := DefaultDims
	p := make([]float32, d.Params()) // the deep part silent
	l := d.layout()
	ochiai, rank := featureIndex("ochiai"), featureIndex("rank_inv")
	if ochiai < 0 || rank < 0 {
		t.Fatal("features ochiai and rank_inv not found")
	}
	p[l.wl+ochiai], p[l.wl+rank] = 8, 0.5
	var decs []*env.Decision
	for range 5 {
		x := make([]float32, 3*d.F)
		x[0*d.F+ochiai] = 1 // the first option: suspicious
		x[1*d.F+rank], x[2*d.F+rank] = 1, 1
		decs = append(decs, &env.Decision{Kind: Kind, Features: x, Dim: d.F, Chosen: 0})
	}
	decs = append(decs, &env.Decision{Kind: Kind, Features: make([]float32, d.F), Dim: d.F}) // one option: skipped
	start := Init(d, 1, true)
	w := Explain(d, p, start, decs)
	if len(w) != repair.Dim {
		t.Fatalf("%d weights, want %d", len(w), repair.Dim)
	}
	if w[0].Feature != "ochiai" || w[0].Flips != 1 || w[0].Effect < 0.5 {
		t.Errorf("first weight %+v: want ochiai deciding every choice", w[0])
	}
	if w[0].Wide != 8 || w[0].Start != Prior["ochiai"] {
		t.Errorf("ochiai's linear weight %v from %v, want 8 from the prior's %v", w[0].Wide, w[0].Start, Prior["ochiai"])
	}
	if w[1].Feature != "rank_inv" || w[1].Effect == 0 || w[1].Flips != 0 {
		t.Errorf("second weight %+v: want rank_inv, moving the choices without changing the best", w[1])
	}
	for _, f := range w[2:] {
		if f.Effect != 0 || f.Flips != 0 {
			t.Errorf("%s moved the choices (%+v) though the network ignores it", f.Feature, f)
		}
	}
}
