package validate

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/rs/zerolog"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/env/process"
	"github.com/frognano/frog/synth"
)

const tinyModule = "testdata/tiny"

// sandbox opens a process sandbox closed at the end of the test.
func sandbox(t testing.TB) env.Sandbox {
	t.Helper()
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
	t.Cleanup(func() { sb.Close(context.Background()) })
	return sb
}

func prepare(t *testing.T) (*Validator, *Package) {
	t.Helper()
	v, err := New(tinyModule, sandbox(t), Config{MinTimeout: 2 * time.Second}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	p, err := v.Prepare(context.Background(), "calc")
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	return v, p
}

func find(t *testing.T, ms []Mutant, op, fn, desc string) Mutant {
	t.Helper()
	for _, m := range ms {
		mu := m.Mutations[0]
		if mu.Op == op && mu.Func == fn && mu.Desc == desc {
			return m
		}
	}
	t.Fatalf("no mutant %s in %s (%s)", op, fn, desc)
	return Mutant{}
}

func TestValidate(t *testing.T) {
	v, p := prepare(t)
	if diff := cmp.Diff([]string{"TestAbs", "TestCount", "TestMax", "TestSqrt"}, p.Stable); diff != "" {
		t.Fatalf("stable tests (-want +got):\n%s", diff)
	}
	if got := p.Coverage.Covering("calc.go", 40, 40); !cmp.Equal(got, []string{"TestSqrt"}) {
		t.Errorf("tests covering calc.go:40 = %v, want [TestSqrt]", got)
	}
	ms := v.Mutants(p)
	nilErr := find(t, ms, "nil-error", "Sqrt", "errNegative -> nil")
	broken := nilErr
	off := strings.Index(string(nilErr.origs[nilErr.File]), "return r, nil")
	broken.Mutations = []synth.Mutation{{Op: "test", File: nilErr.File, Line: nilErr.Line, EndLine: nilErr.EndLine, Edits: []synth.Edit{{Offset: off, Old: "return r, nil", New: "return r, nil, nil"}}}}
	broken.Patch += "\n+broken"

	tests := []struct {
		name string
		m    Mutant
		want Outcome
		f2p  []string
		p2p  []string
	}{
		{"valid", nilErr, Valid, []string{"TestSqrt"}, []string{"TestAbs", "TestCount", "TestMax"}},
		{"same diff again", nilErr, Duplicate, nil, nil},
		{"boundary flip nobody sees", find(t, ms, "compare-boundary", "Max", "> -> >="), Equivalent, nil, nil},
		{"uncovered", find(t, ms, "arithmetic", "Unused", "* -> /"), Equivalent, nil, nil},
		{"infinite loop", find(t, ms, "incdec", "Count", "++ -> --"), TimedOut, nil, nil},
		{"does not build", broken, NonViable, nil, nil},
	}
	var got Counters
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := v.Validate(context.Background(), p, tt.m)
			if err != nil {
				t.Fatal(err)
			}
			got.Add(res.Outcome)
			if res.Outcome != tt.want {
				t.Fatalf("outcome = %s (%s), want %s", res.Outcome, res.Reason, tt.want)
			}
			if diff := cmp.Diff(tt.f2p, res.FailToPass); diff != "" {
				t.Errorf("FAIL_TO_PASS (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.p2p, res.PassToPass); diff != "" {
				t.Errorf("PASS_TO_PASS (-want +got):\n%s", diff)
			}
			if tt.want == Valid {
				rec := Record("example.com/tiny", p, tt.m, res)
				if !strings.Contains(rec.ProblemStatement, "Sqrt(-1) succeeded") {
					t.Errorf("problem statement lacks the failure: %q", rec.ProblemStatement)
				}
				if rec.Family != "idiom" || rec.Features.FailToPass != 1 || rec.Features.OchiaiRank < 1 {
					t.Errorf("record features = %+v, family %q", rec.Features, rec.Family)
				}
			}
		})
	}
	want := Counters{Tried: 6, NonViable: 1, Equivalent: 2, TimedOut: 1, Duplicate: 1, Valid: 1}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("counters (-want +got):\n%s", diff)
	}
}

func TestDiffHashNormalizes(t *testing.T) {
	a := "--- a/f.go\n+++ b/f.go\n@@ -1,3 +1,3 @@\n x\n-\tif a <= b {\n+\tif a < b {\n"
	b := "--- a/f.go\n+++ b/f.go\n@@ -7,3 +7,3 @@\n y\n-    if a <= b {\n+    if a < b {\n"
	c := "--- a/f.go\n+++ b/f.go\n@@ -1,3 +1,3 @@\n x\n-\tif a >= b {\n+\tif a < b {\n"
	if DiffHash(a) != DiffHash(b) {
		t.Errorf("hashes differ for diffs that differ only in position and whitespace")
	}
	if DiffHash(a) == DiffHash(c) {
		t.Errorf("hashes equal for different diffs")
	}
}

// TestBatchAgreesWithOneByOne checks the mutant schema against the plain
// way: every mutant of the package compiled into one test binary gets the
// verdict it gets compiled alone.
func TestBatchAgreesWithOneByOne(t *testing.T) {
	v, p := prepare(t)
	ms := v.Mutants(p)
	if len(ms) < 10 {
		t.Fatalf("only %d mutants", len(ms))
	}
	batch := make([]Result, len(ms))
	if err := v.Batch(context.Background(), p, ms, func(i int, r Result) { batch[i] = r }); err != nil {
		t.Fatal(err)
	}
	v1, err := New(tinyModule, sandbox(t), Config{MinTimeout: 2 * time.Second, BatchSize: 1}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	var valid int
	for i, m := range ms {
		one, err := v1.Validate(context.Background(), p, m)
		if err != nil {
			t.Fatal(err)
		}
		if one.Outcome != batch[i].Outcome || !cmp.Equal(one.FailToPass, batch[i].FailToPass) {
			t.Errorf("%s %s %s: batch %s %v (%s), alone %s %v (%s)", m.Mutations[0].Op, m.Func, m.Mutations[0].Desc,
				batch[i].Outcome, batch[i].FailToPass, batch[i].Reason, one.Outcome, one.FailToPass, one.Reason)
		}
		if one.Outcome == Valid {
			valid++
		}
	}
	t.Logf("%d mutants, %d valid", len(ms), valid)
}
