package source

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/frognano/frog/synth"
	"github.com/frognano/frog/synth/validate"
)

// Asked for a bin, the synthesizer tries what can make it: the steered
// module's packages only (the other module is not even prepared, though
// unsteered work spreads over both from the first chunk), and its mutants
// of the steered family first.
func TestTasksForSteersWhatIsTried(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test on modules")
	}
	mods := tinies(t, 2)
	var s *Synthesizer
	var tried []synth.Knobs // the bin of each mutant validated, in order
	observe := func(m validate.Mutant, _ validate.Result) {
		tried = append(tried, synth.MutationKnobs("", m.Mutations))
	}
	s = newSynth(t, mods, Config{Workers: 1, MaxMutants: 64, Combos: -1, Validate: validate.Config{BatchSize: 8}, Observe: observe})
	want := synth.Knobs{Module: mods[1].Path, Family: "structural"}
	tasks, err := s.TasksFor(context.Background(), 2, want)
	if err != nil && !errors.Is(err, ErrExhausted) {
		t.Fatal(err)
	}
	if len(tasks) != 2 {
		t.Fatalf("%d tasks, want 2", len(tasks))
	}
	for _, tk := range tasks {
		if b := synth.BinOf(&tk); !want.Matches(b) {
			t.Errorf("task %s in bin %s, want %s", tk.ID, b.Key(), want.Key())
		}
	}
	for _, ms := range s.Stats().Modules {
		if ms.Module == mods[0].String() && (ms.Prepared > 0 || ms.Tried > 0) {
			t.Errorf("module %s not asked for: %d packages prepared, %d mutants tried", ms.Module, ms.Prepared, ms.Tried)
		}
	}
	// The structural mutants were tried before any other.
	firstOther := slices.IndexFunc(tried, func(k synth.Knobs) bool { return k.Family != "structural" })
	lastGuard := -1
	for i, k := range tried {
		if k.Family == "structural" {
			lastGuard = i
		}
	}
	if lastGuard < 0 || firstOther >= 0 && firstOther < lastGuard {
		t.Errorf("mutants tried by family %v: want every structural mutant first", families(tried))
	}
}

// Asked for k = 2 while its packages are still in their single stage, the
// synthesizer combines the mutants caught so far instead of waiting for
// every single one to be tried.
func TestTasksForSteersK(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test on a module")
	}
	m := tinyModule(t)
	var singles, combined int
	observe := func(m validate.Mutant, _ validate.Result) {
		if len(m.Mutations) == 1 {
			singles++
		} else {
			combined++
		}
	}
	s := newSynth(t, []Module{m}, Config{Workers: 1, MaxMutants: 400, Validate: validate.Config{BatchSize: 16}, Observe: observe})
	tasks, err := s.TasksFor(context.Background(), 2, synth.Knobs{K: 2})
	if err != nil && !errors.Is(err, ErrExhausted) {
		t.Fatal(err)
	}
	if len(tasks) != 2 {
		t.Fatalf("%d tasks, want 2", len(tasks))
	}
	for _, tk := range tasks {
		if len(tk.Mutations) != 2 {
			t.Errorf("task %s has %d mutations, want 2", tk.ID, len(tk.Mutations))
		}
	}
	all := len(s.sched.mods[0][0].todo) + singles
	if combined == 0 || singles >= all {
		t.Errorf("%d single mutants tried of %d, %d combined: want combined ones before the singles run out", singles, all, combined)
	}
}

// A compound task is its base and one more mutation of the same package,
// validated by the tests (some fail with both bugs, all pass with neither).
func TestCompound(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test on a module")
	}
	m := tinyModule(t)
	s := newSynth(t, []Module{m}, Config{Workers: 2, MaxMutants: 64, Combos: -1})
	base, err := s.TasksFor(context.Background(), 1, synth.Knobs{K: 1, Family: "token"})
	if err != nil || len(base) != 1 {
		t.Fatalf("base task: %d, %v", len(base), err)
	}
	cs, err := s.Compound(context.Background(), 3, base[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) == 0 {
		t.Fatalf("no compound of %s; stats %+v", base[0].ID, s.Stats().Families)
	}
	for _, c := range cs {
		if !synth.CompoundOf(&c, &base[0]) {
			t.Errorf("task %s (%d mutations) is not %s with one more", c.ID, len(c.Mutations), base[0].ID)
		}
		if len(c.FailToPass) == 0 || c.Patch == "" || c.ID == base[0].ID {
			t.Errorf("compound %s incomplete: %d fail-to-pass, patch %q", c.ID, len(c.FailToPass), c.Patch)
		}
	}
	if st := s.Stats().Families["combo-k2"]; st.Tried == 0 || st.Tried > compoundTries {
		t.Errorf("%d compounds tried, want 1 to %d", st.Tried, compoundTries)
	}
	foreign := base[0]
	foreign.Package = "example.com/elsewhere"
	if _, err := s.Compound(context.Background(), 1, foreign); err == nil {
		t.Error("a compound of another module's task: no error")
	}
}

func families(ks []synth.Knobs) []string {
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = k.Family
	}
	return out
}
