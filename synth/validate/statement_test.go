package validate

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/env/process"
)

// panics is a module whose mutants panic: their tests' failure output is
// a goroutine trace naming files by path.
var panics = map[string]string{
	"go.mod": "module example.com/panics\n\ngo 1.22\n",
	"p/p.go": "package p\n\n// Last is the last of xs.\nfunc Last(xs []int) int {\n\treturn xs[len(xs)-1]\n}\n\n// Two is 2.\nfunc Two() int { return 2 }\n",
	"p/p_test.go": `package p

import "testing"

func TestTwo(t *testing.T) {
	if Two() != 2 {
		t.Fatal("Two() is not 2")
	}
}

func TestLast(t *testing.T) {
	if Last([]int{1, 2}) != 2 {
		t.Fatal("Last([1 2]) is not 2")
	}
}
`,
}

// A problem statement names files relative to the module, as the agent's
// workspace holds them, never by the validating sandbox's temporary
// directory (155 of the 540 tasks of tasks/heldout.jsonl, made before,
// carry /tmp/frog-…/workspace/m/<module>/ in their panic traces).
func TestProblemStatementPathsAreModuleRelative(t *testing.T) {
	dir := t.TempDir()
	for name, src := range panics {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := process.DefaultConfig()
	cfg.Dir = t.TempDir()
	prov, err := process.New(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	sb, err := prov.Open(context.Background(), env.OpenOptions{Run: "validate-test"})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close(context.Background())
	v, err := New(dir, sb, Config{MinTimeout: 2 * time.Second, Workdir: "m/example.com_panics"}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	p, err := v.Prepare(context.Background(), "p")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, m := range v.Mutants(p) {
		res, err := v.Validate(context.Background(), p, m)
		if err != nil {
			t.Fatal(err)
		}
		if res.Outcome != Valid {
			continue
		}
		st := Record("example.com/panics", p, m, res).ProblemStatement
		if !strings.Contains(st, "panic:") {
			continue
		}
		found = true
		if strings.Contains(st, cfg.Dir) || strings.Contains(st, "/m/example.com_panics/") {
			t.Errorf("the statement names the sandbox's directory:\n%s", st)
		}
		if !strings.Contains(st, "\tp/p.go:5") || !strings.Contains(st, "\tp/p_test.go:") {
			t.Errorf("the statement does not name p/p.go:5 and p/p_test.go relative to the module:\n%s", st)
		}
	}
	if !found {
		t.Fatal("no valid mutant panics: the test shows nothing")
	}
}
