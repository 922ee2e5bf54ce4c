package repair

import (
	"math"
	"slices"
	"sort"

	"github.com/frognano/frog/env"
)

// Spectrum is one code block's row of the coverage spectrum: how many
// failing and passing tests ran it (ef, ep) and how many did not (nf, np).
type Spectrum struct {
	Block          env.Block
	EF, EP, NF, NP int
}

// Ochiai = ef / √((ef+nf)(ef+ep)).
func (s Spectrum) Ochiai() float64 {
	d := math.Sqrt(float64((s.EF + s.NF) * (s.EF + s.EP)))
	if d == 0 {
		return 0
	}
	return float64(s.EF) / d
}

// Tarantula = (ef/F) / (ef/F + ep/P).
func (s Spectrum) Tarantula() float64 {
	f, p := float64(s.EF+s.NF), float64(s.EP+s.NP)
	if f == 0 || s.EF == 0 {
		return 0
	}
	fr := float64(s.EF) / f
	pr := 0.0
	if p > 0 {
		pr = float64(s.EP) / p
	}
	return fr / (fr + pr)
}

// DStar is DStar with exponent 2: ef² / (ep + nf), with a zero denominator
// read as the largest finite score.
func (s Spectrum) DStar() float64 {
	d := float64(s.EP + s.NF)
	if d == 0 {
		if s.EF == 0 {
			return 0
		}
		return math.MaxFloat64
	}
	return float64(s.EF*s.EF) / d
}

// Spectra computes every covered block's spectrum from a coverage report and
// the set of tests that fail. Tests the report does not hold count as
// neither.
func Spectra(cov *env.CoverageReport, failing map[string]bool) []Spectrum {
	var F, P int
	for t := range cov.Tests {
		if failing[t] {
			F++
		} else {
			P++
		}
	}
	out := make([]Spectrum, len(cov.Blocks))
	for i, b := range cov.Blocks {
		out[i].Block = b
	}
	for t, blocks := range cov.Tests {
		for _, i := range blocks {
			if i < 0 || i >= len(out) {
				continue
			}
			if failing[t] {
				out[i].EF++
			} else {
				out[i].EP++
			}
		}
	}
	for i := range out {
		out[i].NF, out[i].NP = F-out[i].EF, P-out[i].EP
	}
	return out
}

// Suspect is one line with its suspiciousness.
type Suspect struct {
	Line      env.Line
	Ochiai    float64
	Tarantula float64
	DStar     float64
	EF, EP    int
	F, P      int
	// Rank is the line's place by Ochiai among the suspects, from 1.
	Rank int
}

// Rank turns block spectra into lines ordered by suspiciousness: Ochiai,
// then DStar, then fewer passing tests, then the smaller block (a tighter
// location), then file and line, so that ties fall the same way every time.
// Blocks no failing test ran are left out.
func Rank(spectra []Spectrum) []Suspect {
	type scored struct {
		s    Spectrum
		size int
	}
	var bs []scored
	for _, s := range spectra {
		if s.EF > 0 {
			bs = append(bs, scored{s, s.Block.End - s.Block.Start + 1})
		}
	}
	sort.SliceStable(bs, func(i, j int) bool {
		a, b := bs[i], bs[j]
		if oa, ob := a.s.Ochiai(), b.s.Ochiai(); oa != ob {
			return oa > ob
		}
		if da, db := a.s.DStar(), b.s.DStar(); da != db {
			return da > db
		}
		if a.s.EP != b.s.EP {
			return a.s.EP < b.s.EP
		}
		if a.size != b.size {
			return a.size < b.size
		}
		if a.s.Block.File != b.s.Block.File {
			return a.s.Block.File < b.s.Block.File
		}
		return a.s.Block.Start < b.s.Block.Start
	})
	seen := map[env.Line]bool{}
	var out []Suspect
	for _, b := range bs {
		for l := b.s.Block.Start; l <= b.s.Block.End; l++ {
			line := env.Line{File: b.s.Block.File, Line: l}
			if seen[line] {
				continue
			}
			seen[line] = true
			out = append(out, Suspect{Line: line, Ochiai: b.s.Ochiai(), Tarantula: b.s.Tarantula(), DStar: b.s.DStar(),
				EF: b.s.EF, EP: b.s.EP, F: b.s.EF + b.s.NF, P: b.s.EP + b.s.NP, Rank: len(out) + 1})
		}
	}
	return out
}

// TopLines returns the first n suspects' lines (all with n <= 0).
func TopLines(s []Suspect, n int) []env.Line {
	if n <= 0 || n > len(s) {
		n = len(s)
	}
	out := make([]env.Line, n)
	for i := range n {
		out[i] = s[i].Line
	}
	return slices.Clip(out)
}
