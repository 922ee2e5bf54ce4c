package mutate

import (
	"go/ast"
	"go/token"
	"go/types"
	"sort"
	"strings"
)

// Repairs that borrow code. A condition forced to true or false and an if
// body emptied leave a mark no correct code tends to have (if true {, an
// empty block), but not what was there. What was there is often code the
// same file already holds: the condition is tested elsewhere, or the body
// is another if's one statement. These templates propose, at such marks,
// the file's conditions and one-statement bodies that would compile there
// (every name they use means the same object at the mark), nil and length
// checks of the variables the body uses, and the returns, breaks and
// continues that fit the place.
const (
	OpRestoreCond = "restore-cond" // if true/false -> a condition borrowed or built
	OpFillBody    = "fill-body"    // if c {} -> if c { a statement borrowed or built }
)

// Caps on the candidates of one mark: enough to hold the usual fix, few
// enough not to swamp the list a policy chooses from.
const (
	maxBorrowed = 8
	maxBuilt    = 6
	maxNegated  = 4
)

// ingredient is a condition or a one-statement if body of the file.
type ingredient struct {
	node ast.Node
	text string
	fn   ast.Node // the innermost function (FuncDecl or FuncLit) holding it
	line int
}

// ingredients collects the file's if and for conditions (but literal
// ones), its if bodies of one statement and its returns.
func (w *walker) ingredients() (conds, stmts []ingredient) {
	var stack []ast.Node
	add := func(list *[]ingredient, n ast.Node) {
		*list = append(*list, ingredient{node: n, text: w.text(n), fn: innermostFunc(stack), line: w.tf.Line(n.Pos())})
	}
	ast.Inspect(w.file, func(n ast.Node) bool {
		if n == nil {
			stack = stack[:len(stack)-1]
			return false
		}
		stack = append(stack, n)
		switch x := n.(type) {
		case *ast.IfStmt:
			if !isBoolLiteral(x.Cond) {
				add(&conds, x.Cond)
			}
			if len(x.Body.List) == 1 && borrowable(x.Body.List[0]) {
				add(&stmts, x.Body.List[0])
			}
		case *ast.ReturnStmt:
			if _, inBlock := stack[len(stack)-2].(*ast.BlockStmt); inBlock && !oneStmtIfBody(stack) {
				add(&stmts, x)
			}
		case *ast.ForStmt:
			if x.Cond != nil {
				add(&conds, x.Cond)
			}
		}
		return true
	})
	return conds, stmts
}

// oneStmtIfBody reports whether the top of stack is the one statement of
// an if body (collected as such already).
func oneStmtIfBody(stack []ast.Node) bool {
	if len(stack) < 3 {
		return false
	}
	b, ok := stack[len(stack)-2].(*ast.BlockStmt)
	is, ok2 := stack[len(stack)-3].(*ast.IfStmt)
	return ok && ok2 && is.Body == b && len(b.List) == 1
}

func isBoolLiteral(e ast.Expr) bool {
	id, ok := e.(*ast.Ident)
	return ok && (id.Name == "true" || id.Name == "false")
}

// borrowable reports whether s is a statement that may be copied whole: it
// declares nothing and names no label.
func borrowable(s ast.Stmt) bool {
	switch x := s.(type) {
	case *ast.ReturnStmt, *ast.ExprStmt, *ast.IncDecStmt, *ast.SendStmt:
		return true
	case *ast.AssignStmt:
		return x.Tok != token.DEFINE
	case *ast.BranchStmt:
		return x.Label == nil && (x.Tok == token.BREAK || x.Tok == token.CONTINUE)
	}
	return false
}

// innermostFunc is the innermost function (FuncDecl or FuncLit) on stack.
func innermostFunc(stack []ast.Node) ast.Node {
	for i := len(stack) - 1; i >= 0; i-- {
		switch stack[i].(type) {
		case *ast.FuncDecl, *ast.FuncLit:
			return stack[i]
		}
	}
	return nil
}

// inLoop reports whether the walk is inside a loop of the innermost
// function (for continue), or also a switch or select (for break).
func (w *walker) inLoop(orSwitch bool) bool {
	for i := len(w.stack) - 1; i >= 0; i-- {
		switch w.stack[i].(type) {
		case *ast.FuncDecl, *ast.FuncLit:
			return false
		case *ast.ForStmt, *ast.RangeStmt:
			return true
		case *ast.SwitchStmt, *ast.TypeSwitchStmt, *ast.SelectStmt:
			if orSwitch {
				return true
			}
		}
	}
	return false
}

// fits reports whether code n, copied to position at of the function
// atFn, would mean the same there: every name it uses resolves at at to
// the object it names where it is (or, for a variable, to one of the same
// name and type), returns stay in their function, and branches find a
// loop. It needs type information.
func (w *walker) fits(n ast.Node, from ast.Node, at token.Pos, atFn ast.Node) bool {
	scope := w.scopeAt(at)
	if scope == nil {
		return false
	}
	ok := true
	var visit func(n ast.Node) bool
	visit = func(n ast.Node) bool {
		if !ok {
			return false
		}
		switch x := n.(type) {
		case *ast.FuncLit, *ast.CompositeLit, *ast.LabeledStmt:
			ok = false
		case *ast.ReturnStmt:
			ok = from == atFn
		case *ast.BranchStmt:
			ok = x.Label == nil && w.inLoop(x.Tok == token.BREAK)
		case *ast.SelectorExpr:
			ast.Inspect(x.X, visit)
			return false
		case *ast.Ident:
			if x.Name == "_" {
				return false
			}
			obj := w.info.Uses[x]
			if obj == nil {
				ok = w.info.Defs[x] == nil
				return false
			}
			_, got := scope.LookupParent(x.Name, at)
			ok = got == obj || sameVar(got, obj) || samePackage(got, obj)
		}
		return ok
	}
	ast.Inspect(n, visit)
	return ok
}

// scopeAt is the innermost scope holding position at (nil without type
// information).
func (w *walker) scopeAt(at token.Pos) *types.Scope {
	if w.info == nil || w.info.Scopes[w.file] == nil {
		return nil
	}
	return w.info.Scopes[w.file].Innermost(at)
}

// sameVar reports whether a and b are local variables (or parameters) of
// identical types: the same name in another function, such as a receiver,
// means the same there.
func sameVar(a, b types.Object) bool {
	va, ok1 := a.(*types.Var)
	vb, ok2 := b.(*types.Var)
	return ok1 && ok2 && !va.IsField() && !vb.IsField() && types.Identical(va.Type(), vb.Type())
}

// samePackage reports whether a and b are imports of one package (by
// two files, each its own PkgName).
func samePackage(a, b types.Object) bool {
	pa, ok1 := a.(*types.PkgName)
	pb, ok2 := b.(*types.PkgName)
	return ok1 && ok2 && pa.Imported() == pb.Imported()
}

// names collects the names of the objects the identifiers in n use, but
// the universe's and fields and methods reached through a selector. (Names,
// not objects: borrowed code names the variables of its own function.)
func (w *walker) names(n ast.Node) map[string]bool {
	out := map[string]bool{}
	if w.info == nil || n == nil {
		return out
	}
	eachName(n, func(id *ast.Ident) {
		if obj := w.info.Uses[id]; obj != nil && obj.Parent() != types.Universe {
			out[obj.Name()] = true
		}
	})
	return out
}

// eachName calls f on the identifiers of n but the fields and methods
// reached through a selector (x.f calls f on x alone).
func eachName(n ast.Node, f func(*ast.Ident)) {
	var visit func(n ast.Node) bool
	visit = func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.SelectorExpr:
			ast.Inspect(x.X, visit)
			return false
		case *ast.Ident:
			f(x)
		}
		return true
	}
	ast.Inspect(n, visit)
}

// affinity is the share of the objects code uses that its context uses
// too (0 when it uses none).
func affinity(code, context map[string]bool) float64 {
	if len(code) == 0 {
		return 0
	}
	shared := 0
	for o := range code {
		if context[o] {
			shared++
		}
	}
	return float64(shared) / float64(len(code))
}

// nearest orders ingredients for a mark at line of function fn: those of
// the same function first, then by distance in lines, then by place.
func nearest(list []ingredient, fn ast.Node, line int) []ingredient {
	out := append([]ingredient(nil), list...)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if (a.fn == fn) != (b.fn == fn) {
			return a.fn == fn
		}
		da, db := abs(a.line-line), abs(b.line-line)
		if da != db {
			return da < db
		}
		return a.line < b.line
	})
	return out
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// borrowed records what a borrowing candidate was made from, for the
// features: the share of its names the context uses, and whether it comes
// from the same function.
func (w *walker) borrowed(aff float64, local bool) {
	s := &w.sites[len(w.sites)-1]
	s.affinity, s.local = aff, local
}

// restoreCond proposes conditions for an if whose condition is the
// literal true or false: the file's conditions that fit (same function
// and nearest first), nil and length checks of the variables it most
// likely tests (condVars), and the negations and mirrors of the nearest
// borrowed conditions.
func (w *walker) restoreCond(x *ast.IfStmt, conds []ingredient) {
	fn := innermostFunc(w.stack)
	at := x.Cond.Pos()
	line := w.tf.Line(at)
	context := w.names(x.Body)
	for k, v := range w.names(x.Else) {
		context[k] = v
	}
	sep := ""
	if x.Cond.End() == x.Body.Lbrace {
		sep = " "
	}
	seen := map[string]bool{w.text(x.Cond): true}
	propose := func(text string, aff float64, local bool) {
		if seen[text] {
			return
		}
		seen[text] = true
		w.replaceNode(OpRestoreCond, Idiom, x.Cond, x.Cond, text+sep)
		w.borrowed(aff, local)
	}
	type borrowedCond struct {
		ingredient
		aff float64
	}
	var used []borrowedCond
	for _, in := range nearest(conds, fn, line) {
		if len(used) == maxBorrowed {
			break
		}
		if seen[in.text] || !w.fits(in.node, in.fn, at, fn) {
			continue
		}
		used = append(used, borrowedCond{in, affinity(w.names(in.node), context)})
		propose(in.text, used[len(used)-1].aff, in.fn == fn)
	}
	built := 0
	for _, v := range w.condVars(x, at) {
		for _, c := range checksOf(v) {
			if built < maxBuilt && !seen[c] {
				built++
				propose(c, 1, true)
			}
		}
	}
	for i, in := range used {
		if i == maxNegated {
			break
		}
		if e, ok := in.node.(ast.Expr); ok {
			propose(w.negation(e), in.aff, in.fn == fn)
			if m := w.mirror(e); m != "" {
				propose(m, in.aff, in.fn == fn)
			}
		}
	}
}

// condVars lists the variables a condition of x most likely tests, in
// scope at at: those its init statement or the statement before it
// assigns, then those its body uses, then the function's parameters.
func (w *walker) condVars(x *ast.IfStmt, at token.Pos) []*types.Var {
	var nodes []ast.Node
	if x.Init != nil {
		nodes = append(nodes, x.Init)
	}
	var list []ast.Stmt
	switch p := w.parent(0).(type) {
	case *ast.BlockStmt:
		list = p.List
	case *ast.CaseClause:
		list = p.Body
	case *ast.CommClause:
		list = p.Body
	}
	for i, s := range list {
		if s == x {
			if i > 0 {
				if as, ok := list[i-1].(*ast.AssignStmt); ok {
					for _, l := range as.Lhs {
						nodes = append(nodes, l)
					}
				}
			}
			break
		}
	}
	nodes = append(nodes, x.Body)
	if fd, ok := innermostFunc(w.stack).(*ast.FuncDecl); ok {
		if fd.Recv != nil {
			nodes = append(nodes, fd.Recv)
		}
		nodes = append(nodes, fd.Type.Params)
	}
	return w.varsIn(nodes, at)
}

// varsIn lists the local variables and parameters that nodes use or
// declare and that are in scope at at, in order of first appearance.
func (w *walker) varsIn(nodes []ast.Node, at token.Pos) []*types.Var {
	scope := w.scopeAt(at)
	if scope == nil {
		return nil
	}
	var out []*types.Var
	seen := map[types.Object]bool{}
	for _, n := range nodes {
		eachName(n, func(id *ast.Ident) {
			obj := w.info.Uses[id]
			if obj == nil {
				obj = w.info.Defs[id]
			}
			v, ok := obj.(*types.Var)
			if !ok || v.IsField() || seen[v] || v.Pkg() == nil || v.Parent() == v.Pkg().Scope() {
				return
			}
			seen[v] = true
			if _, got := scope.LookupParent(id.Name, at); got == v {
				out = append(out, v)
			}
		})
	}
	return out
}

// checksOf builds the checks a condition on v most often is: against nil
// for what can be nil, on its length for what has one.
func checksOf(v *types.Var) []string {
	n := v.Name()
	switch u := v.Type().Underlying().(type) {
	case *types.Pointer, *types.Interface, *types.Chan, *types.Signature:
		if types.Identical(v.Type(), types.Universe.Lookup("error").Type()) {
			return []string{n + " != nil", n + " == nil"}
		}
		return []string{n + " == nil", n + " != nil"}
	case *types.Slice, *types.Map:
		return []string{"len(" + n + ") == 0", n + " == nil", "len(" + n + ") > 0"}
	case *types.Basic:
		if u.Info()&types.IsString != 0 {
			return []string{n + ` == ""`, n + ` != ""`}
		}
	}
	return nil
}

var negatedOps = map[token.Token]string{
	token.EQL: "!=", token.NEQ: "==", token.LSS: ">=", token.GEQ: "<", token.GTR: "<=", token.LEQ: ">",
}

var mirroredOps = map[token.Token]string{
	token.LSS: ">", token.GTR: "<", token.LEQ: ">=", token.GEQ: "<=",
}

// mirror is e with its order comparison turned the other way (a < b to
// a > b), as the other half of symmetric code has it; "" for other
// expressions.
func (w *walker) mirror(e ast.Expr) string {
	if x, ok := e.(*ast.BinaryExpr); ok {
		if op, ok := mirroredOps[x.Op]; ok {
			return w.text(x.X) + " " + op + " " + w.text(x.Y)
		}
	}
	return ""
}

// negation is the text of !e, written as a person would.
func (w *walker) negation(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.BinaryExpr:
		if op, ok := negatedOps[x.Op]; ok {
			return w.text(x.X) + " " + op + " " + w.text(x.Y)
		}
	case *ast.UnaryExpr:
		if x.Op == token.NOT {
			return w.text(x.X)
		}
	case *ast.Ident, *ast.CallExpr, *ast.SelectorExpr, *ast.IndexExpr:
		return "!" + w.text(e)
	}
	return "!(" + w.text(e) + ")"
}

// zeroReturn is the zero value of every result of res (none for a
// function without results); ok is false when one has no zero it can write.
func (w *walker) zeroReturn(res *ast.FieldList) (zeros []string, ok bool) {
	if res == nil || res.NumFields() == 0 {
		return nil, true
	}
	z, ok := w.zeroResults(res) // all but the last
	if !ok {
		return nil, false
	}
	last, ok := w.zero(res.List[len(res.List)-1].Type)
	return append(z, last), ok
}

// fillBody proposes one statement for an if body left empty: the error
// returned when one is in scope, the file's one-statement if bodies that
// fit (same function and nearest first), break and continue in a loop,
// and the zero return.
func (w *walker) fillBody(x *ast.IfStmt, stmts []ingredient) {
	fn := innermostFunc(w.stack)
	at := x.Body.Lbrace + 1
	line := w.tf.Line(at)
	context := w.names(x.Cond)
	indent := w.indentOf(x.Pos())
	lo, hi := w.off(x.Body.Lbrace)+1, w.off(x.Body.Rbrace)
	seen := map[string]bool{}
	propose := func(text string, aff float64, local bool) {
		if seen[text] {
			return
		}
		seen[text] = true
		w.add(OpFillBody, Idiom, x.Body, "if body: "+text,
			Edit{Offset: lo, Old: string(w.src[lo:hi]), New: "\n" + indent + "\t" + text + "\n" + indent})
		w.borrowed(aff, local)
	}
	res := w.enclosingResults()
	zeros, zerosOK := w.zeroReturn(res)
	if zerosOK && len(zeros) > 0 && w.lastIsError(res) {
		for i, name := range w.errorsInScope(x.Body.Lbrace) {
			if i == 2 {
				break
			}
			ret := append(append([]string(nil), zeros[:len(zeros)-1]...), name)
			aff := 0.0
			if context[name] {
				aff = 1
			}
			propose("return "+strings.Join(ret, ", "), aff, true)
		}
	}
	n := 0
	for _, in := range nearest(stmts, fn, line) {
		if n == maxBorrowed {
			break
		}
		if seen[in.text] || !w.fits(in.node, in.fn, at, fn) {
			continue
		}
		n++
		propose(in.text, affinity(w.names(in.node), context), in.fn == fn)
	}
	if w.inLoop(false) {
		propose("continue", 0, true)
	}
	if w.inLoop(true) {
		propose("break", 0, true)
	}
	if zerosOK {
		propose(strings.TrimSpace("return "+strings.Join(zeros, ", ")), 0, true)
	}
}
