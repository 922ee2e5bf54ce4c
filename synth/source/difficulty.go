package source

import (
	"math"

	"github.com/frognano/frog/synth"
	"github.com/frognano/frog/synth/mutate"
)

// Difficulty is the scalar difficulty estimate of a task, on frog's scale
// (the skill at which a policy solves it half of the time). It is a sum of
// terms, each a guess to be refit once solve rates are observed:
//
//	rank(family)                  token 1, structural 2, idiom 3 (2 if unknown)
//	+ 0.75·(k − 1)                each further mutation
//	+ 0.5·log2(complexity)        a bigger function hides the bug better
//	+ 1/FAIL_TO_PASS − 0.25       one failing test says less than many
//	+ 1 unless the output names the mutated line
//	+ 0.5·log2(min(Ochiai rank, 16))  rank 1 adds nothing, rank 4 adds 1, at most 2
//
// It lies roughly in [1, 10].
func Difficulty(family string, f synth.Features) float64 {
	d := 2.0
	if f, ok := mutate.ParseFamily(family); ok {
		d = float64(f) // the families are numbered by rising difficulty
	}
	if f.K > 1 {
		d += 0.75 * float64(f.K-1)
	}
	if f.Complexity > 1 {
		d += 0.5 * math.Log2(float64(f.Complexity))
	}
	if f.FailToPass > 0 {
		d += 1/float64(f.FailToPass) - 0.25
	}
	if !f.PointsAtLine {
		d++
	}
	if f.OchiaiRank > 1 {
		d += 0.5 * math.Log2(float64(min(f.OchiaiRank, 16)))
	}
	return math.Round(d*100) / 100
}
