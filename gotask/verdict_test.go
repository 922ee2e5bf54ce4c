package gotask

import (
	"context"
	"strings"
	"testing"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/gotask/gotest"
)

func TestScreenChange(t *testing.T) {
	const start = `package p

import "strings"

func Up(s string) string { return strings.ToLower(s) }
`
	fixed := strings.Replace(start, "ToLower", "ToUpper", 1)
	withExit := `package p

import (
	"os"
	"strings"
)

func Up(s string) string {
	if s == "" {
		os.Exit(2)
	}
	return strings.ToUpper(s)
}
`
	for _, tc := range []struct {
		name                 string
		file                 string
		before, gold, after  string
		want                 string // a substring of the finding; "" for none
		absentBefore, remove bool
	}{
		{name: "the gold fix", file: "p/p.go", before: start, gold: fixed, after: fixed},
		{name: "another honest fix", file: "p/p.go", before: start, gold: fixed, after: strings.Replace(start, "return strings.ToLower(s)", "return strings.ToUpper(strings.TrimSpace(s))", 1)},
		{name: "a fix that restores what the gold fix restores", file: "p/p.go", before: start, gold: withExit, after: withExit},
		{name: "a new import of os", file: "p/p.go", before: start, gold: fixed, after: strings.Replace(fixed, `import "strings"`, "import (\n\t\"os\"\n\t\"strings\"\n)\n\nvar _ = os.Args", 1), want: "import os"},
		{name: "init", file: "p/p.go", before: start, gold: fixed, after: fixed + "\nfunc init() {}\n", want: "func init"},
		{name: "a renamed os.Exit", file: "p/p.go", before: withExit, gold: withExit, after: strings.Replace(withExit, "\"os\"", "\"os\"\n\tsys \"os\"", 1) + "\nfunc g() { sys.Exit(0) }\n", want: "import os"},
		{name: "fmt.Println", file: "p/p.go", before: start, gold: fixed, after: strings.Replace(fixed, `import "strings"`, "import (\n\t\"fmt\"\n\t\"strings\"\n)\n\nfunc g() { fmt.Println(\"PASS\") }", 1), want: "fmt.Println"},
		{name: "println", file: "p/p.go", before: start, gold: fixed, after: fixed + "\nfunc g() { println(\"PASS\") }\n", want: "println"},
		{name: "a package variable run at load", file: "p/p.go", before: start, gold: fixed, after: fixed + "\nvar _ = func() int { return 0 }()\n", want: "package-level function literal"},
		{name: "linkname", file: "p/p.go", before: start, gold: fixed, after: fixed + "\n//go:linkname x runtime.x\nvar x int\n", want: "//go:linkname"},
		{name: "cgo", file: "p/p.go", before: start, gold: fixed, after: strings.Replace(fixed, `import "strings"`, "import \"C\"\nimport \"strings\"", 1), want: "import C"},
		{name: "a new Go file", file: "p/zz.go", absentBefore: true, after: "package p\n", want: "new source file"},
		{name: "a new assembly file", file: "p/zz_amd64.s", absentBefore: true, after: "TEXT ·x(SB),0,$0\n", want: "new source file"},
		{name: "a go.work", file: "go.work", absentBefore: true, after: "go 1.26\n", want: "go.work"},
		{name: "a changed C file", file: "p/x.c", before: "int x;\n", gold: "int x;\n", after: "int y;\n", want: "below Go"},
		{name: "a new README", file: "NOTES.md", absentBefore: true, after: "notes\n"},
		{name: "a file that does not parse", file: "p/p.go", before: start, gold: fixed, after: "package p\nfunc {"},
		{name: "a removed file", file: "p/p.go", before: start, gold: fixed, remove: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before, gold, after []byte
			if !tc.absentBefore {
				before, gold = []byte(tc.before), []byte(tc.gold)
			}
			if !tc.remove {
				after = []byte(tc.after)
			}
			got := screenChange(tc.file, before, gold, after)
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Errorf("screenChange = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestCanary(t *testing.T) {
	a, b := newCanary([]byte("seed one")), newCanary([]byte("seed two"))
	if a != newCanary([]byte("seed one")) {
		t.Error("the same seed made two canaries")
	}
	if a.pass == b.pass || a.passLog == b.passLog || a.file == b.file {
		t.Errorf("two seeds made one canary: %+v, %+v", a, b)
	}
	if !testName.MatchString(a.pass) || !testName.MatchString(a.fail) || !strings.HasSuffix(a.file, "_test.go") {
		t.Errorf("canary names %q %q %q", a.pass, a.fail, a.file)
	}
	src := string(a.source("words"))
	for _, want := range []string{"package words\n", a.pass + "(t *" + a.alias + ".T)", a.passLog, a.failLog} {
		if !strings.Contains(src, want) {
			t.Errorf("the canary's source lacks %q:\n%s", want, src)
		}
	}
	held := gotest.Run{Passed: []string{"TestA", a.pass}, Failed: []string{a.fail}, Exit: 1,
		Logs: map[string]string{a.pass: "    x_test.go:5: " + a.passLog + "\n", a.fail: "    x_test.go:7: " + a.failLog + "\n"}}
	if got := a.check(held); got != "" {
		t.Errorf("canaries that held: %q", got)
	}
	for _, tc := range []struct {
		name string
		edit func(*gotest.Run)
		want string
	}{
		{"every test passed (the fail canary too)", func(tr *gotest.Run) { tr.Passed, tr.Failed = append(tr.Passed, a.fail), nil }, "must fail"},
		{"the pass canary never ran", func(tr *gotest.Run) { tr.Passed = []string{"TestA"}; delete(tr.Logs, a.pass) }, "must pass"},
		{"the pass canary passed without its log", func(tr *gotest.Run) { tr.Logs[a.pass] = "" }, "must pass"},
		{"the fail canary failed without its message", func(tr *gotest.Run) { tr.Logs[a.fail] = "--- FAIL" }, "must fail"},
		{"exit 0", func(tr *gotest.Run) { tr.Exit = 0 }, "exited 0"},
	} {
		tr := held
		tr.Passed, tr.Failed = append([]string(nil), held.Passed...), append([]string(nil), held.Failed...)
		tr.Logs = map[string]string{a.pass: held.Logs[a.pass], a.fail: held.Logs[a.fail]}
		tc.edit(&tr)
		if got := a.check(tr); !strings.Contains(got, tc.want) {
			t.Errorf("%s: check = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// BenchmarkVerdict times the verdict of an exact fix of a real task, with
// the verdict's checks (the screen, the canaries) and without, in one run:
// "shared" over a binary cache that holds the tree's binary (as most
// verdicts of a training run find it), "built" with a build each (a tree
// no sandbox built before). No outcome cache: every verdict is computed.
func BenchmarkVerdict(b *testing.B) {
	maxDir, maxTask, ws, src := maxFixture(b)
	ctx := context.Background()
	for _, mode := range []string{"shared", "built"} {
		for _, checks := range []bool{true, false} {
			name := mode + "/checks"
			if !checks {
				name = mode + "/no-checks"
			}
			b.Run(name, func(b *testing.B) {
				cfg := HarnessConfig{NoCache: true, NoVerdictChecks: !checks, VerdictKey: testVerdictKey}
				if mode == "shared" {
					cfg.BinCache = b.TempDir()
				}
				h := NewHarness(ws, cfg)
				sb := laidOut(b, maxDir)
				ep := env.NewEpisode(maxTask, env.RunOptions{MaxSteps: 5, Harness: h})
				editCalc(b, ep, sb, maxDir, src)
				if v, _, err := h.Verdict(ctx, sb, ep.Workspace()); err != nil || !v.Pass { // warm: builds the shared binary
					b.Fatalf("verdict of the exact fix: %+v, %v", v, err)
				}
				for b.Loop() {
					if v, _, err := h.Verdict(ctx, sb, ep.Workspace()); err != nil || !v.Pass {
						b.Fatalf("verdict of the exact fix: %+v, %v", v, err)
					}
				}
			})
		}
	}
}
