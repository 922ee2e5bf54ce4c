package experiment

import (
	"strings"
	"testing"
)

func TestParseArm(t *testing.T) {
	yes, no := true, false
	for _, tc := range []struct {
		in   string
		want Arm
	}{
		{"uniform", Arm{Name: "uniform", Strategy: "uniform"}},
		{"uniform:refill", Arm{Name: "uniform:refill", Strategy: "uniform", Refill: &yes}},
		{"frontier:norefill:t=0.25", Arm{Name: "frontier:norefill:t=0.25", Strategy: "frontier", Refill: &no, Temperature: 0.25}},
		{"frontier:return", Arm{Name: "frontier:return", Strategy: "frontier", Return: true}},
	} {
		got, err := ParseArm(tc.in)
		if err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		if got.Name != tc.want.Name || got.Strategy != tc.want.Strategy || got.Temperature != tc.want.Temperature ||
			got.Return != tc.want.Return || (got.Refill == nil) != (tc.want.Refill == nil) || got.Refill != nil && *got.Refill != *tc.want.Refill {
			t.Errorf("%s: %+v, want %+v", tc.in, got, tc.want)
		}
	}
	for _, bad := range []string{"", ":refill", "frontier:t=0", "frontier:t=-1", "frontier:t=x", "frontier:t=Inf", "frontier:fast"} {
		if _, err := ParseArm(bad); err == nil || !strings.Contains(err.Error(), "strategy") {
			t.Errorf("%q: error %v, want one naming the strategy", bad, err)
		}
	}
	o := Options{Refill: true}
	if a, _ := ParseArm("uniform"); !o.refill(a) {
		t.Error("an arm without :refill/:norefill does not follow Options.Refill")
	}
	if a, _ := ParseArm("uniform:norefill"); o.refill(a) {
		t.Error(":norefill did not override Options.Refill")
	}
}
