package synth

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/frognano/frog/env"
)

// Knobs are what a steerable synthesizer can be asked for, and the
// difficulty bin a task belongs to: its operator family, its number of
// mutations k, their locality (single for k = 1; func when every mutation
// is in one function, file when in one file, spread otherwise), the
// fault-localisation rank bucket of its bug (RankBucket: where spectrum
// fault localisation ranks the mutated block among the covered ones, known
// once the task is validated) and its module. An empty field (K 0) means
// "any".
type Knobs struct {
	Family   string `json:"family,omitempty"`
	K        int    `json:"k,omitempty"`
	Locality string `json:"locality,omitempty"`
	Rank     string `json:"rank,omitempty"`
	Module   string `json:"module,omitempty"`
}

// RankBucket is the bin's name for an Ochiai rank (1 = the mutated block
// is the most suspicious): r1, r2-3, r4-9 or r10+; "" when unknown (0). A
// policy that tries templates at the most suspicious lines first reaches
// r1 bugs in its first tries and r10+ ones rarely.
func RankBucket(rank int) string {
	switch {
	case rank <= 0:
		return ""
	case rank == 1:
		return "r1"
	case rank <= 3:
		return "r2-3"
	case rank <= 9:
		return "r4-9"
	}
	return "r10+"
}

func isRankBucket(s string) bool {
	return s == "*" || s == "r1" || s == "r2-3" || s == "r4-9" || s == "r10+"
}

// Key is the knobs as one string, "family/k/locality/rank/module", "*" for
// an empty field; ParseKnobs reads it back.
func (k Knobs) Key() string {
	f := func(s string) string {
		if s == "" {
			return "*"
		}
		return s
	}
	ks := "*"
	if k.K > 0 {
		ks = strconv.Itoa(k.K)
	}
	return f(k.Family) + "/" + ks + "/" + f(k.Locality) + "/" + f(k.Rank) + "/" + f(k.Module)
}

// ParseKnobs parses a Key, and the older form without the rank
// ("family/k/locality/module"; a module path has slashes of its own, so
// the fourth field is a rank only when it is one).
func ParseKnobs(key string) (Knobs, error) {
	p := strings.SplitN(key, "/", 5)
	if len(p) < 4 {
		return Knobs{}, fmt.Errorf("bin %q: want family/k/locality/rank/module", key)
	}
	g := func(s string) string {
		if s == "*" {
			return ""
		}
		return s
	}
	var k Knobs
	k.Family, k.Locality = g(p[0]), g(p[2])
	if len(p) == 5 && isRankBucket(p[3]) {
		k.Rank, k.Module = g(p[3]), g(p[4])
	} else {
		k.Module = g(strings.SplitN(key, "/", 4)[3])
	}
	if p[1] != "*" {
		n, err := strconv.Atoi(p[1])
		if err != nil || n < 1 {
			return Knobs{}, fmt.Errorf("bin %q: k %q: want a positive number or *", key, p[1])
		}
		k.K = n
	}
	return k, nil
}

// Matches says whether a task in bin b satisfies the knobs k (an empty
// field of k matches anything).
func (k Knobs) Matches(b Knobs) bool { return k.Misses(b) == 0 }

// Misses counts the knobs of k that bin b does not satisfy (0: b matches).
func (k Knobs) Misses(b Knobs) int {
	m := 0
	for _, ok := range []bool{k.Family == "" || k.Family == b.Family, k.K == 0 || k.K == b.K,
		k.Locality == "" || k.Locality == b.Locality, k.Rank == "" || k.Rank == b.Rank, k.Module == "" || k.Module == b.Module} {
		if !ok {
			m++
		}
	}
	return m
}

// RecordBin is the bin of a stored or just validated task: BinOf its task,
// with the rank bucket of its fault-localisation rank (a feature of the
// record, measured when it was validated).
func RecordBin(r *TaskRecord) Knobs {
	k := BinOf(&r.Task)
	if k.Rank == "" {
		k.Rank = RankBucket(r.Features.OchiaiRank)
	}
	return k
}

// BinOf is the difficulty bin of a task: the one its synthesizer recorded
// (env.Task.Bin), else what its mutations say. The family of a task of
// several mutations is that of its hardest (token, structural, idiom;
// the simulation's token, guard, stmt); a task with no mutation record
// and no bin is in the bin of its module alone.
func BinOf(t *env.Task) Knobs {
	if t.Bin != "" {
		if k, err := ParseKnobs(t.Bin); err == nil {
			return k
		}
	}
	return MutationKnobs(t.Repo, t.Mutations)
}

// familyRank orders the families from easiest to hardest: real
// mutations' (mutate's token, structural, idiom) and the simulation's
// (token, guard, stmt).
var familyRank = map[string]int{"token": 1, "structural": 2, "guard": 2, "idiom": 3, "stmt": 3}

// MutationKnobs is the bin that mutations muts of module repo make, with
// no rank (a rank is known only once the tests have run): BinOf of a task
// with no recorded bin. The synthesizer steers what it tries by it.
func MutationKnobs(repo string, muts []env.Mutation) Knobs {
	k := Knobs{Module: repo}
	if len(muts) == 0 {
		return k
	}
	k.K = len(muts)
	if k.K == 1 { // the common case, without the maps (steering asks per mutant)
		k.Family, k.Locality = muts[0].Family, "single"
		return k
	}
	files, funcs := map[string]bool{}, map[string]bool{}
	for _, m := range muts {
		if familyRank[m.Family] >= familyRank[k.Family] {
			k.Family = m.Family
		}
		files[m.File] = true
		funcs[m.File+"\x00"+m.Func] = true
	}
	switch {
	case len(funcs) == 1:
		k.Locality = "func"
	case len(files) == 1:
		k.Locality = "file"
	default:
		k.Locality = "spread"
	}
	return k
}
