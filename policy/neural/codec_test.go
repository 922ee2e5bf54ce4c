package neural

import (
	"reflect"
	"testing"

	"github.com/frognano/frog/policy/repair"
)

// A policy crosses to a worker and comes back equal, weights bit for bit;
// a blob of another kind or with weights that do not fit is refused.
func TestPolicyCodecRoundTrip(t *testing.T) {
	d := Dims{F: repair.Dim, H1: 4, H2: 3}
	p := &Policy{Dims: d, Params: make([]float32, d.Params()), Temperature: 0.7, Seed: 9, Protocol: repair.Config{Lines: 30, Keep: true}, NoStop: true}
	for i := range p.Params {
		p.Params[i] = float32(i)*0.25 - 3
	}
	var c PolicyCodec
	kind, b, err := c.EncodePolicy(p)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.DecodePolicy(kind, b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, p) {
		t.Errorf("decoded %+v, want %+v", got, p)
	}
	if _, err := c.DecodePolicy("sim", b); err == nil {
		t.Error("a blob of another kind was accepted")
	}
	p.Params = p.Params[:10]
	if _, b, err = c.EncodePolicy(p); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DecodePolicy(kind, b); err == nil {
		t.Error("weights that do not fit their network were accepted")
	}
}
