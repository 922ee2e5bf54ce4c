package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines bounds a function of frog's non-test code, from its func
// line to its closing brace: a longer one mixes phases that read better
// apart (STYLE.md).
const maxFuncLines = 100

// maxFileLines bounds a file of the command line and of the episode-time
// Go harness, the two rooms that grew the longest files before they were
// split by job.
const maxFileLines = 800

// TestFunctionsAndFilesStayShort keeps every non-test function under
// maxFuncLines lines and every file under cmd/frog/cli and gotask under
// maxFileLines. Test files and generated code are exempt.
func TestFunctionsAndFilesStayShort(t *testing.T) {
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			if name := d.Name(); rel != "." && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, p, src, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if ast.IsGenerated(f) {
			return nil
		}
		files++
		rel = filepath.ToSlash(rel)
		if lines := strings.Count(string(src), "\n"); lines > maxFileLines &&
			(strings.HasPrefix(rel, "cmd/frog/cli/") || strings.HasPrefix(rel, "gotask/")) {
			t.Errorf("%s: %d lines, over %d: split it by job", rel, lines, maxFileLines)
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			start, end := fset.Position(fn.Pos()).Line, fset.Position(fn.End()).Line
			if n := end - start + 1; n > maxFuncLines {
				t.Errorf("%s:%d: %s is %d lines, over %d: split it by phase", rel, start, fn.Name.Name, n, maxFuncLines)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("only %d Go files seen under %s", files, root)
	}
}

// TestLinkerDropsUnusedMethods links frog and fails when something in it
// looks methods up by name at run time (text/template, html/template,
// reflect.Value.MethodByName): the linker then keeps every exported method
// of every type, and every frog process maps them (docs/actors.md has the
// figures).
func TestLinkerDropsUnusedMethods(t *testing.T) {
	// As make build does: grpcnotrace leaves out gRPC's x/net/trace and
	// its html/template.
	out, err := exec.Command("go", "build", "-tags=grpcnotrace", "-ldflags=-dumpdep", "-o", os.DevNull, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for line := range strings.SplitSeq(string(out), "\n") {
		if strings.Contains(line, "<ReflectMethod>") {
			t.Errorf("a method is looked up by name, so the linker keeps every exported method: %s", line)
		}
	}
}
