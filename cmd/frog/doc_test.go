package main

import (
	"encoding/json"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryPackageHasADoc keeps each package's comment where a reader looks
// for it: in a doc.go of its own, directly above the package clause,
// starting "// Package <name>" ("// Command " for a main package), and in
// no other non-test file of the package, where a second comment would be
// merged into the first by go doc.
func TestEveryPackageHasADoc(t *testing.T) {
	out, err := exec.Command("go", "list", "-json=ImportPath,Dir,Name,GoFiles,CgoFiles,IgnoredGoFiles", "github.com/frognano/frog/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	seen := 0
	for dec.More() {
		var p struct {
			ImportPath, Dir, Name             string
			GoFiles, CgoFiles, IgnoredGoFiles []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		seen++
		want := "// Package " + p.Name
		if p.Name == "main" {
			want = "// Command "
		}
		fset := token.NewFileSet()
		doc := filepath.Join(p.Dir, "doc.go")
		if _, err := os.Stat(doc); err != nil {
			t.Errorf("%s has no doc.go: write its package comment there (%q …)", p.ImportPath, want)
		} else if f, err := parser.ParseFile(fset, doc, nil, parser.PackageClauseOnly|parser.ParseComments); err != nil {
			t.Errorf("%s: %v", p.ImportPath, err)
		} else if f.Doc == nil {
			t.Errorf("%s: doc.go has no comment directly above its package clause", p.ImportPath)
		} else if first := f.Doc.List[0].Text; !startsWith(first, want, p.Name == "main") {
			t.Errorf("%s: doc.go's comment starts %q; want %q …", p.ImportPath, first, want)
		}
		files := append(append(append([]string(nil), p.GoFiles...), p.CgoFiles...), p.IgnoredGoFiles...)
		for _, name := range files {
			if name == "doc.go" || strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.PackageClauseOnly|parser.ParseComments)
			if err != nil {
				t.Errorf("%s: %v", p.ImportPath, err)
				continue
			}
			if f.Name.Name != p.Name {
				continue // a file of another package (a generator behind a build tag)
			}
			if f.Doc != nil {
				t.Errorf("%s: %s has a package comment too (%q): keep the package's one comment in doc.go", p.ImportPath, name, f.Doc.List[0].Text)
			}
		}
	}
	if seen < 10 {
		t.Fatalf("go list saw only %d packages", seen)
	}
}

// startsWith says whether a comment's first line starts with prefix, and,
// for a package's name (not a command's, whose name follows), ends there
// or goes on with a space.
func startsWith(line, prefix string, command bool) bool {
	if !strings.HasPrefix(line, prefix) {
		return false
	}
	rest := line[len(prefix):]
	return command && rest != "" || rest == "" || rest[0] == ' '
}
