package mutate

import (
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path"
	"path/filepath"
	"testing"
)

// FuzzMutate feeds arbitrary Go files to Sites: no input may make it panic,
// and every mutant Apply returns must parse and undo exactly.
func FuzzMutate(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.go")
	for _, path := range files {
		src, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(src)
	}
	// Imports resolve to empty packages: the fuzzer's inputs rarely
	// type-check anyway, and the go command that real export data needs is
	// too slow to call from a fuzz worker.
	imp := emptyImporter{}
	f.Fuzz(func(t *testing.T, src []byte) {
		fset := token.NewFileSet()
		file, err := parser.ParseFile(fset, "fuzz.go", src, parser.SkipObjectResolution)
		if err != nil {
			return
		}
		info, _ := Check(fset, "fuzz", []*ast.File{file}, imp)
		for _, info := range []*types.Info{info, nil} {
			for _, s := range Sites(fset, file, src, info) {
				mutated, _, err := s.Apply()
				if err != nil {
					// Apply refuses mutants that do not parse (exotic
					// syntax, such as "if x{...}" without gofmt's space
					// around a forced condition); it must say so, never
					// return one.
					continue
				}
				if _, err := parser.ParseFile(token.NewFileSet(), "fuzz.go", mutated, 0); err != nil {
					t.Fatalf("%s at line %d: Apply returned a mutant that does not parse: %v", s.Op, s.Line, err)
				}
				orig, err := Undo(mutated, s.Edits)
				if err != nil || string(orig) != string(src) {
					t.Fatalf("%s at line %d: undo not exact: %v", s.Op, s.Line, err)
				}
			}
		}
	})
}

type emptyImporter struct{}

func (emptyImporter) Import(p string) (*types.Package, error) {
	pkg := types.NewPackage(p, path.Base(p))
	pkg.MarkComplete()
	return pkg, nil
}
