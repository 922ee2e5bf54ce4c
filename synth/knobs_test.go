package synth

import (
	"testing"

	"github.com/frognano/frog/env"
)

func TestKnobs(t *testing.T) {
	for _, k := range []Knobs{{}, {Family: "token", K: 2, Locality: "func", Module: "github.com/a/b"}, {K: 3},
		{Family: "guard", K: 1, Locality: "single", Rank: "r2-3", Module: "github.com/a/b"}, {Rank: "r10+"}} {
		got, err := ParseKnobs(k.Key())
		if err != nil || got != k {
			t.Errorf("ParseKnobs(%q) = %+v, %v; want %+v", k.Key(), got, err, k)
		}
	}
	if _, err := ParseKnobs("a/b"); err == nil {
		t.Error("ParseKnobs accepted a/b")
	}
	task := &env.Task{Repo: "m", Mutations: []env.Mutation{
		{Family: "stmt", File: "a.go", Func: "F"}, {Family: "token", File: "a.go", Func: "G"}}}
	if got, want := BinOf(task), (Knobs{Family: "stmt", K: 2, Locality: "file", Module: "m"}); got != want {
		t.Errorf("BinOf = %+v, want %+v", got, want)
	}
	task.Bin = "guard/1/single/x"
	if got := BinOf(task); got.Family != "guard" || got.Module != "x" {
		t.Errorf("BinOf with a recorded bin = %+v", got)
	}
	if !(Knobs{K: 2}).Matches(Knobs{Family: "a", K: 2}) || (Knobs{K: 1}).Matches(Knobs{K: 2}) {
		t.Error("Matches")
	}
	if (Knobs{Rank: "r1"}).Matches(Knobs{Rank: "r4-9"}) || !(Knobs{Rank: "r1"}).Matches(Knobs{Rank: "r1", K: 2}) ||
		(Knobs{Rank: "r1", K: 2}).Misses(Knobs{Rank: "r4-9", K: 3}) != 2 {
		t.Error("Matches and Misses with a rank")
	}
	// The older key, without the rank: the module keeps its slashes.
	if got, err := ParseKnobs("token/1/single/github.com/a/b"); err != nil || got != (Knobs{Family: "token", K: 1, Locality: "single", Module: "github.com/a/b"}) {
		t.Errorf("ParseKnobs of a key without the rank = %+v, %v", got, err)
	}
	for rank, want := range map[int]string{0: "", 1: "r1", 2: "r2-3", 3: "r2-3", 4: "r4-9", 9: "r4-9", 10: "r10+", 300: "r10+"} {
		if got := RankBucket(rank); got != want {
			t.Errorf("RankBucket(%d) = %q, want %q", rank, got, want)
		}
	}
	rec := &TaskRecord{Task: env.Task{Repo: "m", Mutations: []env.Mutation{{Family: "token", File: "a.go", Func: "F"}}}}
	rec.Features.OchiaiRank = 5
	if got, want := RecordBin(rec), (Knobs{Family: "token", K: 1, Locality: "single", Rank: "r4-9", Module: "m"}); got != want {
		t.Errorf("RecordBin = %+v, want %+v", got, want)
	}
}
