package mutate

import (
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"strconv"
	"strings"
)

type walker struct {
	tf   *token.File
	file *ast.File
	src  []byte
	info *types.Info

	// uses lists, for each local variable or imported package, the
	// positions of its uses in the file.
	uses map[types.Object][]token.Pos
	// params holds the declarations of parameters and results, which may
	// go unused.
	params map[token.Pos]bool

	fnName string
	cx     int
	stack  []ast.Node
	sites  []Site

	// conds and stmts are the file's conditions and one-statement if
	// bodies, which repairs may borrow (Repairs only).
	conds, stmts []ingredient
}

func (w *walker) index() {
	w.uses = map[types.Object][]token.Pos{}
	w.params = map[token.Pos]bool{}
	ast.Inspect(w.file, func(n ast.Node) bool {
		if ft, ok := n.(*ast.FuncType); ok {
			for _, fl := range []*ast.FieldList{ft.Params, ft.Results} {
				if fl == nil {
					continue
				}
				for _, f := range fl.List {
					for _, nm := range f.Names {
						w.params[nm.Pos()] = true
					}
				}
			}
		}
		return true
	})
	if w.info == nil {
		return
	}
	for id, obj := range w.info.Uses {
		if w.tracked(obj) {
			w.uses[obj] = append(w.uses[obj], id.Pos())
		}
	}
}

// tracked reports whether obj is an import or a local variable: the objects
// the compiler insists are used.
func (w *walker) tracked(obj types.Object) bool {
	switch o := obj.(type) {
	case *types.PkgName:
		return true
	case *types.Var:
		if o.IsField() || o.Parent() == nil || o.Pkg() == nil || o.Parent() == o.Pkg().Scope() {
			return false
		}
		return !w.params[o.Pos()]
	}
	return false
}

func (w *walker) off(p token.Pos) int { return w.tf.Offset(p) }

func (w *walker) text(n ast.Node) string {
	return string(w.src[w.off(n.Pos()):w.off(n.End())])
}

func (w *walker) parent(i int) ast.Node {
	if len(w.stack) < i+2 {
		return nil
	}
	return w.stack[len(w.stack)-2-i]
}

func (w *walker) visit(n ast.Node) bool {
	if n == nil {
		w.stack = w.stack[:len(w.stack)-1]
		return false
	}
	w.stack = append(w.stack, n)
	switch x := n.(type) {
	case *ast.BinaryExpr:
		w.binary(x)
	case *ast.IncDecStmt:
		flip := map[token.Token]string{token.INC: "--", token.DEC: "++"}
		w.replaceAt(OpIncDec, TokenFlip, x, x.TokPos, x.Tok.String(), flip[x.Tok])
		w.removeStmt(x)
	case *ast.BasicLit:
		w.intLit(x)
	case *ast.Ident:
		w.boolLit(x)
	case *ast.UnaryExpr:
		if x.Op == token.SUB && !w.inCaseList() && !w.constOverflowRisk(x) {
			w.replaceAt(OpUnaryMinus, TokenFlip, x, x.OpPos, "-", "")
		}
	case *ast.ExprStmt:
		if call, ok := x.X.(*ast.CallExpr); ok && !isPanic(call) {
			w.removeStmt(x)
		}
	case *ast.SendStmt:
		w.removeStmt(x)
	case *ast.AssignStmt:
		w.assign(x)
	case *ast.IfStmt:
		w.ifStmt(x)
	case *ast.BranchStmt:
		w.branch(x)
	case *ast.ReturnStmt:
		w.nilError(x)
	case *ast.SliceExpr:
		w.sliceBound(x)
	case *ast.CallExpr:
		w.swapArgs(x)
	case *ast.DeferStmt:
		if w.safeToDrop([]ast.Node{x}, x.Pos(), x.End()) {
			w.addRemoval(OpDropDefer, Idiom, x, "defer dropped")
		}
	}
	return true
}

func (w *walker) add(op string, fam Family, n ast.Node, desc string, edits ...Edit) {
	w.sites = append(w.sites, Site{
		Op: op, Family: fam, Filename: w.tf.Name(),
		Line: w.tf.Line(n.Pos()), EndLine: w.tf.Line(n.End()),
		Func: w.fnName, Complexity: w.cx, Desc: desc, Edits: edits, src: w.src,
	})
}

func (w *walker) replaceAt(op string, fam Family, n ast.Node, p token.Pos, old, new string) {
	o := w.off(p)
	if string(w.src[o:o+len(old)]) != old {
		return
	}
	desc := old + " -> " + new
	if new == "" {
		desc = old + " removed"
	}
	w.add(op, fam, n, desc, Edit{Offset: o, Old: old, New: new})
}

func (w *walker) replaceNode(op string, fam Family, site, n ast.Node, new string) {
	old := w.text(n)
	w.add(op, fam, site, old+" -> "+new, Edit{Offset: w.off(n.Pos()), Old: old, New: new})
}

func (w *walker) typeOf(e ast.Expr) types.Type {
	if w.info == nil {
		return nil
	}
	if tv, ok := w.info.Types[e]; ok {
		return tv.Type
	}
	return nil
}

func (w *walker) constValue(e ast.Expr) constant.Value {
	if w.info == nil {
		return nil
	}
	return w.info.Types[e].Value
}

func isNumeric(t types.Type) bool {
	if t == nil {
		return false
	}
	b, ok := t.Underlying().(*types.Basic)
	return ok && b.Info()&types.IsNumeric != 0
}

var binaryFlips = map[token.Token]struct {
	to string
	op string
}{
	token.LSS:  {"<=", OpCompareBoundary},
	token.LEQ:  {"<", OpCompareBoundary},
	token.GTR:  {">=", OpCompareBoundary},
	token.GEQ:  {">", OpCompareBoundary},
	token.EQL:  {"!=", OpCompareNegate},
	token.NEQ:  {"==", OpCompareNegate},
	token.ADD:  {"-", OpArithmetic},
	token.SUB:  {"+", OpArithmetic},
	token.MUL:  {"/", OpArithmetic},
	token.QUO:  {"*", OpArithmetic},
	token.LAND: {"||", OpLogical},
	token.LOR:  {"&&", OpLogical},
}

func (w *walker) binary(x *ast.BinaryExpr) {
	f, ok := binaryFlips[x.Op]
	if !ok || w.constValue(x) != nil {
		// Constant expressions may be array lengths or case values.
		return
	}
	switch x.Op {
	case token.ADD, token.MUL:
		if !isNumeric(w.typeOf(x)) {
			return
		}
		if x.Op == token.MUL {
			if v := w.constValue(x.Y); v != nil && constant.Sign(v) == 0 {
				return
			}
		}
	}
	fam := TokenFlip
	w.replaceAt(f.op, fam, x, x.OpPos, x.Op.String(), f.to)
}

func (w *walker) inCaseList() bool {
	for i := 0; ; i++ {
		p := w.parent(i)
		switch p.(type) {
		case nil, ast.Stmt:
			return false
		case *ast.CaseClause:
			return true
		}
	}
}

// constOverflowRisk reports whether x is a constant of a sized type, which a
// flip might push out of range.
func (w *walker) constOverflowRisk(x ast.Expr) bool {
	if w.constValue(x) == nil {
		return false
	}
	b, ok := w.typeOf(x).(*types.Basic)
	if !ok {
		return true
	}
	switch b.Kind() {
	case types.Int8, types.Int16, types.Uint8, types.Uint16, types.Int32, types.Uint32:
		return true
	}
	return false
}

func (w *walker) intLit(x *ast.BasicLit) {
	if x.Kind != token.INT || w.inCaseList() || w.constOverflowRisk(x) {
		return
	}
	switch p := w.parent(0).(type) {
	case *ast.ArrayType, *ast.KeyValueExpr, *ast.IndexExpr, *ast.SliceExpr:
		// Array lengths, keys and constant indices are checked at compile
		// time; a shifted one often is not valid.
		return
	case *ast.UnaryExpr:
		if p.Op == token.SUB {
			return
		}
	}
	v, err := strconv.ParseInt(strings.ReplaceAll(x.Value, "_", ""), 0, 64)
	if err != nil {
		return
	}
	if b, ok := w.typeOf(x).(*types.Basic); ok && b.Info()&types.IsUnsigned != 0 && v == 0 {
		w.replaceNode(OpIntLiteral, TokenFlip, x, x, "1")
		return
	}
	if b, ok := w.typeOf(x).(*types.Basic); ok && b.Info()&types.IsFloat != 0 {
		return
	}
	w.replaceNode(OpIntLiteral, TokenFlip, x, x, strconv.FormatInt(v+1, 10))
	if v != 0 {
		w.replaceNode(OpIntLiteral, TokenFlip, x, x, strconv.FormatInt(v-1, 10))
	}
}

func (w *walker) boolLit(x *ast.Ident) {
	if x.Name != "true" && x.Name != "false" || w.inCaseList() {
		return
	}
	if w.info != nil && w.info.Uses[x] != types.Universe.Lookup(x.Name) {
		return
	}
	if _, ok := w.parent(0).(*ast.IfStmt); ok {
		return // a forced condition, not a literal worth flipping
	}
	to := map[string]string{"true": "false", "false": "true"}[x.Name]
	w.replaceNode(OpBoolLiteral, TokenFlip, x, x, to)
}

func isPanic(call *ast.CallExpr) bool {
	switch f := call.Fun.(type) {
	case *ast.Ident:
		return f.Name == "panic"
	case *ast.SelectorExpr:
		pkg, ok := f.X.(*ast.Ident)
		return ok && (pkg.Name == "os" && f.Sel.Name == "Exit" || pkg.Name == "log" && strings.HasPrefix(f.Sel.Name, "Fatal"))
	}
	return false
}

// inBlock reports whether statement s sits directly in a statement list.
func (w *walker) inBlock() bool {
	switch w.parent(0).(type) {
	case *ast.BlockStmt, *ast.CaseClause, *ast.CommClause:
		return true
	}
	return false
}

func (w *walker) removeStmt(s ast.Stmt) {
	if !w.inBlock() || !w.safeToDrop([]ast.Node{s}, s.Pos(), s.End()) {
		return
	}
	w.addRemoval(OpRemoveStmt, Structural, s, "statement removed")
}

// addRemoval deletes n, with its whole lines when it stands alone on them.
func (w *walker) addRemoval(op string, fam Family, n ast.Node, desc string) {
	start, end := w.off(n.Pos()), w.off(n.End())
	ls := start
	for ls > 0 && (w.src[ls-1] == ' ' || w.src[ls-1] == '\t') {
		ls--
	}
	le := end
	for le < len(w.src) && (w.src[le] == ' ' || w.src[le] == '\t') {
		le++
	}
	if (ls == 0 || w.src[ls-1] == '\n') && le < len(w.src) && w.src[le] == '\n' {
		start, end = ls, le+1
	}
	w.add(op, fam, n, desc, Edit{Offset: start, Old: string(w.src[start:end]), New: ""})
}

// safeToDrop reports whether deleting the nodes removed (within the mutated
// span [lo, hi)) leaves every import and local variable declared outside the
// span still used, and no label orphaned. Without type information it says
// yes only for code that uses no identifiers of those kinds, which it cannot
// know, so it says no.
func (w *walker) safeToDrop(removed []ast.Node, lo, hi token.Pos) bool {
	if w.info == nil {
		return false
	}
	ok := true
	inRemoved := func(p token.Pos) bool {
		for _, r := range removed {
			if r.Pos() <= p && p < r.End() {
				return true
			}
		}
		return false
	}
	for _, r := range removed {
		ast.Inspect(r, func(n ast.Node) bool {
			if !ok {
				return false
			}
			switch x := n.(type) {
			case *ast.LabeledStmt:
				ok = false
			case *ast.BranchStmt:
				if x.Label != nil {
					ok = false
				}
			case *ast.Ident:
				obj := w.info.Uses[x]
				if obj == nil || !w.tracked(obj) {
					return true
				}
				if lo <= obj.Pos() && obj.Pos() < hi {
					return true // declared in the span: goes with it
				}
				if _, isPkg := obj.(*types.PkgName); !isPkg && obj.Pos() == token.NoPos {
					return true
				}
				left := false
				for _, u := range w.uses[obj] {
					if !inRemoved(u) {
						left = true
						break
					}
				}
				if !left {
					ok = false
				}
			}
			return ok
		})
	}
	return ok
}

var assignOps = map[token.Token]bool{
	token.ADD_ASSIGN: true, token.SUB_ASSIGN: true, token.MUL_ASSIGN: true,
	token.QUO_ASSIGN: true, token.REM_ASSIGN: true, token.AND_ASSIGN: true,
	token.OR_ASSIGN: true, token.XOR_ASSIGN: true, token.AND_NOT_ASSIGN: true,
}

func (w *walker) assign(x *ast.AssignStmt) {
	if x.Tok == token.DEFINE {
		return
	}
	if assignOps[x.Tok] {
		w.replaceAt(OpAssignOp, Structural, x, x.TokPos, x.Tok.String(), "=")
	}
	w.removeStmt(x)
}

func (w *walker) ifStmt(x *ast.IfStmt) {
	// Forced conditions.
	if id, ok := x.Cond.(*ast.Ident); !ok || (id.Name != "true" && id.Name != "false") {
		if w.safeToDrop([]ast.Node{x.Cond}, x.Pos(), x.Body.Pos()) {
			sep := "" // keep "true{" from reading as a composite literal
			if x.Cond.End() == x.Body.Lbrace {
				sep = " "
			}
			w.replaceNode(OpCondTrue, Structural, x, x.Cond, "true"+sep)
			w.replaceNode(OpCondFalse, Structural, x, x.Cond, "false"+sep)
		}
	}
	// Empty body, unless the if statement is terminating.
	if len(x.Body.List) > 0 && !(x.Else != nil && terminates(x.Body)) {
		if w.safeToDrop([]ast.Node{x.Body}, x.Body.Pos(), x.Body.End()) {
			lo, hi := w.off(x.Body.Lbrace)+1, w.off(x.Body.Rbrace)
			w.add(OpEmptyBody, Structural, x, "if body emptied",
				Edit{Offset: lo, Old: string(w.src[lo:hi]), New: "\n" + w.indentOf(x.Pos())})
		}
	}
	w.errGuard(x)
}

func (w *walker) indentOf(p token.Pos) string {
	o := w.off(p)
	ls := o
	for ls > 0 && w.src[ls-1] != '\n' {
		ls--
	}
	i := ls
	for i < o && (w.src[i] == ' ' || w.src[i] == '\t') {
		i++
	}
	return string(w.src[ls:i])
}

// terminates approximates the spec's terminating statements for a block.
func terminates(b *ast.BlockStmt) bool {
	if len(b.List) == 0 {
		return false
	}
	switch s := b.List[len(b.List)-1].(type) {
	case *ast.ReturnStmt:
		return true
	case *ast.BranchStmt:
		return s.Tok == token.GOTO
	case *ast.ExprStmt:
		if call, ok := s.X.(*ast.CallExpr); ok {
			return isPanic(call)
		}
	case *ast.BlockStmt:
		return terminates(s)
	case *ast.IfStmt, *ast.ForStmt, *ast.SwitchStmt, *ast.TypeSwitchStmt, *ast.SelectStmt:
		return true // conservatively: may terminate
	}
	return false
}

func (w *walker) branch(x *ast.BranchStmt) {
	if x.Label != nil || (x.Tok != token.BREAK && x.Tok != token.CONTINUE) {
		return
	}
	for i := 0; ; i++ {
		switch w.parent(i).(type) {
		case nil, *ast.FuncLit:
			return
		case *ast.ForStmt, *ast.RangeStmt:
			to := map[token.Token]string{token.BREAK: "continue", token.CONTINUE: "break"}[x.Tok]
			w.replaceAt(OpBreakContinue, Structural, x, x.TokPos, x.Tok.String(), to)
			return
		}
	}
}

func (w *walker) isError(e ast.Expr) bool {
	if w.info == nil {
		id, ok := e.(*ast.Ident)
		return ok && id.Name == "err"
	}
	t := w.typeOf(e)
	return t != nil && types.Identical(t, types.Universe.Lookup("error").Type())
}

func isNil(e ast.Expr) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == "nil"
}

func (w *walker) errGuard(x *ast.IfStmt) {
	if x.Else != nil || !w.inBlock() {
		return
	}
	c, ok := x.Cond.(*ast.BinaryExpr)
	if !ok || c.Op != token.NEQ || !isNil(c.Y) || !w.isError(c.X) {
		return
	}
	if x.Init == nil {
		if w.safeToDrop([]ast.Node{x}, x.Pos(), x.End()) {
			w.addRemoval(OpDropErrGuard, Idiom, x, "error check dropped")
		}
		return
	}
	// if err := f(); err != nil { ... }  ->  f()
	as, ok := x.Init.(*ast.AssignStmt)
	if !ok || as.Tok != token.DEFINE || len(as.Lhs) != 1 || len(as.Rhs) != 1 {
		return
	}
	call, ok := as.Rhs[0].(*ast.CallExpr)
	if !ok {
		return
	}
	if w.safeToDrop([]ast.Node{x.Cond, x.Body}, x.Pos(), x.End()) {
		old := w.text(x)
		w.add(OpDropErrGuard, Idiom, x, "error check dropped",
			Edit{Offset: w.off(x.Pos()), Old: old, New: w.text(call)})
	}
}

// enclosingResults returns the result list of the innermost function.
func (w *walker) enclosingResults() *ast.FieldList {
	for i := 0; ; i++ {
		switch f := w.parent(i).(type) {
		case nil:
			return nil
		case *ast.FuncLit:
			return f.Type.Results
		case *ast.FuncDecl:
			return f.Type.Results
		}
	}
}

func (w *walker) nilError(x *ast.ReturnStmt) {
	res := w.enclosingResults()
	if res == nil || len(x.Results) == 0 || len(x.Results) != res.NumFields() {
		return
	}
	last := x.Results[len(x.Results)-1]
	if isNil(last) || !w.isError(last) {
		return
	}
	if w.safeToDrop([]ast.Node{last}, last.Pos(), last.End()) {
		w.replaceNode(OpNilError, Idiom, x, last, "nil")
	}
}

func (w *walker) sliceBound(x *ast.SliceExpr) {
	if w.info == nil || x.Slice3 {
		return
	}
	isArray := false
	if t := w.typeOf(x.X); t != nil {
		u := t.Underlying()
		if p, ok := u.(*types.Pointer); ok {
			u = p.Elem().Underlying()
		}
		_, isArray = u.(*types.Array)
		if b, ok := u.(*types.Basic); ok && w.constValue(x.X) != nil && b.Info()&types.IsString != 0 {
			isArray = true // constant strings have compile-time bounds too
		}
	}
	lowC, highC := x.Low != nil && w.constValue(x.Low) != nil, x.High != nil && w.constValue(x.High) != nil
	if x.Low != nil && !(lowC && (highC || isArray)) {
		if v := w.constValue(x.Low); v == nil || constant.Sign(v) >= 0 {
			w.add(OpSliceBound, Idiom, x, "low bound +1", Edit{Offset: w.off(x.Low.End()), New: "+1"})
		}
	}
	if x.High != nil && !(highC && (lowC || isArray)) {
		if v := w.constValue(x.High); v == nil || constant.Sign(v) > 0 {
			w.add(OpSliceBound, Idiom, x, "high bound -1", Edit{Offset: w.off(x.High.End()), New: "-1"})
		}
	}
}

func (w *walker) swapArgs(x *ast.CallExpr) {
	if w.info == nil || x.Ellipsis.IsValid() {
		return
	}
	if tv, ok := w.info.Types[x.Fun]; ok && tv.IsType() {
		return
	}
	for i := 0; i+1 < len(x.Args); i++ {
		a, b := x.Args[i], x.Args[i+1]
		ta, tb := w.typeOf(a), w.typeOf(b)
		if ta == nil || tb == nil || !types.Identical(ta, tb) {
			continue
		}
		if bt, ok := ta.(*types.Basic); ok && bt.Info()&types.IsUntyped != 0 {
			continue
		}
		at, btext := w.text(a), w.text(b)
		if at == btext {
			continue
		}
		between := string(w.src[w.off(a.End()):w.off(b.Pos())])
		old := at + between + btext
		w.add(OpSwapArgs, Idiom, x, "arguments "+at+" and "+btext+" swapped",
			Edit{Offset: w.off(a.Pos()), Old: old, New: btext + between + at})
	}
}
