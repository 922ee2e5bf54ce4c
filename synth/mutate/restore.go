package mutate

import (
	"go/ast"
	"go/token"
	"maps"
	"math"
	"sort"
	"strings"
)

// Repairs that bring a removed statement back. A removed statement (a
// call, an assignment, an increment, a send, a defer) leaves no mark: the
// lines around the hole are what fault localisation ranks. restore-stmt
// inserts, between the statements at a suspicious line and at the start
// or end of a block that opens or closes there, a statement the package
// already holds elsewhere: of the same function, of the same file, of its
// other files. Only statements that would mean the same at the insertion
// point are proposed (every name they use resolves there to the object it
// names where it is, or to a variable of the same name and type: fits),
// each text once a position, and at most a few a position and a line.
const OpRestoreStmt = "restore-stmt" // a statement borrowed back between two statements

// Caps on restore-stmt: candidates a position and a suspicious line, and
// the ingredients examined for one position (the nearest and the best
// matching first), so that a list and its schema build stay affordable.
const (
	maxRestorePos   = 4
	maxRestoreLine  = 6
	maxRestoreTried = 400
	// maxRestoreText leaves out statements longer than this (bytes).
	maxRestoreText = 160
)

// Origins of a borrowed statement, nearest first.
const (
	OriginFunc    = "func"    // the function of the insertion point
	OriginFile    = "file"    // another function of its file
	OriginPackage = "package" // another file of its package
)

// Places of an insertion point in its statement list.
const (
	PlaceStart   = "start"   // before a list's first statement
	PlaceEnd     = "end"     // after its last
	PlaceBetween = "between" // between two statements
)

// Peer is another file of the package being repaired, whose statements
// restore-stmt may borrow. Its AST must come from the same FileSet and
// type-checked package as the repaired file.
type Peer struct {
	File *ast.File
	Src  []byte
}

// stmtIngredient is a statement of the package a removal could have taken:
// its text, where it is, and the texts of its neighbours in its list.
type stmtIngredient struct {
	ingredient
	file       *ast.File
	prev, next string
}

// restorable reports whether s is of a kind remove-stmt or drop-defer
// deletes and may be copied whole: a call (but panic and exits), a send,
// an assignment that declares nothing, an increment, a deferred call.
func restorable(s ast.Stmt) bool {
	switch x := s.(type) {
	case *ast.ExprStmt:
		call, ok := x.X.(*ast.CallExpr)
		return ok && !isPanic(call)
	case *ast.SendStmt, *ast.IncDecStmt, *ast.DeferStmt:
		return true
	case *ast.AssignStmt:
		return x.Tok != token.DEFINE
	}
	return false
}

// stmtLists calls f on every statement list of file's function bodies
// (blocks, case and comm clauses) with the innermost function holding it.
func stmtLists(file *ast.File, f func(list []ast.Stmt, owner ast.Node, fn ast.Node)) {
	var stack []ast.Node
	ast.Inspect(file, func(n ast.Node) bool {
		if n == nil {
			stack = stack[:len(stack)-1]
			return false
		}
		stack = append(stack, n)
		switch x := n.(type) {
		case *ast.BlockStmt:
			if fn := innermostFunc(stack); fn != nil {
				f(x.List, x, fn)
			}
		case *ast.CaseClause:
			f(x.Body, x, innermostFunc(stack))
		case *ast.CommClause:
			f(x.Body, x, innermostFunc(stack))
		}
		return true
	})
}

// stmtIngredients collects the restorable statements of file and peers
// (file's first), with their neighbours' texts.
func stmtIngredients(fset *token.FileSet, file *ast.File, src []byte, peers []Peer) []stmtIngredient {
	var out []stmtIngredient
	files := append([]Peer{{File: file, Src: src}}, peers...)
	for _, p := range files {
		tf := fset.File(p.File.Pos())
		if tf == nil || tf.Size() != len(p.Src) {
			continue
		}
		text := func(n ast.Node) string {
			if n == nil {
				return ""
			}
			return string(p.Src[tf.Offset(n.Pos()):tf.Offset(n.End())])
		}
		stmtLists(p.File, func(list []ast.Stmt, _ ast.Node, fn ast.Node) {
			for i, s := range list {
				if !restorable(s) {
					continue
				}
				t := text(s)
				if len(t) > maxRestoreText {
					continue
				}
				in := stmtIngredient{ingredient: ingredient{node: s, text: t, fn: fn, line: tf.Line(s.Pos())}, file: p.File}
				if i > 0 {
					in.prev = text(list[i-1])
				}
				if i+1 < len(list) {
					in.next = text(list[i+1])
				}
				out = append(out, in)
			}
		})
	}
	return out
}

// insertion is a place a removed statement may have stood: New text goes
// at byte offset off (a line's start) with indent; names there resolve as
// at scope; prev and next are the statements around it (nil at an end).
type insertion struct {
	off        int
	indent     string
	scope      token.Pos
	prev, next ast.Stmt
	fn         ast.Node
	line       int // the suspicious line it was found at
}

func (in insertion) place() string {
	switch {
	case in.prev == nil:
		return PlaceStart
	case in.next == nil:
		return PlaceEnd
	}
	return PlaceBetween
}

// lineStart is the offset of the start of p's line when only blanks
// precede p on it.
func (w *walker) lineStart(p token.Pos) (int, bool) {
	o := w.off(p)
	ls := o
	for ls > 0 && (w.src[ls-1] == ' ' || w.src[ls-1] == '\t') {
		ls--
	}
	return ls, ls == 0 || w.src[ls-1] == '\n'
}

// nextLine is the offset just past the end of p's line when only blanks or
// a line comment follow p on it.
func (w *walker) nextLine(p token.Pos) (int, bool) {
	o := w.off(p)
	i := o
	for i < len(w.src) && (w.src[i] == ' ' || w.src[i] == '\t') {
		i++
	}
	if strings.HasPrefix(string(w.src[i:min(i+2, len(w.src))]), "//") {
		for i < len(w.src) && w.src[i] != '\n' {
			i++
		}
	}
	if i < len(w.src) && w.src[i] == '\n' {
		return i + 1, true
	}
	return 0, false
}

// stops reports whether nothing after s in its list can run: a return, a
// branch, a panic.
func stops(s ast.Stmt) bool {
	switch x := s.(type) {
	case *ast.ReturnStmt, *ast.BranchStmt:
		return true
	case *ast.ExprStmt:
		call, ok := x.X.(*ast.CallExpr)
		return ok && isPanic(call)
	}
	return false
}

// insertions lists the places around line of the file's function bodies:
// before a statement that starts there, after one that ends there, at the
// start of a block whose { ends the line and at the end of one whose }
// starts it; one per offset, in source order. Nothing goes after a
// statement that stops, nor after the last statement of a function with
// results (which must end in a terminating statement).
func (w *walker) insertions(line int) []insertion {
	var out []insertion
	seen := map[int]bool{}
	add := func(in insertion, ok bool) {
		if ok && !seen[in.off] {
			seen[in.off] = true
			in.line = line
			out = append(out, in)
		}
	}
	stmtLists(w.file, func(list []ast.Stmt, owner ast.Node, fn ast.Node) {
		var open, close token.Pos // the block's braces, or the clause's colon
		switch o := owner.(type) {
		case *ast.BlockStmt:
			open, close = o.Lbrace, o.Rbrace
		case *ast.CaseClause:
			open = o.Colon
		case *ast.CommClause:
			open = o.Colon
		}
		results := false
		if fd, ok := fn.(*ast.FuncDecl); ok && fd.Body == owner {
			results = fd.Type.Results.NumFields() > 0
		} else if fl, ok := fn.(*ast.FuncLit); ok && fl.Body == owner {
			results = fl.Type.Results.NumFields() > 0
		}
		at := func(i int) ast.Stmt {
			if i < 0 || i >= len(list) {
				return nil
			}
			return list[i]
		}
		if w.tf.Line(open) == line {
			off, ok := w.nextLine(open + 1)
			indent := w.indentOf(open) + "\t"
			if len(list) > 0 {
				indent = w.indentOf(list[0].Pos())
			}
			add(insertion{off: off, indent: indent, scope: open + 1, next: at(0), fn: fn}, ok && (len(list) > 0 || !results))
		}
		for i, s := range list {
			if w.tf.Line(s.Pos()) == line {
				off, ok := w.lineStart(s.Pos())
				add(insertion{off: off, indent: w.indentOf(s.Pos()), scope: s.Pos(), prev: at(i - 1), next: s, fn: fn}, ok)
			}
			last := i == len(list)-1
			if w.tf.Line(s.End()) == line && !stops(s) && !(last && results) {
				off, ok := w.nextLine(s.End())
				add(insertion{off: off, indent: w.indentOf(s.Pos()), scope: s.End(), prev: s, next: at(i + 1), fn: fn}, ok)
			}
		}
		if close.IsValid() && w.tf.Line(close) == line && !results && (len(list) == 0 || !stops(list[len(list)-1])) {
			off, ok := w.lineStart(close)
			add(insertion{off: off, indent: w.indentOf(close) + "\t", scope: close, prev: at(len(list) - 1), fn: fn}, ok)
		}
	})
	sort.SliceStable(out, func(i, j int) bool { return out[i].off < out[j].off })
	return out
}

// restoreStmts adds, at the insertion points of each line of lines, the
// package's statements that fit there, best first (restoreRank); each text
// once a point, at most maxRestorePos a point and maxRestoreLine a line. A
// point two lines share (after one, before the next) is served once.
func (w *walker) restoreStmts(fset *token.FileSet, lines []int, peers []Peer) {
	if w.info == nil || len(lines) == 0 {
		return
	}
	groups := groupIngredients(stmtIngredients(fset, w.file, w.src, peers))
	if len(groups) == 0 {
		return
	}
	for _, g := range groups {
		g.names = w.names(g.occ[0].node)
	}
	done, served := map[int]bool{}, map[int]bool{}
	for _, l := range lines {
		if done[l] {
			continue
		}
		done[l] = true
		n := 0
		for _, at := range w.insertions(l) {
			if n >= maxRestoreLine {
				break
			}
			if served[at.off] {
				continue
			}
			served[at.off] = true
			n += w.restoreAt(at, groups, min(maxRestorePos, maxRestoreLine-n))
		}
	}
}

// stmtGroup is one statement text of the package and where it stands.
type stmtGroup struct {
	text  string
	occ   []stmtIngredient
	names map[string]bool
}

// groupIngredients groups ingredients by text, in order of first
// appearance.
func groupIngredients(ins []stmtIngredient) []*stmtGroup {
	var out []*stmtGroup
	by := map[string]*stmtGroup{}
	for _, in := range ins {
		g := by[in.text]
		if g == nil {
			g = &stmtGroup{text: in.text}
			by[in.text] = g
			out = append(out, g)
		}
		g.occ = append(g.occ, in)
	}
	return out
}

// restoreCand is one statement text considered at one point.
type restoreCand struct {
	g       *stmtGroup
	origin  string
	similar float64
	aff     float64
	repeat  bool
	score   float64
}

// restoreRank scores statement g at point at: code written twice around
// the same neighbours counts most, then the nearest origin, the share of
// its names the neighbours use (in the same function, the nearer the
// better) and how often the package writes it; a copy of a neighbour
// counts least.
func (w *walker) restoreRank(at insertion, g *stmtGroup, prev, next string, context map[string]bool) restoreCand {
	c := restoreCand{g: g, origin: OriginPackage}
	dist := 50
	for _, in := range g.occ {
		switch {
		case in.fn == at.fn:
			c.origin = OriginFunc
			dist = min(dist, abs(in.line-at.line))
		case in.file == w.file && c.origin == OriginPackage:
			c.origin = OriginFile
		}
		sim := 0.0
		if prev != "" && in.prev == prev {
			sim += 0.5
		}
		if next != "" && in.next == next {
			sim += 0.5
		}
		c.similar = max(c.similar, sim)
	}
	c.aff = affinity(g.names, context)
	c.repeat = g.text == prev || g.text == next
	c.score = 4*c.similar + c.aff + 0.25*math.Log2(float64(len(g.occ)))
	switch c.origin {
	case OriginFunc:
		c.score += 1.5 - float64(dist)/100
	case OriginFile:
		c.score += 0.5
	}
	if c.repeat {
		c.score -= 3
	}
	return c
}

// restoreAt proposes at most max statements that fit at point at, best
// ranked first, and returns how many it proposed.
func (w *walker) restoreAt(at insertion, groups []*stmtGroup, max int) int {
	context := map[string]bool{}
	var prev, next string
	if at.prev != nil {
		prev = w.text(at.prev)
		maps.Copy(context, w.names(at.prev))
	}
	if at.next != nil {
		next = w.text(at.next)
		maps.Copy(context, w.names(at.next))
	}
	cands := make([]restoreCand, len(groups))
	for i, g := range groups {
		cands[i] = w.restoreRank(at, g, prev, next, context)
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].score > cands[j].score })
	var fnName string
	var cx int
	for _, d := range w.file.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil && fd.Pos() <= at.scope && at.scope <= fd.End() {
			fnName, cx = funcName(fd), complexity(fd.Body)
		}
	}
	n := 0
	for tried, c := range cands {
		if n == max || tried == maxRestoreTried {
			break
		}
		if !w.fitsSomewhere(c.g, at) {
			continue
		}
		w.sites = append(w.sites, Site{Op: OpRestoreStmt, Family: Idiom, Filename: w.tf.Name(),
			Line: at.line, EndLine: at.line, Func: fnName, Complexity: cx,
			Desc: "restore " + oneLine(c.g.text) + " (" + at.place() + ")", src: w.src,
			Edits:    []Edit{{Offset: at.off, New: at.indent + c.g.text + "\n"}},
			affinity: c.aff, local: c.origin == OriginFunc,
			restore: &Restore{Origin: c.origin, Place: at.place(), Similar: c.similar, Repeat: c.repeat, Count: len(c.g.occ)}})
		n++
	}
	return n
}

// fitsSomewhere reports whether one of the first few places g's text
// stands would mean the same at point at.
func (w *walker) fitsSomewhere(g *stmtGroup, at insertion) bool {
	for i, in := range g.occ {
		if i == 4 {
			break
		}
		if w.fits(in.node, in.fn, at.scope, at.fn) {
			return true
		}
	}
	return false
}

// Restore describes a restore-stmt candidate for the features: where the
// statement comes from (Origin*: the nearest place it stands), where it
// goes (Place*), the share of the insertion point's two neighbours it has
// where it stands (0, 0.5 or 1), whether it repeats a neighbour of the
// insertion point, and how many times the package writes it.
type Restore struct {
	Origin  string
	Place   string
	Similar float64
	Repeat  bool
	Count   int
}

// oneLine is s on one line, shortened, for a description.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return s
}
