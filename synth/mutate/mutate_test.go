package mutate

import (
	"flag"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func render(sites []Site) (string, error) {
	var sb strings.Builder
	for _, s := range sites {
		_, patch, err := s.Apply()
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&sb, "=== %s %s %s:%d-%d %s (cx %d): %s\n%s", s.Family, s.Op, s.Filename, s.Line, s.EndLine, s.Func, s.Complexity, s.Desc, patch)
	}
	return sb.String(), nil
}

func TestSitesGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata: %v", err)
	}
	for _, path := range files {
		name := strings.TrimSuffix(filepath.Base(path), ".go")
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, filepath.Base(path), src, parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			info, err := Check(fset, name, []*ast.File{f}, importer.Default())
			if err != nil {
				t.Fatalf("original does not type-check: %v", err)
			}
			sites := Sites(fset, f, src, info)
			got, err := render(sites)
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", name+".golden")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create)", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("sites of %s differ from %s (-want +got):\n%s", path, golden, diff)
			}
			for _, s := range sites {
				checkMutant(t, name, s)
			}
		})
	}
}

// checkMutant asserts that a mutant type-checks, undoes exactly, and that
// its gold patch restores the original.
func checkMutant(t *testing.T, pkg string, s Site) {
	t.Helper()
	mutated, patch, err := s.Apply()
	if err != nil {
		t.Fatal(err)
	}
	where := fmt.Sprintf("%s at %s:%d (%s)", s.Op, s.Filename, s.Line, s.Desc)
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, s.Filename, mutated, 0)
	if err != nil {
		t.Errorf("%s: mutant does not parse: %v", where, err)
		return
	}
	if _, err := Check(fset, pkg, []*ast.File{f}, importer.Default()); err != nil {
		t.Errorf("%s: mutant does not type-check: %v\n%s", where, err, patch)
	}
	orig, err := Undo(mutated, s.Edits)
	if err != nil {
		t.Errorf("%s: undo: %v", where, err)
	} else if diff := cmp.Diff(string(s.src), string(orig)); diff != "" {
		t.Errorf("%s: undo is not exact (-want +got):\n%s", where, diff)
	}
	if patch == "" {
		t.Errorf("%s: empty patch", where)
	}
}

func TestFamiliesCovered(t *testing.T) {
	want := []string{
		OpCompareBoundary, OpCompareNegate, OpArithmetic, OpIncDec, OpLogical,
		OpIntLiteral, OpBoolLiteral, OpUnaryMinus,
		OpRemoveStmt, OpEmptyBody, OpCondTrue, OpCondFalse, OpAssignOp, OpBreakContinue,
		OpDropErrGuard, OpNilError, OpSliceBound, OpSwapArgs, OpDropDefer,
	}
	seen := map[string]bool{}
	files, _ := filepath.Glob("testdata/*.go")
	for _, path := range files {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		info, _ := Check(fset, "p", []*ast.File{f}, importer.Default())
		for _, s := range Sites(fset, f, src, info) {
			seen[s.Op] = true
		}
	}
	for _, op := range want {
		if !seen[op] {
			t.Errorf("operator %s has no site in testdata", op)
		}
	}
}

func TestPatchApplies(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git not installed")
	}
	src, err := os.ReadFile("testdata/idioms.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "idioms.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	info, _ := Check(fset, "idioms", []*ast.File{f}, importer.Default())
	for i, s := range Sites(fset, f, src, info) {
		mutated, patch, err := s.Apply()
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "idioms.go"), mutated, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "fix.patch"), []byte(patch), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(git, "apply", "--unidiff-zero", "fix.patch")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("site %d (%s line %d): git apply: %v\n%s\n%s", i, s.Op, s.Line, err, out, patch)
		}
		got, err := os.ReadFile(filepath.Join(dir, "idioms.go"))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(string(src), string(got)); diff != "" {
			t.Fatalf("site %d (%s): patched mutant differs from original (-want +got):\n%s", i, s.Op, diff)
		}
	}
}

func TestUnifiedEdgeCases(t *testing.T) {
	tests := []struct {
		name string
		a, b string
		regs []region
		want string
	}{
		{"equal", "x\n", "x\n", nil, ""},
		{"no trailing newline", "a\nb", "a\nc", []region{{2, 1, 2, 1}},
			"--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"},
		{"insert line", "a\nc\n", "a\nb\nc\n", []region{{2, 0, 2, 2}},
			"--- a/f\n+++ b/f\n@@ -1,2 +1,3 @@\n a\n+b\n c\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := unified("f", []byte(tt.a), []byte(tt.b), tt.regs)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("unified (-want +got):\n%s", diff)
			}
		})
	}
}
