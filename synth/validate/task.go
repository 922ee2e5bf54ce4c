package validate

import (
	"fmt"
	"go/ast"
	"go/importer"
	"path"
	"slices"
	"strings"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/gotask/gotest"
	"github.com/frognano/frog/synth"
	"github.com/frognano/frog/synth/mutate"
)

// Mutants enumerates the single-mutation mutants of a prepared package
// (non-test files only), in source order. Type information is best effort:
// imports resolve from the go command's export data.
func (v *Validator) Mutants(p *Package) []Mutant {
	ps := p.src
	rels := make([]string, 0, len(ps.Files))
	var files []*ast.File
	for rel, sf := range ps.Files {
		rels = append(rels, rel)
		files = append(files, sf.AST)
	}
	info, _ := mutate.Check(ps.Fset, p.Rel, files, importer.Default())
	slices.Sort(rels)
	var out []Mutant
	for _, rel := range rels {
		sf := ps.Files[rel]
		for _, s := range mutate.Sites(ps.Fset, sf.AST, sf.Src, info) {
			_, patch, err := s.Apply()
			if err != nil {
				continue // a mutant that does not parse is never tried
			}
			out = append(out, Mutant{
				File: s.Filename, Patch: patch,
				Func: s.Func, Line: s.Line, EndLine: s.EndLine,
				Complexity: s.Complexity,
				Mutations:  []synth.Mutation{fromSite(s)}, origs: map[string][]byte{s.Filename: sf.Src},
			})
		}
	}
	return out
}

func fromSite(s mutate.Site) synth.Mutation {
	return synth.Mutation{
		Op: s.Op, Family: s.Family.String(), File: s.Filename,
		Line: s.Line, EndLine: s.EndLine, Func: s.Func, Desc: s.Desc,
		Edits: slices.Clone(s.Edits),
	}
}

// Record makes the stored task for a valid mutant of package p in module
// repo (its module path).
func Record(repo string, p *Package, m Mutant, res Result) synth.TaskRecord {
	rec := synth.TaskRecord{
		Task: env.Task{
			ID:               strings.ReplaceAll(repo, "/", "__") + "." + res.DiffHash,
			Repo:             repo,
			File:             m.File,
			Patch:            m.Patch,
			ProblemStatement: problemStatement(res),
			FailToPass:       res.FailToPass,
			PassToPass:       res.PassToPass,
			TestCmd:          []string{"go", "test", "-count=1", "-vet=off", "-run", gotest.RunRegexp(append(append([]string(nil), res.FailToPass...), res.PassToPass...)), p.Rel},
			Package:          path.Join(repo, strings.TrimPrefix(p.Rel, "./")),
			Mutations:        m.Mutations,
		},
		Features: synth.Features{
			K:          len(m.Mutations),
			Complexity: m.Complexity,
			FailToPass: len(res.FailToPass),
			PointsAtLine: slices.ContainsFunc(m.Mutations, func(mu synth.Mutation) bool {
				return pointsAt(res.FailureOutput, path.Base(mu.File), mu.Line, mu.EndLine)
			}),
			PackageLines: p.src.Lines,
		},
		Validation: synth.Validation{
			Outcome:         string(res.Outcome),
			BaselineSeconds: p.Baseline.Seconds(),
			TimeoutSeconds:  res.Timeout.Seconds(),
			Runs:            res.Runs,
			TestsCovering:   len(res.Covering),
			DiffHash:        res.DiffHash,
		},
	}
	hardest := mutate.Family(0)
	for _, mu := range m.Mutations {
		if f, ok := mutate.ParseFamily(mu.Family); ok && f > hardest {
			hardest, rec.Family = f, mu.Family
		}
	}
	if p.Coverage != nil {
		for _, mu := range m.Mutations { // the most suspicious injected block
			r := p.Coverage.OchiaiRank(path.Base(mu.File), mu.Line, mu.EndLine, res.FailToPass, res.PassToPass)
			if r > 0 && (rec.Features.OchiaiRank == 0 || r < rec.Features.OchiaiRank) {
				rec.Features.OchiaiRank = r
			}
		}
		rec.CoverageBlocks, rec.Coverage = p.Coverage.Compact(slices.Concat(res.FailToPass, res.PassToPass))
	}
	rec.Task.Bin = synth.RecordBin(&rec).Key()
	return rec
}

func problemStatement(res Result) string {
	var b strings.Builder
	b.WriteString("These tests fail and should pass:\n")
	for _, t := range res.FailToPass {
		fmt.Fprintf(&b, "\n%s:\n", t)
		if out := res.FailureOutput[t]; out != "" {
			b.WriteString(truncate(out, 2000))
		}
	}
	return b.String()
}

// pointsAt reports whether any failure output names file:line for a line in
// [lo, hi].
func pointsAt(outputs map[string]string, file string, lo, hi int) bool {
	for _, out := range outputs {
		for l := lo; l <= hi; l++ {
			if strings.Contains(out, fmt.Sprintf("%s:%d", file, l)) {
				return true
			}
		}
	}
	return false
}

// Candidates counts the single-mutation mutants of the package in directory
// rel of the module rooted at dir without preparing it: the sites Mutants
// would enumerate, a cheap estimate of what the package can yield.
func Candidates(dir, rel string) (int, error) {
	ps, err := gotest.ParsePackage(dir, rel)
	if err != nil {
		return 0, fmt.Errorf("package %s: %w", rel, err)
	}
	var files []*ast.File
	for _, sf := range ps.Files {
		files = append(files, sf.AST)
	}
	info, _ := mutate.Check(ps.Fset, rel, files, importer.Default())
	n := 0
	for _, sf := range ps.Files {
		n += len(mutate.Sites(ps.Fset, sf.AST, sf.Src, info))
	}
	return n, nil
}
