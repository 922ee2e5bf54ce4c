package baseline

import (
	"reflect"
	"testing"
)

// Every baseline crosses as its name and seed and comes back the same.
func TestPolicyCodecRoundTrips(t *testing.T) {
	var c PolicyCodec
	for _, name := range Names {
		p, err := New(name, 7)
		if err != nil {
			t.Fatal(err)
		}
		kind, b, err := c.EncodePolicy(p)
		if err != nil {
			t.Fatal(err)
		}
		back, err := c.DecodePolicy(kind, b)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(p, back) {
			t.Errorf("%s: %+v came back as %+v", name, p, back)
		}
	}
	if _, err := c.DecodePolicy("frog-neural-policy/1", []byte(`{}`)); err == nil {
		t.Error("a blob of another kind was decoded")
	}
}
