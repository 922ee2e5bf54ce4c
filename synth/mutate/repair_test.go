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

	"github.com/frognano/frog/env"
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
			for _, r := range Repairs(mset, mf, mutant, minfo, lines, nil) {
				fixed, err := env.Splice(mutant, r.Edits)
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

// TestBorrowingRepairs checks the templates that borrow code at the marks
// a forced condition and an emptied body leave: the condition tested
// elsewhere in the file (through a parameter of the same name and type in
// another function), a nil check built from the body's variables, the
// error returned for an empty body, and nothing whose names mean
// something else at the mark.
func TestBorrowingRepairs(t *testing.T) {
	src := `package p

import "errors"

var errNeg = errors.New("negative")

func count(xs []int, limit int) (int, error) {
	n := 0
	for _, x := range xs {
		if x > limit {
			continue
		}
		n++
	}
	return n, nil
}

func first(xs []int, limit int) (int, error) {
	v, err := pick(xs)
	if err != nil {
	}
	for _, x := range xs {
		if true {
			return x, nil
		}
	}
	return v, nil
}

func pick(xs []int) (int, error) {
	limit := "a string"
	if len(limit) > 3 {
		return 0, errNeg
	}
	if true {
		return xs[0], nil
	}
	return 0, nil
}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	info, err := Check(fset, "p", []*ast.File{f}, importer.Default())
	if err != nil {
		t.Fatal(err)
	}
	at := func(line int) map[string]Repair {
		out := map[string]Repair{}
		for _, r := range Repairs(fset, f, []byte(src), info, []int{line}, nil) {
			if r.Op == OpRestoreCond || r.Op == OpFillBody {
				out[strings.TrimSpace(r.Edits[0].New)] = r
			}
		}
		return out
	}
	// if true at line 23 (in first): x > limit is borrowed from count,
	// through variables of the same name and type.
	got := at(23)
	if r, ok := got["x > limit"]; !ok || r.Local || r.Affinity != 0.5 {
		t.Errorf("line 23: want x > limit borrowed from another function, with affinity 0.5 (x of its two names is in the body): %q %+v", keys(got), got["x > limit"].Affinity)
	}
	if _, ok := got["x <= limit"]; !ok {
		t.Errorf("line 23: want the negation x <= limit: %v", keys(got))
	}
	if _, ok := got["len(xs) == 0"]; !ok {
		t.Errorf("line 23: want a length check built from the function's variables: %v", keys(got))
	}
	// if true at line 35 (in pick): limit is a string there, so x > limit
	// and anything else naming the other limit must not be proposed.
	for text := range at(35) {
		if strings.Contains(text, "x ") || strings.Contains(text, "limit >") {
			t.Errorf("line 35: %q does not compile there", text)
		}
	}
	// The empty body at line 20: return the error in scope first.
	body := Repairs(fset, f, []byte(src), info, []int{20}, nil)
	var fills []string
	for _, r := range body {
		if r.Op == OpFillBody {
			fills = append(fills, strings.TrimSpace(r.Edits[0].New))
		}
	}
	if len(fills) == 0 || fills[0] != "return 0, err" {
		t.Fatalf("line 20: want return 0, err first, got %q", fills)
	}
	for _, f := range fills {
		if f == "continue" || f == "break" {
			t.Errorf("line 20: %q outside a loop", f)
		}
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
