package gotask

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/synth/mutate"
)

// With a restore-stmt cap, the list is the list without it followed by at
// most the cap of restore-stmt candidates (a policy that tries the list in
// order tries the same templates first either way); and a list saved in
// the binary cache is read back only by a harness with the same cap.
func TestRestoreStmtListsComeLastAndApart(t *testing.T) {
	maxDir, maxTask, ws, _ := maxFixture(t)
	ctx := context.Background()
	bins := t.TempDir()
	var lines []env.Line
	for l := 1; l <= 48; l++ { // every line of calc.go
		lines = append(lines, env.Line{File: "calc/calc.go", Line: l})
	}
	list := func(restore int) ([]env.Candidate, int64) {
		t.Helper()
		h := NewHarness(ws, HarnessConfig{BinCache: bins, VerdictKey: testVerdictKey, RestoreList: restore})
		l, err := h.Candidates(ctx, laidOut(t, maxDir), env.NewWorkspace(maxTask), lines)
		if err != nil || len(l) == 0 {
			t.Fatalf("restore-stmt %d: %v, %d candidates; want some", restore, err, len(l))
		}
		return l, h.Stats().CandidatesSaved
	}
	const limit = 3
	plain, _ := list(0)
	with, saved := list(limit)
	if saved != 0 {
		t.Fatalf("a harness with restore-stmt %d read back the list saved without it", limit)
	}
	var others []env.Candidate
	restores := 0
	for i, c := range with {
		if c.ID != i {
			t.Errorf("candidate %d has ID %d", i, c.ID)
		}
		if c.Op == mutate.OpRestoreStmt {
			restores++
			continue
		}
		if restores > 0 {
			t.Errorf("candidate %d (%s at line %d) comes after a restore-stmt", i, c.Op, c.Line)
		}
		others = append(others, c)
	}
	if restores == 0 || restores > limit {
		t.Errorf("%d restore-stmt candidates in %d; want 1 to %d", restores, len(with), limit)
	}
	if diff := cmp.Diff(plain, others); diff != "" {
		t.Errorf("the list's other candidates differ from the list without restore-stmt (-without +with):\n%s", diff)
	}
	if again, saved := list(limit); saved != 1 || !cmp.Equal(again, with) {
		t.Errorf("a second harness with restore-stmt %d: %d lists read back, same list %v; want 1, true", limit, saved, cmp.Equal(again, with))
	}
	if again, saved := list(0); saved != 1 || !cmp.Equal(again, plain) {
		t.Errorf("a second harness without restore-stmt: %d lists read back, same list %v; want 1, true", saved, cmp.Equal(again, plain))
	}
}
