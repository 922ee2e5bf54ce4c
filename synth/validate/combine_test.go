package validate

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/frognano/frog/synth"
)

// twoFiles is a module whose package spreads over two files, each with its
// own test.
var twoFiles = map[string]string{
	"go.mod": "module example.com/two\n\ngo 1.22\n",
	"p/a.go": "package p\n\n// Inc adds one.\nfunc Inc(x int) int {\n\treturn x + 1\n}\n",
	"p/b.go": "package p\n\n// Neg negates.\nfunc Neg(x int) int {\n\treturn -x\n}\n",
	"p/c.go": "package p\n\n// Name names the package.\nfunc Name() string {\n\treturn \"p\"\n}\n",
	"p/p_test.go": `package p

import "testing"

func TestInc(t *testing.T) {
	if Inc(1) != 2 {
		t.Fatalf("Inc(1) = %d", Inc(1))
	}
}

func TestNeg(t *testing.T) {
	if Neg(2) != -2 {
		t.Fatalf("Neg(2) = %d", Neg(2))
	}
}

func TestName(t *testing.T) {
	if Name() != "p" {
		t.Fatal(Name())
	}
}
`,
}

// TestCombineAcrossFiles combines mutants of two files of one package: the
// schema dispatches in both, both tests fail, and the stored task
// re-validates with a gold patch of both files.
func TestCombineAcrossFiles(t *testing.T) {
	dir := t.TempDir()
	for name, src := range twoFiles {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	v, err := New(dir, sandbox(t), Config{MinTimeout: 2 * time.Second}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	p, err := v.Prepare(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	ms := v.Mutants(p)
	inc := find(t, ms, "arithmetic", "Inc", "+ -> -")
	neg := find(t, ms, "unary-minus", "Neg", "- removed")
	c, err := Combine(inc, neg)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Files(); len(got) != 2 {
		t.Fatalf("combined mutant files = %v, want two", got)
	}
	if !strings.Contains(c.Patch, "--- a/p/a.go") || !strings.Contains(c.Patch, "--- a/p/b.go") {
		t.Fatalf("patch does not cover both files:\n%s", c.Patch)
	}
	res, err := v.Validate(ctx, p, c)
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != Valid || strings.Join(res.FailToPass, " ") != "TestInc TestNeg" || strings.Join(res.PassToPass, " ") != "TestName" {
		t.Fatalf("combined mutant: %s (%s), FAIL_TO_PASS %v, PASS_TO_PASS %v; want valid, TestInc and TestNeg failing, TestName passing",
			res.Outcome, res.Reason, res.FailToPass, res.PassToPass)
	}
	// That the stored record holds up under the run's task check (laid
	// out from its mutations, its gold patch fixing both files) is
	// gotask's TestStoredTasksHoldUp*: validate cannot import the check.
	if rec := Record("example.com/two", p, c, res); len(synth.SplitPatch(rec.Patch)) != 2 {
		t.Errorf("the record's patch touches %d files, want 2", len(synth.SplitPatch(rec.Patch)))
	}
}
