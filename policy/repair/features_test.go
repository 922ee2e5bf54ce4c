package repair

import (
	"strings"
	"testing"

	"github.com/frognano/frog/env"
)

func TestFeatureLayout(t *testing.T) {
	if fContext != fKind+len(Kinds) || fNamedLine != fContext+len(Contexts) || fOp != fStop+1 ||
		fNewToken != fOp+len(Ops) || fFirstAlt != fNewToken+len(NewTokens) || Dim != fCount+1 ||
		PrefixDim != fSurprise+1 || FeatureNames[PrefixDim-1] != "surprise" {
		t.Fatalf("layout: kind %d context %d named %d stop %d dim %d", fKind, fContext, fNamedLine, fStop, Dim)
	}
	seen := map[string]bool{}
	for i, n := range FeatureNames {
		if n == "" || seen[n] {
			t.Errorf("feature %d named %q (duplicate or empty)", i, n)
		}
		seen[n] = true
	}
}

// TestCandidateFeatures checks that what tells a line's alternatives apart
// reaches the features: the template, the text it writes, which is first.
func TestCandidateFeatures(t *testing.T) {
	st := &State{List: []env.Candidate{
		{ID: 0, File: "a.go", Line: 3, Op: "int-literal", Kind: "token", Edits: []env.Edit{{Offset: 10, Old: "2", New: "3"}}, Natural: -2, Surprise: 6},
		{ID: 1, File: "a.go", Line: 3, Op: "int-literal", Kind: "token", Edits: []env.Edit{{Offset: 10, Old: "2", New: "1"}}, Natural: 3, Surprise: 6},
		{ID: 2, File: "a.go", Line: 3, Op: "compare-negate", Kind: "token", Edits: []env.Edit{{Offset: 4, Old: "==", New: "!="}}, Natural: 1, Surprise: 6},
		{ID: 3, File: "a.go", Line: 9, Op: "restore-err", Kind: "return", Edits: []env.Edit{{Offset: 40, Old: "nil", New: "err"}}, Natural: -1, Surprise: 2},
		{ID: 4, File: "a.go", Line: 9, Op: "restore-stmt", Kind: "stmt", Edits: []env.Edit{{Offset: 50, New: "\tn++\n"}}, Natural: -1, Surprise: 2,
			Affinity: 1, Origin: "package", Place: "end", Similar: 0.5, Repeat: true, Count: 8},
	}}
	f := NewFeaturizer(st)
	name := map[string]int{}
	for i, n := range FeatureNames {
		name[n] = i
	}
	want := []map[string]float32{
		{"op_int-literal": 1, "new_other": 1, "first_alternative": 1, "smaller_literal": 0, "natural": -0.46211717, "natural_best": 0, "surprise": 0.7615942},
		{"op_int-literal": 1, "new_1": 1, "first_alternative": 0, "smaller_literal": 1, "natural": 0.63514894, "natural_best": 1},
		{"op_compare-negate": 1, "new_!=": 1, "first_alternative": 0, "op_int-literal": 0, "natural_best": 0},
		{"op_restore-err": 1, "new_other": 1, "first_alternative": 1, "natural_best": 0, "surprise": -0.7615942, "restore_stmt": 0, "similar": 0},
		{"op_other": 1, "kind_stmt": 1, "restore_stmt": 1, "affinity": 1, "local": 0, "origin_file": 0, "origin_package": 1,
			"similar": 0.5, "repeat": 1, "place_start": 0, "place_end": 1, "count": 0.7615942},
	}
	for i := range st.List {
		x := f.Candidate(&st.List[i])
		if len(x) != Dim {
			t.Fatalf("candidate %d: %d features, want %d", i, len(x), Dim)
		}
		for n, v := range want[i] {
			if x[name[n]] != v {
				t.Errorf("candidate %d: %s = %v, want %v", i, n, x[name[n]], v)
			}
		}
	}
	if x := f.Stop(); x[name["first_alternative"]] != 0 || x[name["op_other"]] != 0 {
		t.Errorf("stop has candidate features: %v", x)
	}
}

func TestWords(t *testing.T) {
	for name, want := range map[string]string{
		"TestParseURL/empty_input": "parse url empty input",
		"TestVersion7Monotonicity": "version monotonicity",
		"(*Tree).Insert":           "tree insert",
		"Tree.insertNode":          "tree insert node",
		"FuzzFromBytes":            "from bytes",
		"HTTPServer":               "http server",
	} {
		if got := strings.Join(Words(name), " "); got != want {
			t.Errorf("Words(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestFrameFunc(t *testing.T) {
	for frame, want := range map[string]string{
		"github.com/a/b.(*Tree).Insert":       "Tree.Insert",
		"github.com/a/b.(*Tree).Insert.func1": "Tree.Insert",
		"github.com/a/b/c.parse.func2.1":      "parse",
		"github.com/a/b/c.parse.func2":        "parse",
		"b.New":                               "New",
		"github.com/a/b.List[...].Push":       "List.Push",
	} {
		if got := FrameFunc(frame); got != want {
			t.Errorf("FrameFunc(%q) = %q, want %q", frame, got, want)
		}
	}
}
