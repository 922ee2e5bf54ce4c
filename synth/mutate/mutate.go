package mutate

import (
	"github.com/frognano/frog/env"

	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"sort"
)

// Family groups operators by how hard their bugs tend to be to find.
type Family int

// The families, in order of rising difficulty.
const (
	TokenFlip Family = iota + 1
	Structural
	Idiom
)

// String returns the family's stable name, as stored with tasks.
func (f Family) String() string {
	switch f {
	case TokenFlip:
		return "token"
	case Structural:
		return "structural"
	case Idiom:
		return "idiom"
	}
	return fmt.Sprintf("family(%d)", int(f))
}

// Operator names, as stored with tasks.
const (
	OpCompareBoundary = "compare-boundary" // < <-> <=, > <-> >=
	OpCompareNegate   = "compare-negate"   // == <-> !=
	OpArithmetic      = "arithmetic"       // + <-> -, * <-> /
	OpIncDec          = "incdec"           // ++ <-> --
	OpLogical         = "logical"          // && <-> ||
	OpIntLiteral      = "int-literal"      // n -> n+1, n-1
	OpBoolLiteral     = "bool-literal"     // true <-> false
	OpUnaryMinus      = "unary-minus"      // -x -> x

	OpRemoveStmt    = "remove-stmt"    // a call, assignment or ++/-- removed
	OpEmptyBody     = "empty-body"     // if body emptied
	OpCondTrue      = "cond-true"      // if condition forced true
	OpCondFalse     = "cond-false"     // if condition forced false
	OpAssignOp      = "assign-op"      // x op= y -> x = y
	OpBreakContinue = "break-continue" // break <-> continue

	OpDropErrGuard = "drop-err-guard" // if err != nil {...} removed
	OpNilError     = "nil-error"      // return ..., err -> return ..., nil
	OpSliceBound   = "slice-bound"    // s[i:j] -> s[i+1:j], s[i:j-1]
	OpSwapArgs     = "swap-args"      // f(a, b) -> f(b, a), same type
	OpDropDefer    = "drop-defer"     // defer f() removed
)

// Edit replaces the bytes Old found at Offset in the original source with
// New. Edits of one Site never overlap. (It is env.Edit: tasks store them.)
type Edit = env.Edit

// Site is one applicable mutation in one file.
type Site struct {
	// Op is the operator's name (the Op* constants) and Family its family.
	Op     string
	Family Family
	// Filename is the file's name as recorded in the token.FileSet; patches
	// use it as their path.
	Filename string
	// Line and EndLine bound the mutated code in the original file (1-based).
	Line    int
	EndLine int
	// Func names the enclosing function ("Name" or "Recv.Name") and
	// Complexity is its cyclomatic complexity.
	Func       string
	Complexity int
	// Desc says what changed, for people ("< -> <=").
	Desc string
	// Edits, applied to the original source, make the mutant.
	Edits []Edit

	src []byte
	// affinity and local describe a repair that borrows code (Repair's
	// fields of the same names).
	affinity float64
	local    bool
	// restore describes a restore-stmt repair (Repair.Restore).
	restore *Restore
}

// ParseFamily returns the family named name (Family.String's names).
func ParseFamily(name string) (Family, bool) {
	for _, f := range []Family{TokenFlip, Structural, Idiom} {
		if f.String() == name {
			return f, true
		}
	}
	return 0, false
}

// Apply returns the mutated source and the gold patch: a unified diff that
// turns the mutant back into the original. It fails if the edits do not
// match the source or if the mutant does not parse.
func (s Site) Apply() (mutated []byte, patch string, err error) {
	mutated, patch, err = Patch(s.Filename, s.src, s.Edits)
	if err != nil {
		return nil, "", fmt.Errorf("%s at %s:%d: %w", s.Op, s.Filename, s.Line, err)
	}
	return mutated, patch, nil
}

// Patch applies edits (of one or more sites, none overlapping) to src, the
// original content of the file filename, and returns the mutant and the
// gold patch that turns it back into src. It fails if the edits do not
// match src or overlap, or if the mutant does not parse.
func Patch(filename string, src []byte, edits []Edit) (mutated []byte, patch string, err error) {
	mutated, err = env.Splice(src, edits)
	if err != nil {
		return nil, "", fmt.Errorf("apply: %w", err)
	}
	if _, err := parser.ParseFile(token.NewFileSet(), filename, mutated, parser.SkipObjectResolution); err != nil {
		return nil, "", fmt.Errorf("mutant does not parse: %w", err)
	}
	return mutated, unified(filename, mutated, src, inverseRegions(edits)), nil
}

// Undo reverses edits on mutated, returning the original source. It is the
// exact inverse of applying edits.
func Undo(mutated []byte, edits []Edit) ([]byte, error) {
	inv := make([]Edit, len(edits))
	sorted := sortedEdits(edits)
	shift := 0
	for i, e := range sorted {
		inv[i] = Edit{Offset: e.Offset + shift, Old: e.New, New: e.Old}
		shift += len(e.New) - len(e.Old)
	}
	return env.Splice(mutated, inv)
}

func sortedEdits(edits []Edit) []Edit {
	s := append([]Edit(nil), edits...)
	sort.SliceStable(s, func(i, j int) bool { return s[i].Offset < s[j].Offset })
	return s
}

// inverseRegions maps edits (in original coordinates) to changed regions from
// the mutant (a) to the original (b).
func inverseRegions(edits []Edit) []region {
	var regs []region
	shift := 0
	for _, e := range sortedEdits(edits) {
		regs = append(regs, region{aOff: e.Offset + shift, aLen: len(e.New), bOff: e.Offset, bLen: len(e.Old)})
		shift += len(e.New) - len(e.Old)
	}
	return regs
}

// Sites returns every mutation site in file, in source order. src is the
// file's content and info, which may be nil, its package's type information.
// Only code inside function bodies is mutated.
func Sites(fset *token.FileSet, file *ast.File, src []byte, info *types.Info) []Site {
	tf := fset.File(file.Pos())
	if tf == nil || tf.Size() != len(src) {
		return nil
	}
	w := &walker{tf: tf, file: file, src: src, info: info}
	w.index()
	for _, d := range file.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		w.fnName = funcName(fd)
		w.cx = complexity(fd.Body)
		w.stack = w.stack[:0]
		ast.Inspect(fd, w.visit)
	}
	return w.sites
}

func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
			continue
		case *ast.IndexExpr:
			t = x.X
			continue
		case *ast.IndexListExpr:
			t = x.X
			continue
		case *ast.Ident:
			return x.Name + "." + fd.Name.Name
		}
		return fd.Name.Name
	}
}

// complexity is McCabe's cyclomatic complexity of a function body.
func complexity(body *ast.BlockStmt) int {
	c := 1
	ast.Inspect(body, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.IfStmt, *ast.ForStmt, *ast.RangeStmt:
			c++
		case *ast.CaseClause:
			if x.List != nil {
				c++
			}
		case *ast.CommClause:
			if x.Comm != nil {
				c++
			}
		case *ast.BinaryExpr:
			if x.Op == token.LAND || x.Op == token.LOR {
				c++
			}
		}
		return true
	})
	return c
}

// Check type-checks one package's files, best effort: it always returns the
// type information it could gather, and the first error, if any. Imports are
// resolved from compiled export data (the go command's build cache), so
// standard-library imports always work and imports of other packages work
// when the process runs inside their module.
func Check(fset *token.FileSet, path string, files []*ast.File, imp types.Importer) (*types.Info, error) {
	info := &types.Info{
		Types:  map[ast.Expr]types.TypeAndValue{},
		Defs:   map[*ast.Ident]types.Object{},
		Uses:   map[*ast.Ident]types.Object{},
		Scopes: map[ast.Node]*types.Scope{},
	}
	var first error
	conf := types.Config{Importer: imp, Error: func(err error) {
		if first == nil {
			first = err
		}
	}}
	_, _ = conf.Check(path, fset, files, info)
	return info, first
}
