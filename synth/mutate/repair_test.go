package mutate

import (
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRepairsUndoMutations mutates the testdata files with every operator
// and asks Repairs, on the mutant, for candidates at the mutated lines: for
// every operator that changes code rather than deletes it, the original
// must be among them (the candidate space holds the fix); deletions are
// counted as outside it.
func TestRepairsUndoMutations(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.go")
	inside, outside := map[string]int{}, map[string]int{}
	missed := map[string][]string{}
	for _, path := range files {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(path)
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		info, _ := Check(fset, "p", []*ast.File{f}, importer.Default())
		for _, s := range Sites(fset, f, src, info) {
			mutant, _, err := s.Apply()
			if err != nil {
				continue
			}
			mset := token.NewFileSet()
			mf, err := parser.ParseFile(mset, name, mutant, parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			minfo, _ := Check(mset, "p", []*ast.File{mf}, importer.Default())
			var lines []int
			for l := s.Line; l <= s.EndLine; l++ {
				lines = append(lines, l)
			}
			found := false
			for _, r := range Repairs(mset, mf, mutant, minfo, lines) {
				fixed, err := Splice(mutant, r.Edits)
				if err == nil && string(fixed) == string(src) {
					found = true
					break
				}
			}
			if found {
				inside[s.Op]++
			} else {
				outside[s.Op]++
				missed[s.Op] = append(missed[s.Op], name+":"+s.Desc)
			}
		}
	}
	deleting := map[string]bool{OpRemoveStmt: true, OpEmptyBody: true, OpCondTrue: true, OpCondFalse: true, OpDropErrGuard: true, OpDropDefer: true, OpAssignOp: true, OpUnaryMinus: true}
	for op, n := range outside {
		if !deleting[op] {
			t.Errorf("%s: %d of %d mutants have no repair that undoes them: %s", op, n, n+inside[op], strings.Join(missed[op][:min(3, n)], "; "))
		}
	}
	for op, n := range inside {
		t.Logf("%-18s undone %d, not %d", op, n, outside[op])
	}
	for op, n := range outside {
		if inside[op] == 0 {
			t.Logf("%-18s undone 0, not %d", op, n)
		}
	}
}
