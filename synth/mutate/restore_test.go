package mutate

import (
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/frognano/frog/env"
)

// pkgSources reads the non-test Go files of directory dir, by name.
func pkgSources(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		src, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(p)] = src
	}
	if len(out) == 0 {
		t.Fatalf("no Go files in %s", dir)
	}
	return out
}

// typedPkg is one package parsed into one FileSet and type-checked.
type typedPkg struct {
	fset  *token.FileSet
	names []string
	files map[string]*ast.File
	srcs  map[string][]byte
	info  *types.Info
	err   error
}

var testImporter = importer.Default()

func checkPkg(t *testing.T, srcs map[string][]byte) *typedPkg {
	t.Helper()
	p := &typedPkg{fset: token.NewFileSet(), files: map[string]*ast.File{}, srcs: srcs}
	for n := range srcs {
		p.names = append(p.names, n)
	}
	sort.Strings(p.names)
	var asts []*ast.File
	for _, n := range p.names {
		f, err := parser.ParseFile(p.fset, n, srcs[n], parser.ParseComments)
		if err != nil {
			p.err = err
			return p
		}
		p.files[n] = f
		asts = append(asts, f)
	}
	p.info, p.err = Check(p.fset, "p", asts, testImporter)
	return p
}

func (p *typedPkg) peers(of string) []Peer {
	var out []Peer
	for _, n := range p.names {
		if n != of {
			out = append(out, Peer{File: p.files[n], Src: p.srcs[n]})
		}
	}
	return out
}

// restoreResult is what restore-stmt made of one removed statement.
type restoreResult struct {
	restored bool // a candidate gives back the original file (but blanks)
	borrow   bool // the removed statement's text stands elsewhere in the package
	cands    int
}

// restoreCase removes statement s of file name in p, lists the repairs at
// the lines around the hole (the statement that now stands there and the
// one before), and checks every restore-stmt candidate: it compiles in the
// package (so no name it uses is out of scope), its edits are distinct,
// and the caps hold.
func restoreCase(t *testing.T, p *typedPkg, name string, s Site) restoreResult {
	t.Helper()
	mutant, _, err := s.Apply()
	if err != nil {
		return restoreResult{}
	}
	msrcs := map[string][]byte{}
	for n, b := range p.srcs {
		msrcs[n] = b
	}
	msrcs[name] = mutant
	mp := checkPkg(t, msrcs)
	if mp.err != nil {
		return restoreResult{} // the mutant does not compile: no task
	}
	hole := holeLine(mutant, s.Edits[0].Offset)
	lines := []int{hole, hole - 1}
	var res restoreResult
	old := strings.TrimSpace(s.Edits[0].Old)
	for _, b := range msrcs {
		res.borrow = res.borrow || strings.Contains(string(b), old)
	}
	for _, r := range Repairs(mp.fset, mp.files[name], mutant, mp.info, lines, nil) {
		if r.Op == OpRestoreStmt {
			t.Fatalf("%s: %s: restore-stmt offered without Restoring", name, r.Desc)
		}
	}
	perLine := map[int]int{}
	seen := map[string]bool{}
	for _, r := range Repairs(mp.fset, mp.files[name], mutant, mp.info, lines, &Restoring{Peers: mp.peers(name)}) {
		if r.Op != OpRestoreStmt {
			continue
		}
		res.cands++
		perLine[r.Line]++
		if r.Restore == nil || r.Kind != "stmt" {
			t.Errorf("%s: %s: restore-stmt without its description or family: %+v", name, r.Desc, r)
		}
		key := editsKey(r.Edits)
		if seen[key] {
			t.Errorf("%s: %s listed twice", name, r.Desc)
		}
		seen[key] = true
		fixed, err := env.Splice(mutant, r.Edits)
		if err != nil {
			t.Fatalf("%s: %s: %v", name, r.Desc, err)
		}
		if strings.Join(strings.Fields(string(fixed)), "") == strings.Join(strings.Fields(string(p.srcs[name])), "") {
			res.restored = true
		}
		rsrcs := map[string][]byte{}
		for n, b := range msrcs {
			rsrcs[n] = b
		}
		rsrcs[name] = fixed
		if rp := checkPkg(t, rsrcs); rp.err != nil {
			t.Errorf("%s line %d: %s (%s) does not compile: %v", name, r.Line, r.Desc, r.Restore.Origin, rp.err)
		}
	}
	for l, n := range perLine {
		if n > maxRestoreLine {
			t.Errorf("%s line %d: %d restore-stmt candidates, cap %d", name, l, n, maxRestoreLine)
		}
	}
	return res
}

func holeLine(src []byte, off int) int {
	return strings.Count(string(src[:off]), "\n") + 1
}

// TestRestoreStmt removes statements from real Go code (frog's testdata
// and three standard-library packages, every file of each) and asks for
// repairs around the hole: every restore-stmt candidate must compile and
// respect the caps, and the original statement must come back for a fair
// share of the removals: at least half of those whose statement the
// package holds elsewhere (the caps keep the rest out).
func TestRestoreStmt(t *testing.T) {
	goroot := runtime.GOROOT()
	dirs := []string{"testdata", filepath.Join(goroot, "src", "bufio"), filepath.Join(goroot, "src", "text", "tabwriter"), filepath.Join(goroot, "src", "container", "list")}
	var sum restoreSum
	for _, dir := range dirs {
		srcs := pkgSources(t, dir)
		if dir == "testdata" {
			for n := range srcs { // unrelated files: one package each
				sum.add(restoreFiles(t, map[string][]byte{n: srcs[n]}))
			}
			continue
		}
		in := restoreFiles(t, srcs)
		t.Logf("%s: restored %d of %d removals (%d borrowable), %d candidates", filepath.Base(dir), in.restored, in.total, in.borrow, in.cands)
		sum.add(in)
	}
	t.Logf("restored %d of %d removed statements (%d of them stand elsewhere in their package); %.1f restore-stmt candidates a removal",
		sum.restored, sum.total, sum.borrow, float64(sum.cands)/float64(max(sum.total, 1)))
	if sum.total < 40 || sum.borrow < 15 {
		t.Fatalf("only %d removals, %d borrowable: the test lost its material", sum.total, sum.borrow)
	}
	if sum.restored*2 < sum.borrow {
		t.Errorf("restored %d removals, of %d whose statement stands elsewhere in the package: want half", sum.restored, sum.borrow)
	}
}

type restoreSum struct{ restored, borrow, total, cands int }

func (s *restoreSum) add(o restoreSum) {
	s.restored, s.borrow, s.total, s.cands = s.restored+o.restored, s.borrow+o.borrow, s.total+o.total, s.cands+o.cands
}

// restoreFiles runs restoreCase on the remove-stmt and drop-defer sites
// of the package of srcs: every one, or a spread of 12 a file where a
// file has more (each candidate is type-checked with its package, which
// -race makes slow).
func restoreFiles(t *testing.T, srcs map[string][]byte) (sum restoreSum) {
	p := checkPkg(t, srcs)
	if p.err != nil {
		t.Fatalf("%v: %v", p.names, p.err)
	}
	for _, n := range p.names {
		var sites []Site
		for _, s := range Sites(p.fset, p.files[n], p.srcs[n], p.info) {
			if s.Op == OpRemoveStmt || s.Op == OpDropDefer {
				sites = append(sites, s)
			}
		}
		step := max(1, len(sites)/12)
		for i := 0; i < len(sites); i += step {
			s := sites[i]
			t.Run(fmt.Sprintf("%s:%d", n, s.Line), func(t *testing.T) {
				r := restoreCase(t, p, n, s)
				sum.total++
				sum.cands += r.cands
				sum.restored += b2i(r.restored)
				sum.borrow += b2i(r.borrow)
			})
		}
	}
	return sum
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
