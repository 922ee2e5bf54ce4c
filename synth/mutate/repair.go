package mutate

import (
	"go/ast"
	"go/token"
	"go/types"
	"strconv"
	"strings"
)

// Repair templates. A repair is a mutation of code believed buggy: the
// token flips are their own inverses (< becomes <= and <= becomes <), so
// the operators that change code rather than delete it, applied to the
// buggy code, propose its fixes; a few templates undo what no operator
// inverts (an error replaced by nil, a guard dropped, a bound shifted).
// What a deletion removed cannot be proposed without knowing what it was;
// the templates of borrow.go and restore.go propose code the package
// already holds elsewhere at the marks and holes deletions leave, and the
// candidate-space ceiling measures how many such bugs stay outside.
const (
	OpRestoreErr   = "restore-err"   // return ..., nil -> return ..., err
	OpAddErrGuard  = "add-err-guard" // v, err := f() then if err != nil { return ..., err }
	OpRestoreBound = "restore-bound" // s[i+1:j] -> s[i:j], s[i:j-1] -> s[i:j]
	OpNegateCond   = "negate-cond"   // if c -> if !(c)
)

// Repair is one candidate repair: a Site (its edits apply to the code as
// it is) with the family and statement kind a repair policy tells apart.
type Repair struct {
	Site
	// Kind is the template's family: token, guard, return, bounds, args,
	// stmt or other.
	Kind string
	// Context is the kind of statement the edit is in: if, for, return,
	// assign, expr, switch, decl or other.
	Context string
	// Affinity is, for a repair that borrows or builds code (restore-cond,
	// fill-body), the share of the names it uses that the code around
	// the mark uses too (the if's body for a condition, its condition for
	// a body); Local says the borrowed code comes from the same function.
	Affinity float64
	Local    bool
	// Restore describes a restore-stmt repair (nil for the others): where
	// the statement comes from and where it goes.
	Restore *Restore
}

// repairKinds maps operators to repair families.
var repairKinds = map[string]string{
	OpCompareBoundary: "token", OpCompareNegate: "token", OpArithmetic: "token", OpIncDec: "token",
	OpLogical: "token", OpIntLiteral: "token", OpBoolLiteral: "token", OpUnaryMinus: "token",
	OpSwapArgs: "args", OpBreakContinue: "stmt", OpSliceBound: "bounds", OpRestoreBound: "bounds",
	OpNilError: "return", OpRestoreErr: "return", OpAddErrGuard: "guard", OpNegateCond: "guard",
	OpRestoreCond: "guard", OpFillBody: "stmt", OpRestoreStmt: "stmt",
}

// Restoring turns the restore-stmt templates on: they borrow from the file
// and from Peers (the package's other files). Repairs leaves them out when
// it is nil.
type Restoring struct{ Peers []Peer }

// Repairs lists the candidate repairs of file whose edits touch one of
// lines (1-based line numbers of file), in line order (the order of lines
// given), then in the operators' order at each line. Deleting operators are
// left out: a deletion repairs nothing an injected bug did. info may be
// nil; then the type-dependent templates are skipped. peers are the
// package's other files (info covering them too), whose statements
// restore-stmt may borrow as well as file's own.
func Repairs(fset *token.FileSet, file *ast.File, src []byte, info *types.Info, lines []int, restore *Restoring) []Repair {
	tf := fset.File(file.Pos())
	if tf == nil || tf.Size() != len(src) || len(lines) == 0 {
		return nil
	}
	want := map[int]int{} // line -> its place in lines
	for i, l := range lines {
		if _, ok := want[l]; !ok {
			want[l] = i
		}
	}
	touches := func(s Site) (int, bool) {
		best, ok := 0, false
		for l := s.Line; l <= s.EndLine; l++ {
			if i, hit := want[l]; hit && (!ok || i < best) {
				best, ok = i, true
			}
		}
		return best, ok
	}
	w := &walker{tf: tf, file: file, src: src, info: info}
	w.index()
	w.conds, w.stmts = w.ingredients()
	for _, d := range file.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		w.fnName = funcName(fd)
		w.cx = complexity(fd.Body)
		w.stack = w.stack[:0]
		ast.Inspect(fd, w.visit)
		w.stack = w.stack[:0]
		ast.Inspect(fd, w.visitRepair)
	}
	if restore != nil {
		w.restoreStmts(fset, lines, restore.Peers)
	}
	// One candidate per distinct edit, at the place of its first line.
	byLine := make([][]Repair, len(lines))
	seen := map[string]bool{}
	for _, s := range w.sites {
		kind, ok := repairKinds[s.Op]
		if !ok {
			continue // a deletion
		}
		i, hit := touches(s)
		if !hit {
			continue
		}
		key := editsKey(s.Edits)
		if seen[key] {
			continue
		}
		if _, _, err := s.Apply(); err != nil {
			continue // does not parse
		}
		seen[key] = true
		byLine[i] = append(byLine[i], Repair{Site: s, Kind: kind, Context: contextAt(file, tf, s.Edits[0].Offset),
			Affinity: s.affinity, Local: s.local, Restore: s.restore})
	}
	var out []Repair
	for _, rs := range byLine {
		out = append(out, rs...)
	}
	return out
}

func editsKey(es []Edit) string {
	var b strings.Builder
	for _, e := range sortedEdits(es) {
		b.WriteString(e.Old)
		b.WriteByte(0)
		b.WriteString(e.New)
		b.WriteByte(0)
		b.WriteString(strconv.Itoa(e.Offset))
	}
	return b.String()
}

// visitRepair adds the repair-only templates.
func (w *walker) visitRepair(n ast.Node) bool {
	if n == nil {
		w.stack = w.stack[:len(w.stack)-1]
		return false
	}
	w.stack = append(w.stack, n)
	switch x := n.(type) {
	case *ast.ReturnStmt:
		w.restoreErr(x)
	case *ast.BlockStmt:
		w.addErrGuards(x)
	case *ast.SliceExpr:
		for _, b := range []ast.Expr{x.Low, x.High} {
			if be, ok := b.(*ast.BinaryExpr); ok && (be.Op == token.ADD || be.Op == token.SUB) && isOne(be.Y) {
				w.replaceNode(OpRestoreBound, Idiom, be, be, w.text(be.X))
			}
		}
	case *ast.IfStmt:
		if _, ok := x.Cond.(*ast.UnaryExpr); !ok {
			w.replaceNode(OpNegateCond, Idiom, x.Cond, x.Cond, "!("+w.text(x.Cond)+")")
		}
		if w.info != nil && isBoolLiteral(x.Cond) {
			w.restoreCond(x, w.conds)
		}
		if w.info != nil && len(x.Body.List) == 0 {
			w.fillBody(x, w.stmts)
		}
	}
	return true
}

func isOne(e ast.Expr) bool {
	l, ok := e.(*ast.BasicLit)
	return ok && l.Kind == token.INT && l.Value == "1"
}

// errorsInScope names the variables of type error visible at pos,
// innermost first, package-level ones (sentinel errors) last, at most six;
// without type information, err when the function mentions it before pos.
func (w *walker) errorsInScope(pos token.Pos) []string {
	errType := types.Universe.Lookup("error").Type()
	if w.info != nil {
		var sc *types.Scope
		for i := len(w.stack) - 1; i >= 0 && sc == nil; i-- {
			n := w.stack[i]
			if fd, ok := n.(*ast.FuncDecl); ok {
				sc = w.info.Scopes[fd.Type]
			} else {
				sc = w.info.Scopes[n]
			}
		}
		var out []string
		seen := map[string]bool{}
		for ; sc != nil && sc != types.Universe && len(out) < 6; sc = sc.Parent() {
			for _, name := range sc.Names() {
				v, ok := sc.Lookup(name).(*types.Var)
				if !ok || seen[name] || name == "_" || !types.Identical(v.Type(), errType) {
					continue
				}
				if v.Parent() != v.Pkg().Scope() && v.Pos() > pos {
					continue // declared later in its block
				}
				seen[name] = true
				out = append(out, name)
			}
		}
		return out[:min(len(out), 6)]
	}
	for _, n := range w.stack {
		if fd, ok := n.(*ast.FuncDecl); ok {
			found := false
			ast.Inspect(fd, func(m ast.Node) bool {
				if id, ok := m.(*ast.Ident); ok && id.Name == "err" && id.Pos() < pos {
					found = true
				}
				return !found
			})
			if found {
				return []string{"err"}
			}
		}
	}
	return nil
}

// restoreErr proposes each error variable in scope for a nil error result.
func (w *walker) restoreErr(x *ast.ReturnStmt) {
	res := w.enclosingResults()
	if res == nil || len(x.Results) == 0 || len(x.Results) != res.NumFields() {
		return
	}
	last := x.Results[len(x.Results)-1]
	if !isNil(last) || !w.lastIsError(res) {
		return
	}
	for _, name := range w.errorsInScope(x.Pos()) {
		w.replaceNode(OpRestoreErr, Idiom, x, last, name)
	}
}

func (w *walker) lastIsError(res *ast.FieldList) bool {
	f := res.List[len(res.List)-1]
	if w.info != nil {
		t := w.typeOf(f.Type)
		return t != nil && types.Identical(t, types.Universe.Lookup("error").Type())
	}
	id, ok := f.Type.(*ast.Ident)
	return ok && id.Name == "error"
}

// addErrGuards proposes, after each statement of b that assigns err and is
// not followed by a check of it, the guard `if err != nil { return …, err }`.
func (w *walker) addErrGuards(b *ast.BlockStmt) {
	res := w.enclosingResults()
	if res == nil || res.NumFields() == 0 || !w.lastIsError(res) {
		return
	}
	zeros, ok := w.zeroResults(res)
	if !ok {
		return
	}
	for i, s := range b.List {
		as, ok := s.(*ast.AssignStmt)
		if !ok || !assignsErr(as) {
			continue
		}
		if i+1 < len(b.List) && checksErr(b.List[i+1]) {
			continue
		}
		indent := w.indentOf(as.Pos())
		ret := append(zeros, "err")
		guard := "\n" + indent + "if err != nil {\n" + indent + "\treturn " + strings.Join(ret, ", ") + "\n" + indent + "}"
		w.add(OpAddErrGuard, Idiom, as, "error check added", Edit{Offset: w.off(as.End()), New: guard})
	}
}

func assignsErr(as *ast.AssignStmt) bool {
	for _, l := range as.Lhs {
		if id, ok := l.(*ast.Ident); ok && id.Name == "err" {
			return true
		}
	}
	return false
}

func checksErr(s ast.Stmt) bool {
	is, ok := s.(*ast.IfStmt)
	if !ok {
		return false
	}
	c, ok := is.Cond.(*ast.BinaryExpr)
	if !ok {
		return false
	}
	id, ok := c.X.(*ast.Ident)
	return ok && id.Name == "err"
}

// zeroResults is the zero value of every result but the last (the error).
func (w *walker) zeroResults(res *ast.FieldList) ([]string, bool) {
	var types []ast.Expr
	for _, f := range res.List {
		for range max(len(f.Names), 1) {
			types = append(types, f.Type)
		}
	}
	out := make([]string, 0, len(types)-1)
	for _, t := range types[:len(types)-1] {
		z, ok := w.zero(t)
		if !ok {
			return nil, false
		}
		out = append(out, z)
	}
	return out, true
}

// zero is the source text of the zero value of type expression t.
func (w *walker) zero(t ast.Expr) (string, bool) {
	if w.info != nil {
		if typ := w.typeOf(t); typ != nil {
			switch u := typ.Underlying().(type) {
			case *types.Basic:
				switch {
				case u.Info()&types.IsNumeric != 0:
					return "0", true
				case u.Info()&types.IsString != 0:
					return `""`, true
				case u.Info()&types.IsBoolean != 0:
					return "false", true
				}
				return "nil", true
			case *types.Pointer, *types.Slice, *types.Map, *types.Chan, *types.Signature, *types.Interface:
				return "nil", true
			case *types.Struct, *types.Array:
				return w.text(t) + "{}", true
			}
			if _, ok := typ.(*types.TypeParam); ok {
				return "*new(" + w.text(t) + ")", true
			}
		}
	}
	switch x := t.(type) {
	case *ast.StarExpr, *ast.ArrayType, *ast.MapType, *ast.ChanType, *ast.FuncType, *ast.InterfaceType:
		if a, ok := x.(*ast.ArrayType); ok && a.Len != nil {
			return w.text(t) + "{}", true
		}
		return "nil", true
	case *ast.Ident:
		switch {
		case x.Name == "string":
			return `""`, true
		case x.Name == "bool":
			return "false", true
		case x.Name == "error" || x.Name == "any":
			return "nil", true
		case strings.HasPrefix(x.Name, "int") || strings.HasPrefix(x.Name, "uint") || strings.HasPrefix(x.Name, "float") ||
			x.Name == "byte" || x.Name == "rune" || x.Name == "uintptr" || strings.HasPrefix(x.Name, "complex"):
			return "0", true
		}
	}
	return "", false
}

// contextAt is the kind of the innermost statement holding offset off.
func contextAt(file *ast.File, tf *token.File, off int) string {
	ctx := "other"
	p := tf.Pos(off)
	ast.Inspect(file, func(n ast.Node) bool {
		if n == nil || n.Pos() > p || p >= n.End() {
			return n == nil
		}
		switch n.(type) {
		case *ast.IfStmt:
			ctx = "if"
		case *ast.ForStmt, *ast.RangeStmt:
			ctx = "for"
		case *ast.ReturnStmt:
			ctx = "return"
		case *ast.AssignStmt, *ast.IncDecStmt:
			ctx = "assign"
		case *ast.ExprStmt, *ast.SendStmt, *ast.GoStmt, *ast.DeferStmt:
			ctx = "expr"
		case *ast.SwitchStmt, *ast.TypeSwitchStmt, *ast.CaseClause, *ast.SelectStmt:
			ctx = "switch"
		case *ast.DeclStmt:
			ctx = "decl"
		case *ast.BlockStmt:
			// A block resets to its own statements: keep descending.
		}
		return true
	})
	return ctx
}
