package synth_test

import (
	"strings"
	"testing"

	"github.com/frognano/frog/synth"
	"github.com/frognano/frog/synth/mutate"
)

func TestApplyPatchUndoesMutations(t *testing.T) {
	orig := "package p\n\nfunc f(a, b int) int {\n\tif a < b {\n\t\treturn a\n\t}\n\treturn b\n}\n\nfunc g() int { return 1 }\n"
	edits := []mutate.Edit{
		{Offset: strings.Index(orig, "a < b") + 2, Old: "<", New: "<="},
		{Offset: strings.Index(orig, "return 1"), Old: "return 1", New: "return 2"},
	}
	mutated, patch, err := mutate.Patch("p.go", []byte(orig), edits)
	if err != nil {
		t.Fatal(err)
	}
	got, err := synth.ApplyPatch(mutated, patch)
	if err != nil {
		t.Fatalf("ApplyPatch: %v\npatch:\n%s", err, patch)
	}
	if string(got) != orig {
		t.Errorf("ApplyPatch gave\n%s\nwant\n%s", got, orig)
	}
	if _, err := synth.ApplyPatch([]byte("package q\n"), patch); err == nil || !strings.Contains(err.Error(), "does not apply") {
		t.Errorf("ApplyPatch on the wrong file: err = %v, want 'does not apply'", err)
	}
	if _, err := synth.ApplyPatch(mutated, "not a patch"); err == nil {
		t.Error("ApplyPatch accepted a patch with no hunk")
	}
}

func TestSplitPatch(t *testing.T) {
	p := "--- a/x/a.go\n+++ b/x/a.go\n@@ -1 +1 @@\n-a\n+b\n--- a/x/b.go\n+++ b/x/b.go\n@@ -2 +2 @@\n-c\n+d\n"
	got := synth.SplitPatch(p)
	if len(got) != 2 || !strings.HasPrefix(got["x/a.go"], "--- a/x/a.go\n") || !strings.HasSuffix(got["x/b.go"], "+d\n") {
		t.Errorf("SplitPatch = %q", got)
	}
}
