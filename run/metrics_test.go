package run

import (
	"testing"

	"github.com/frognano/frog/actors"
	"github.com/frognano/frog/policy"
)

// TestUpdateEventCountsDroppedGroups: with refilling, a group without
// signal never reaches a batch, so the batch's share is 0; the metrics
// line's share is that of the groups judged since the previous update,
// the dropped ones included.
func TestUpdateEventCountsDroppedGroups(t *testing.T) {
	for _, tt := range []struct {
		name           string
		u              actors.UpdateRecord
		zero, refilled float64
	}{
		{"refilled", actors.UpdateRecord{UpdateStats: policy.UpdateStats{Groups: 4},
			Judged: actors.GroupsJudged{Groups: 6, ZeroSignal: 2, Refilled: 2}}, 2.0 / 6, 2.0 / 6},
		{"in the batch", actors.UpdateRecord{UpdateStats: policy.UpdateStats{Groups: 4, ZeroSignalGroups: 1},
			Judged: actors.GroupsJudged{Groups: 4, ZeroSignal: 1}}, 0.25, 0},
		{"no judged count", actors.UpdateRecord{UpdateStats: policy.UpdateStats{Groups: 4, ZeroSignalGroups: 3}}, 0.75, 0},
		{"nothing", actors.UpdateRecord{}, 0, 0},
	} {
		e := UpdateEvent(tt.u)
		if e.ZeroSignalShare != tt.zero || e.RefilledShare != tt.refilled {
			t.Errorf("%s: zero-signal share %v, refilled %v; want %v, %v", tt.name, e.ZeroSignalShare, e.RefilledShare, tt.zero, tt.refilled)
		}
	}
}
