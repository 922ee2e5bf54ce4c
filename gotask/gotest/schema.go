package gotest

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/frognano/frog/env"
)

// Mutant schemata. Building and linking a test binary per mutant costs a
// second or more; running one costs milliseconds. So a batch of mutants is
// compiled into one test binary, a "mutant schema" (Untch, Offutt and
// Harrold, 1993), at the level of functions: every function a mutant touches
// gets a mutated copy, and the original function starts with a switch on the
// mutant the binary was started for (the FROG_MUTANT environment variable):
//
//	func Sqrt(v int) (int, error) {switch frogMutant {case 3: return frogM3_Sqrt(v); case -1: return frogMid_Sqrt(v)};
//		... the original body ...
//	}
//	func frogM3_Sqrt(v int) (int, error) { ... the mutated body ... }
//
// FROG_MUTANT unset runs the original program; -1 runs identity copies of
// every touched function, which finds tests that notice the extra frame
// (runtime.Caller) and cannot judge these mutants. Copies are appended to
// their file with no line directives, so that compiler and vet messages
// name the copy they are about; failure output is mapped back to the mutant
// file's own lines (span.line). Multi-function mutants (k > 1) get one copy
// per function they touch, all under the same case.
//
// What the schema cannot see, it checks separately: an import that a
// mutant leaves unused (the original function still uses it) is found by
// counting uses.

// SchemaVar is the package-level variable the dispatch switches read.
const SchemaVar = "frogMutant"

// Identity is the mutant number of the identity copies.
const Identity = -1

// Package is the parsed non-test source of one package.
type Package struct {
	Dir   string // module-relative directory, slash-separated
	Name  string // package name
	Fset  *token.FileSet
	Files map[string]*File // by module-relative path
	Lines int              // non-test lines in the package
}

// File is one original file.
type File struct {
	Src  []byte
	AST  *ast.File
	Tok  *token.File
	Uses map[string]int // import name -> selector uses in the file
}

// ParsePackage parses the non-test Go files of the package in directory rel
// of the module rooted at dir.
func ParsePackage(dir, rel string) (*Package, error) {
	pdir := filepath.Join(dir, filepath.FromSlash(rel))
	entries, err := os.ReadDir(pdir)
	if err != nil {
		return nil, err
	}
	dirRel := strings.TrimPrefix(path.Clean(filepath.ToSlash(rel)), "./")
	ps := &Package{Dir: dirRel, Fset: token.NewFileSet(), Files: map[string]*File{}}
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		src, err := os.ReadFile(filepath.Join(pdir, n))
		if err != nil {
			return nil, err
		}
		r := path.Join(dirRel, n)
		f, err := parser.ParseFile(ps.Fset, r, src, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		if ps.Name == "" || ps.Name == "main" {
			ps.Name = f.Name.Name
		}
		ps.Files[r] = &File{Src: src, AST: f, Tok: ps.Fset.File(f.Pos()), Uses: ImportUses(f)}
		ps.Lines += bytes.Count(src, []byte("\n"))
	}
	if len(ps.Files) == 0 {
		return nil, fmt.Errorf("no Go files in %s", rel)
	}
	return ps, nil
}

// ImportUses counts, for each named or guessable import of f, the selector
// expressions that use it.
func ImportUses(f *ast.File) map[string]int {
	uses := map[string]int{}
	for _, im := range f.Imports {
		p, _ := strconv.Unquote(im.Path.Value)
		name := importName(p)
		if im.Name != nil {
			name = im.Name.Name
		}
		if name != "_" && name != "." && name != "" {
			uses[name] = 0
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		if s, ok := n.(*ast.SelectorExpr); ok {
			if x, ok := s.X.(*ast.Ident); ok && x.Obj == nil {
				if _, ok := uses[x.Name]; ok {
					uses[x.Name]++
				}
			}
		}
		return true
	})
	return uses
}

var majorSuffix = regexp.MustCompile(`^v[0-9]+$`)

// importName guesses the package name of an import path: its last element,
// skipping a major-version element and dropping a "go-" prefix and a ".vN"
// suffix. A wrong guess only hides a use count.
func importName(p string) string {
	elems := strings.Split(p, "/")
	last := elems[len(elems)-1]
	if majorSuffix.MatchString(last) && len(elems) > 1 {
		last = elems[len(elems)-2]
	}
	last = strings.TrimPrefix(last, "go-")
	if i := strings.Index(last, ".v"); i > 0 {
		last = last[:i]
	}
	return strings.ReplaceAll(last, "-", "")
}

// Check says why a mutant of files, whose edits of each file edits
// returns, cannot be a schema mutant of the package, or "": a file not in
// it, or an import its edits leave unused.
func (ps *Package) Check(files []string, edits func(file string) []env.Edit) string {
	for _, f := range files {
		sf := ps.Files[f]
		if sf == nil {
			return "file not in the package: " + f
		}
		if name := sf.unusedImport(edits(f)); name != "" {
			return "build: imported and not used: " + name
		}
	}
	return ""
}

// unusedImport names an import the mutation edits leave without uses, or "".
func (sf *File) unusedImport(edits []env.Edit) string {
	for name, n := range sf.Uses {
		if n == 0 {
			continue
		}
		after := n
		for _, e := range edits {
			after += countSelectors(e.New, name) - countSelectors(e.Old, name)
		}
		if after <= 0 {
			return name
		}
	}
	return ""
}

// countSelectors counts "name." at identifier boundaries in s.
func countSelectors(s, name string) int {
	n := 0
	for i := 0; ; {
		j := strings.Index(s[i:], name+".")
		if j < 0 {
			return n
		}
		j += i
		if j == 0 || !isIdentByte(s[j-1]) {
			n++
		}
		i = j + len(name) + 1
	}
}

func isIdentByte(b byte) bool {
	return b == '_' || b == '.' || '0' <= b && b <= '9' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || b >= 0x80
}

// funcAt returns the function declaration whose body holds offset off.
func (sf *File) funcAt(off int) *ast.FuncDecl {
	for _, d := range sf.AST.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		if sf.Tok.Offset(fd.Body.Lbrace) < off && off < sf.Tok.Offset(fd.Body.Rbrace) {
			return fd
		}
	}
	return nil
}

// sig is what a dispatch needs of a function's signature, and the edits
// that name its unnamed or blank receiver and parameters.
type sig struct {
	recv    string   // receiver name, "" for a function
	tparams []string // type parameter names of a function
	args    []string // parameter names, in order
	varargs bool
	results bool
	fix     []env.Edit
}

func (sf *File) signature(fd *ast.FuncDecl) (sig, error) {
	var s sig
	off := func(p token.Pos) int { return sf.Tok.Offset(p) }
	name := func(id *ast.Ident, as string) string {
		if id.Name == "_" {
			s.fix = append(s.fix, env.Edit{Offset: off(id.Pos()), Old: "_", New: as})
			return as
		}
		return id.Name
	}
	if fd.Recv != nil && len(fd.Recv.List) == 1 {
		f := fd.Recv.List[0]
		if len(f.Names) == 0 {
			s.recv = "frogRecv"
			s.fix = append(s.fix, env.Edit{Offset: off(f.Type.Pos()), New: "frogRecv "})
		} else {
			s.recv = name(f.Names[0], "frogRecv")
		}
	}
	if fd.Type.TypeParams != nil {
		for _, f := range fd.Type.TypeParams.List {
			for _, id := range f.Names {
				if id.Name == "_" {
					return s, fmt.Errorf("blank type parameter in %s", fd.Name.Name)
				}
				s.tparams = append(s.tparams, id.Name)
			}
		}
	}
	i := 0
	for _, f := range fd.Type.Params.List {
		if len(f.Names) == 0 {
			n := fmt.Sprintf("frogP%d", i)
			s.fix = append(s.fix, env.Edit{Offset: off(f.Type.Pos()), New: n + " "})
			s.args = append(s.args, n)
			i++
		}
		for _, id := range f.Names {
			s.args = append(s.args, name(id, fmt.Sprintf("frogP%d", i)))
			i++
		}
		if _, ok := f.Type.(*ast.Ellipsis); ok {
			s.varargs = true
		}
	}
	s.results = fd.Type.Results != nil && len(fd.Type.Results.List) > 0
	return s, nil
}

// copyName is the name of mutant id's copy of function fn; with fn "" it
// is the prefix that output and errors lose when mapped back.
func copyName(id int, fn string) string {
	if id == Identity {
		return "frogMid_" + fn
	}
	return fmt.Sprintf("frogM%d_%s", id, fn)
}

// call is the dispatch's call of copy id.
func (s sig) call(id int, fn string) string {
	var b strings.Builder
	if s.recv != "" {
		b.WriteString(s.recv + ".")
	}
	b.WriteString(copyName(id, fn))
	if len(s.tparams) > 0 {
		b.WriteString("[" + strings.Join(s.tparams, ", ") + "]")
	}
	b.WriteString("(" + strings.Join(s.args, ", "))
	if s.varargs {
		b.WriteString("...")
	}
	b.WriteString(")")
	if s.results {
		return "return " + b.String()
	}
	return b.String() + "; return"
}

// Mutant is one mutant of a schema: its number and its edits in one
// file, in the original file's offsets.
type Mutant struct {
	ID    int
	File  string
	Edits []env.Edit
}

// span is the raw lines [lo, hi] of a file of a schema that hold one copy
// of mutant id; line is the line of the copy's first line in the mutant's
// own file.
type span struct {
	file   string // base name
	lo, hi int
	id     int
	line   int
}

// Schema is the generated source of one batch.
type Schema struct {
	Files map[string][]byte // module-relative path -> content
	spans []span
}

// owner returns the mutant whose copy holds raw line `line` of file (a
// base name), or 0.
func (s *Schema) owner(file string, line int) int {
	for _, sp := range s.spans {
		if sp.file == file && sp.lo <= line && line <= sp.hi {
			return sp.id
		}
	}
	return 0
}

// schemaFileName is the file the schema adds to the package.
const schemaFileName = "frog_schema_gen.go"

// Build generates the schema of mutants. Mutants it cannot express (edits
// outside a callable function body) are returned in bad with the reason.
func (ps *Package) Build(mutants []Mutant) (*Schema, map[int]string) {
	bad := map[int]string{}
	perFile, order := ps.byFunction(mutants, bad)
	s := &Schema{Files: map[string][]byte{}}
	slices.Sort(order)
	for _, rel := range order {
		ps.buildFile(s, rel, perFile[rel], bad)
	}
	s.Files[path.Join(ps.Dir, schemaFileName)] = []byte(fmt.Sprintf(`// Code generated by frog (mutant schema). DO NOT EDIT.

package %s

import (
	frogos "os"
	frogstrconv "strconv"
)

var %s = func() int {
	n, _ := frogstrconv.Atoi(frogos.Getenv("FROG_MUTANT"))
	return n
}()
`, ps.Name, SchemaVar))
	return s, bad
}

// copyOf is one copy of a function in a schema: the mutant it is, its
// edits (inside the function), and the function's line in the mutant's
// own file.
type copyOf struct {
	id    int
	edits []env.Edit
	line  int
}

// fnState is a function of a schema: its signature and its copies.
type fnState struct {
	fd     *ast.FuncDecl
	sig    sig
	copies []copyOf
}

// byFunction groups the edits of mutants by the functions they touch, by
// file; order lists the files. A mutant it cannot express goes into bad.
func (ps *Package) byFunction(mutants []Mutant, bad map[int]string) (perFile map[string]map[*ast.FuncDecl]*fnState, order []string) {
	perFile = map[string]map[*ast.FuncDecl]*fnState{}
	for _, m := range mutants {
		sf := ps.Files[m.File]
		if sf == nil {
			bad[m.ID] = "file not in the package"
			continue
		}
		byFn := map[*ast.FuncDecl][]env.Edit{}
		var fns []*ast.FuncDecl
		ok := true
		for _, e := range m.Edits {
			fd := sf.funcAt(e.Offset)
			if fd == nil || fd.Recv == nil && fd.Name.Name == "init" || fd.Name.Name == "_" {
				ok = false
				break
			}
			if _, seen := byFn[fd]; !seen {
				fns = append(fns, fd)
			}
			byFn[fd] = append(byFn[fd], e)
		}
		if !ok {
			bad[m.ID] = "mutation outside a callable function body"
			continue
		}
		fnMap := perFile[m.File]
		if fnMap == nil {
			fnMap = map[*ast.FuncDecl]*fnState{}
			perFile[m.File] = fnMap
			order = append(order, m.File)
		}
		for _, fd := range fns {
			st := fnMap[fd]
			if st == nil {
				s, err := sf.signature(fd)
				if err != nil {
					bad[m.ID] = err.Error()
					ok = false
					break
				}
				st = &fnState{fd: fd, sig: s}
				fnMap[fd] = st
			}
		}
		if !ok {
			continue
		}
		for _, fd := range fns {
			start := sf.Tok.Offset(fd.Pos())
			shift := 0
			for _, e := range m.Edits {
				if e.Offset < start {
					shift += strings.Count(e.New, "\n") - strings.Count(e.Old, "\n")
				}
			}
			fnMap[fd].copies = append(fnMap[fd].copies, copyOf{id: m.ID, edits: byFn[fd], line: sf.Tok.Line(fd.Pos()) + shift})
		}
	}
	return perFile, order
}

// buildFile writes file rel of the schema into s: each function of fns
// made a dispatch switch over its copies, and the copies (the mutants' and
// the identity) after the file's own source. A copy it cannot write goes
// into bad.
func (ps *Package) buildFile(s *Schema, rel string, fns map[*ast.FuncDecl]*fnState, bad map[int]string) {
	sf := ps.Files[rel]
	var fds []*fnState
	for _, st := range fns {
		fds = append(fds, st)
	}
	slices.SortFunc(fds, func(a, b *fnState) int { return int(a.fd.Pos() - b.fd.Pos()) })
	var orig []env.Edit
	for _, st := range fds {
		fd := st.fd
		orig = append(orig, st.sig.fix...)
		var sw strings.Builder
		sw.WriteString("switch " + SchemaVar + " {")
		for _, c := range st.copies {
			fmt.Fprintf(&sw, "case %d: %s; ", c.id, st.sig.call(c.id, fd.Name.Name))
		}
		fmt.Fprintf(&sw, "case %d: %s", Identity, st.sig.call(Identity, fd.Name.Name))
		sw.WriteString("};")
		orig = append(orig, env.Edit{Offset: sf.Tok.Offset(fd.Body.Lbrace) + 1, New: sw.String()})
	}
	head, err := env.Splice(sf.Src, orig)
	if err != nil {
		for _, st := range fds {
			for _, c := range st.copies {
				bad[c.id] = "schema: " + err.Error()
			}
		}
		return
	}
	var tail bytes.Buffer
	line := bytes.Count(head, []byte("\n")) + 1 // the line the tail starts on
	base := path.Base(rel)
	for _, st := range fds {
		fd := st.fd
		start, end := sf.Tok.Offset(fd.Pos()), sf.Tok.Offset(fd.End())
		copies := append(slices.Clone(st.copies), copyOf{id: Identity, line: sf.Tok.Line(fd.Pos())})
		for _, c := range copies {
			edits := slices.Clone(st.sig.fix)
			edits = append(edits, env.Edit{Offset: sf.Tok.Offset(fd.Name.Pos()), Old: fd.Name.Name, New: copyName(c.id, fd.Name.Name)})
			edits = append(edits, c.edits...)
			for i := range edits {
				edits[i].Offset -= start
			}
			text, err := env.Splice(sf.Src[start:end], edits)
			if err != nil {
				bad[c.id] = "schema: " + err.Error()
				continue
			}
			tail.WriteString("\n\n")
			line += 2
			n := bytes.Count(text, []byte("\n"))
			if c.id != Identity {
				s.spans = append(s.spans, span{file: base, lo: line, hi: line + n, id: c.id, line: c.line})
			}
			tail.Write(text)
			line += n
		}
	}
	tail.WriteString("\n")
	s.Files[rel] = append(head, tail.Bytes()...)
}

var fileLine = regexp.MustCompile(`([A-Za-z0-9_.\-]+\.go):([0-9]+)`)

// MapOutput rewrites the test output of mutant id as if its own file had
// been compiled: lines of its copies become the mutant file's lines, and the
// copies' names their originals'.
func (s *Schema) MapOutput(id int, out string) string {
	out = fileLine.ReplaceAllStringFunc(out, func(m string) string {
		i := strings.LastIndexByte(m, ':')
		file, n := m[:i], m[i+1:]
		line, err := strconv.Atoi(n)
		if err != nil {
			return m
		}
		for _, sp := range s.spans {
			if sp.id == id && sp.file == file && sp.lo <= line && line <= sp.hi {
				return fmt.Sprintf("%s:%d", file, sp.line+line-sp.lo)
			}
		}
		return m
	})
	return strings.ReplaceAll(out, copyName(id, ""), "")
}

// SrcOrNil is sf's source, or nil for a nil File (a file the package
// lacks).
func (sf *File) SrcOrNil() []byte {
	if sf == nil {
		return nil
	}
	return sf.Src
}

var diagLine = regexp.MustCompile(`([A-Za-z0-9_.\-]+\.go):([0-9]+):(?:[0-9]+:)? ?(.*)`)

// Attribute maps compiler or vet messages to the mutants whose copies they
// are about. unexplained reports a message about any other line, or a
// failure with no message at all.
func Attribute(sc *Schema, out string) (blamed map[int]string, unexplained bool) {
	blamed = map[int]string{}
	for _, l := range strings.Split(out, "\n") {
		m := diagLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		line, _ := strconv.Atoi(m[2])
		id := sc.owner(m[1], line)
		if id == 0 {
			unexplained = true
			continue
		}
		if _, ok := blamed[id]; !ok {
			blamed[id] = strings.ReplaceAll(m[3], copyName(id, ""), "")
		}
	}
	return blamed, unexplained || len(blamed) == 0
}
