package curriculum

import "testing"

// ReplayOptions.Apply sets each of its settings, and only those.
func TestReplayOptionsApply(t *testing.T) {
	o := ReplayOptions{FreshShare: 0.3, Temperature: 0.7, Staleness: 0.2, Discount: 0.9, FixedSet: 11, Capacity: 13, Compound: 0.1}
	got := DefaultReplayConfig()
	o.Apply(&got)
	want := DefaultReplayConfig()
	want.FreshShare, want.Temperature, want.Staleness, want.Estimate.Discount = 0.3, 0.7, 0.2, 0.9
	want.FixedSet, want.Capacity, want.Compound = 11, 13, 0.1
	if got != want {
		t.Errorf("Apply: got %+v, want %+v", got, want)
	}
}
