package source

import (
	"slices"

	"github.com/frognano/frog/synth"
	"github.com/frognano/frog/synth/validate"
)

// Steering and compound tasks: the parts of the schedule that bend its
// fair rule toward what the curriculum asks for. Like the rest of the
// schedule they are plain code run under the Synthesizer's queue lock.

// earlyCombos is how many combined mutants a package draws at once, ahead
// of its combined stage, when the steer asks for k > 1.
const earlyCombos = minChunk

// compoundTries is how many compounds of one base task a compound job
// validates: the base with each of that many more mutations.
const compoundTries = 16

// mutantKnobs is the bin of mutant m of pj (no rank).
func mutantKnobs(pj *pkgJob, m *validate.Mutant) synth.Knobs {
	return synth.MutationKnobs(pj.mod.mod.Path, m.Mutations)
}

// wantsMutant reports whether mutant m of pj has the steer's family, k and
// locality.
func (sc *schedule) wantsMutant(pj *pkgJob, m *validate.Mutant) bool {
	st := sc.steer
	st.Module, st.Rank = "", ""
	return st.Matches(mutantKnobs(pj, m))
}

// wantsCombos reports whether the steer asks for combined mutants.
func (sc *schedule) wantsCombos() bool {
	switch sc.steer.Locality {
	case "func", "file", "spread":
		return true
	}
	return sc.steer.K > 1
}

func (sc *schedule) ofModule(pj *pkgJob) bool {
	return sc.steer.Module == "" || sc.steer.Module == pj.mod.mod.Path
}

// offers reports whether pj can offer the steered bin: it is of the
// steer's module, and it is not prepared yet (what it offers is unknown),
// or a mutant it has to hand out matches, or its caught mutants can be
// combined into the combined mutants the steer asks for.
func (sc *schedule) offers(pj *pkgJob) bool {
	if !sc.ofModule(pj) {
		return false
	}
	if pj.state == unprepared {
		return true
	}
	if slices.ContainsFunc(pj.todo, func(m validate.Mutant) bool { return sc.wantsMutant(pj, &m) }) {
		return true
	}
	return sc.comboEarly(pj)
}

// comboEarly reports whether the steer asks for combined mutants and pj,
// still in its single stage, has caught mutants enough to combine.
func (sc *schedule) comboEarly(pj *pkgJob) bool {
	return sc.wantsCombos() && !pj.combos && sc.combos > 0 && len(pj.caught) >= 2
}

// steerTodo readies pj's next chunk for the steer: when the steer asks for
// combined mutants and pj is still in its single stage, it draws some from
// the mutants caught so far, ahead of its combined stage; then it moves
// the mutants that match to the front (in their order).
func (sc *schedule) steerTodo(pj *pkgJob) {
	if sc.steer == (synth.Knobs{}) || pj.state != ready {
		return
	}
	if sc.comboEarly(pj) {
		caught := slices.Clone(pj.caught)
		slices.SortFunc(caught, byPatch)
		var early []validate.Mutant
		for _, m := range combos(pj.rng, caught, earlyCombos, pj.seen()) {
			if sc.wantsMutant(pj, &m) {
				early = append(early, m)
			}
		}
		pj.todo = append(early, pj.todo...)
		pj.est += len(early)
	}
	var want, rest []validate.Mutant
	for _, m := range pj.todo {
		if sc.wantsMutant(pj, &m) {
			want = append(want, m)
		} else {
			rest = append(rest, m)
		}
	}
	pj.todo = append(want, rest...)
}

// compoundJob is a compound job waiting for its package: base is the task's
// mutations, done is called once when the job has ended (validated, given
// up, or dropped).
type compoundJob struct {
	base []synth.Mutation
	done func()
}

// nextCompound returns the first compound job whose package is prepared,
// with its mutants drawn: the base combined with each of up to
// compoundTries more mutations its package's tests caught (those in the
// same function first, then the same file, then the rest, each shuffled),
// or the preparation of a package a compound waits for. A compound whose
// package cannot be prepared, or whose base no longer applies, is dropped.
func (sc *schedule) nextCompound() *job {
	for i := 0; i < len(sc.compounds); i++ {
		j := sc.compounds[i]
		pj := j.pj
		switch {
		case pj.state == unprepared:
			pj.state = preparing
			return &job{pj: pj}
		case pj.state == preparing:
			continue
		case pj.pkg == nil:
			// Skipped: it offers nothing.
			sc.compounds = slices.Delete(sc.compounds, i, i+1)
			j.cj.done()
			i--
			continue
		}
		sc.compounds = slices.Delete(sc.compounds, i, i+1)
		j.mutants = compoundsOf(pj, j.cj.base)
		if len(j.mutants) == 0 {
			j.cj.done()
			i--
			continue
		}
		return j
	}
	return nil
}

// compoundsOf draws the compounds of base in pj (see nextCompound).
func compoundsOf(pj *pkgJob, base []synth.Mutation) []validate.Mutant {
	b, err := pj.pkg.MutantOf(base)
	if err != nil {
		return nil
	}
	partners := pj.caught
	if len(partners) == 0 {
		// Nothing validated yet: the single mutants still to try.
		for _, m := range pj.todo {
			if len(m.Mutations) == 1 {
				partners = append(partners, m)
			}
		}
	}
	tiers := [3][]validate.Mutant{}
	for _, m := range partners {
		mu := m.Mutations[0]
		switch {
		case mu.File == base[0].File && mu.Func == base[0].Func:
			tiers[0] = append(tiers[0], m)
		case mu.File == base[0].File:
			tiers[1] = append(tiers[1], m)
		default:
			tiers[2] = append(tiers[2], m)
		}
	}
	var out []validate.Mutant
	for _, tier := range tiers {
		slices.SortFunc(tier, byPatch)
		pj.rng.Shuffle(len(tier), func(a, c int) { tier[a], tier[c] = tier[c], tier[a] })
		for _, m := range tier {
			if len(out) == compoundTries {
				return out
			}
			if c, err := validate.Combine(b, m); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}
