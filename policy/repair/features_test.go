package repair

import "testing"

func TestFeatureLayout(t *testing.T) {
	if fContext != fKind+len(Kinds) || fNamedLine != fContext+len(Contexts) || Dim != fStop+1 {
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
