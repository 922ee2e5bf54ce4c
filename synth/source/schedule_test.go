package source

import (
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/frognano/frog/synth/validate"
)

// defaultLike is a schedule shaped like the pinned list: per module, its
// packages' candidate mutants (capped at 400), as measured on
// source.Default.
func defaultLike() *schedule {
	mods := [][]int{
		{7, 175, 343, 247, 21, 14, 90, 65, 46, 36, 126, 25, 1, 39, 74, 102, 52, 22, 383, 151, 400, 400, 150}, // gods
		{400}, {400}, {400}, {400, 80}, {400}, {30, 400, 400, 93, 163, 139}, {248}, {400}, {400},
		{187, 191}, {400}, {328, 29}, {400},
	}
	sc := &schedule{maxChunk: 300}
	for i, pkgs := range mods {
		var js []*pkgJob
		for k, est := range pkgs {
			js = append(js, &pkgJob{mod: &modState{}, rel: fmt.Sprintf("m%d/p%d", i, k), est: est})
		}
		sc.mods = append(sc.mods, js)
	}
	return sc
}

// drive runs sc as one worker would until upTo mutants are handed out,
// preparing every package with as many mutants as it was estimated to
// have, and returns the packages in the order jobs were taken
// ("prepare m0/p0", "m0/p0 32").
func drive(sc *schedule, upTo int) []string {
	var order []string
	for sc.handed < upTo {
		j := sc.next()
		if j == nil {
			break
		}
		pj := j.pj
		if j.mutants == nil {
			order = append(order, "prepare "+pj.rel)
			muts := make([]validate.Mutant, pj.est)
			for i := range muts {
				muts[i].Patch = fmt.Sprintf("%s/%d", pj.rel, i)
			}
			sc.prepared(pj, nil, muts)
			continue
		}
		order = append(order, fmt.Sprintf("%s %d", pj.rel, len(j.mutants)))
		sc.chunkDone(pj, nil, nil)
	}
	return order
}

func modHanded(sc *schedule) (handed, est []int) {
	for _, pkgs := range sc.mods {
		h, e := 0, 0
		for _, pj := range pkgs {
			h += pj.handed
			e += pj.est
		}
		handed, est = append(handed, h), append(est, e)
	}
	return handed, est
}

// Every module gets work from the start, and then each in proportion to
// what it offers, within a chunk either way.
func TestScheduleSpreadsInProportion(t *testing.T) {
	sc := defaultLike()
	drive(sc, 14*minChunk+200)
	handed, _ := modHanded(sc)
	if i := slices.Index(handed, 0); i >= 0 {
		t.Errorf("after %d mutants handed out, module %d has had none: %v", sc.handed, i, handed)
	}
	for _, upTo := range []int{1000, 1500, 2500, 4000, 6000, 8000} {
		sc := defaultLike()
		drive(sc, upTo)
		handed, est := modHanded(sc)
		total := 0
		for _, e := range est {
			total += e
		}
		chunk := sc.chunkSize(1<<30) + minChunk // about a chunk
		for i := range handed {
			want := float64(sc.handed) * float64(est[i]) / float64(total)
			if d := float64(handed[i]) - want; d > float64(chunk) || d < -float64(chunk) {
				t.Errorf("after %d mutants: module %d had %d, want %.0f ± %d (about a chunk)", sc.handed, i, handed[i], want, chunk)
			}
		}
	}
}

// Within a module, packages are prepared one turn at a time, each getting
// a chunk before the next is prepared.
func TestScheduleInterleavesPackages(t *testing.T) {
	sc := &schedule{maxChunk: 300}
	var js []*pkgJob
	for k, est := range []int{100, 100, 100} {
		js = append(js, &pkgJob{mod: &modState{}, rel: fmt.Sprintf("p%d", k), est: est})
	}
	sc.mods = [][]*pkgJob{js}
	got := drive(sc, 1000)
	want := []string{"prepare p0", "p0 32", "prepare p1", "p1 32", "prepare p2", "p2 32", "p0 32", "p1 32", "p2 32", "p0 36", "p1 36", "p2 36"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("order of jobs (-want +got):\n%s", diff)
	}
	if slices.ContainsFunc(js, func(pj *pkgJob) bool { return pj.state != done }) {
		t.Error("packages not done after every mutant was handed out")
	}
}

// Mutants a chunk did not get to go back first in line and no longer count
// as handed out; a package is done only when its last chunk ends.
func TestScheduleTakesBackWhatWasNotTried(t *testing.T) {
	sc := &schedule{maxChunk: 300}
	pj := &pkgJob{mod: &modState{}, rel: "p", est: 40}
	sc.mods = [][]*pkgJob{{pj}}
	sc.prepared(pj, nil, make([]validate.Mutant, 40))
	j := sc.next()
	if len(j.mutants) != 40 {
		t.Fatalf("chunk of %d, want all 40 (too few would be left)", len(j.mutants))
	}
	if sc.next() != nil {
		t.Fatal("a second job while the only package's mutants are all out")
	}
	sc.chunkDone(pj, j.mutants[30:], nil)
	if pj.handed != 30 || sc.handed != 30 || len(pj.todo) != 10 || pj.state != ready {
		t.Fatalf("after giving 10 back: handed %d/%d, todo %d, state %v", pj.handed, sc.handed, len(pj.todo), pj.state)
	}
	j = sc.next()
	sc.chunkDone(pj, nil, nil)
	if len(j.mutants) != 10 || pj.state != done || sc.next() != nil {
		t.Errorf("the rest: chunk of %d, state %v; want 10, done, and no more work", len(j.mutants), pj.state)
	}
}

// The order of work depends only on the schedule: two runs agree.
func TestScheduleIsDeterministic(t *testing.T) {
	a, b := drive(defaultLike(), 5000), drive(defaultLike(), 5000)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("two runs differ (-first +second):\n%s", diff)
	}
}
