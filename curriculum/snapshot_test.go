package curriculum

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/synth"
)

// script drives a curriculum as the curriculum actor and the scheduler do:
// plans of a few groups, a request to the source for the fresh tasks and
// what it made (tasks of the bin asked for, mostly), their admission,
// groups of G outcomes that arrive late and out of order (a few never:
// infrastructure failures), and policy versions that advance. Everything
// is drawn from its own seeded generator, so two copies of a script feed
// two curricula the same calls.
type script struct {
	pcg      *rand.PCG
	rng      *rand.Rand
	next     int
	group    uint64
	version  int64
	inflight []flight
}

type flight struct {
	task    *env.Task
	group   uint64
	rewards []float64
}

func newScript(seed uint64) *script {
	pcg := rand.NewPCG(seed, 99)
	return &script{pcg: pcg, rng: rand.New(pcg)}
}

// clone is a copy of s that goes on drawing what s would.
func (s *script) clone() *script {
	b, err := s.pcg.MarshalBinary()
	if err != nil {
		panic(err)
	}
	pcg := new(rand.PCG)
	if err := pcg.UnmarshalBinary(b); err != nil {
		panic(err)
	}
	c := *s
	c.pcg, c.rng, c.inflight = pcg, rand.New(pcg), append([]flight(nil), s.inflight...)
	return &c
}

// step is what the curriculum answered at one step of a script.
type step struct {
	Replay  []env.Task
	Fresh   int
	Request synth.Request
	Stats   CurriculumStats
}

var scriptBins = []synth.Knobs{
	{Family: "token", K: 1, Locality: "single", Rank: "r1", Module: "m1"},
	{Family: "guard", K: 1, Locality: "single", Rank: "r4-9", Module: "m1"},
	{Family: "stmt", K: 2, Locality: "func", Rank: "r10+", Module: "m2"},
	{Family: "token", K: 3, Locality: "spread", Module: "m2"},
}

func (s *script) step(c Curriculum) step {
	var st step
	p := c.Plan(1 + s.rng.IntN(4))
	for _, t := range p.Replay {
		st.Replay = append(st.Replay, *t)
	}
	st.Fresh = p.Fresh
	played := append([]*env.Task(nil), p.Replay...)
	if p.Fresh > 0 {
		st.Request = c.Request()
		made := make([]env.Task, p.Fresh)
		for i := range made {
			k := scriptBins[s.rng.IntN(len(scriptBins))]
			if r := st.Request.Knobs; r != nil && *r != (synth.Knobs{}) && s.rng.Float64() < 0.8 {
				k = fill(*r, k)
			}
			s.next++
			made[i] = env.Task{ID: fmt.Sprintf("t%04d", s.next), Repo: k.Module, Difficulty: 8 * s.rng.Float64(), Bin: k.Key(),
				FailToPass: []string{"TestA"}, PassToPass: []string{"TestB", "TestC"}, Patch: "--- a\n+++ b\n",
				Mutations: []env.Mutation{{Op: "flip", Family: k.Family, File: "a.go", Line: s.next, Edits: []env.Edit{}}}}
		}
		c.Synthesized(st.Request, made)
		fresh := make([]*env.Task, len(made))
		for i := range made {
			fresh[i] = &made[i]
		}
		c.Admit(fresh)
		played = append(played, fresh...)
	}
	ability := 2 + float64(s.version)/20
	for _, t := range played {
		s.group++
		f := flight{task: t, group: s.group}
		for range 4 {
			r := 0.0
			if s.rng.Float64() < 1/(1+math.Exp(t.Difficulty-ability)) {
				r = 1
			}
			f.rewards = append(f.rewards, r)
		}
		s.inflight = append(s.inflight, f)
	}
	kept := s.inflight[:0]
	for _, f := range s.inflight {
		switch u := s.rng.Float64(); {
		case u < 0.03: // lost to infrastructure faults
		case u < 0.5:
			for _, r := range f.rewards {
				c.Observe(f.task, r, f.group)
			}
		default:
			kept = append(kept, f)
		}
	}
	s.inflight = kept
	if s.rng.Float64() < 0.3 {
		s.version++
		c.Advance(s.version)
	}
	st.Stats = c.Stats()
	return st
}

// fill is the bin a steered source makes for request r: r's knobs, the
// others from k.
func fill(r, k synth.Knobs) synth.Knobs {
	if r.Family != "" {
		k.Family = r.Family
	}
	if r.K != 0 {
		k.K = r.K
	}
	if r.Locality != "" {
		k.Locality = r.Locality
	}
	if r.Rank != "" {
		k.Rank = r.Rank
	}
	if r.Module != "" {
		k.Module = r.Module
	}
	return k
}

func snapshotCases(t *testing.T) []struct {
	name string
	make func() Curriculum
} {
	replay := func(strategy string) func() Curriculum {
		return func() Curriculum {
			return newReplay(t, func(c *ReplayConfig) {
				c.Strategy, c.Capacity, c.FixedSet, c.Explore, c.UpdateGroups = strategy, 60, 30, 0.2, 2
				c.EasyAbove, c.HardBelow = 0.6, 0.4 // so that easy and hard find tasks to replay
			})
		}
	}
	cases := []struct {
		name string
		make func() Curriculum
	}{
		{"target", func() Curriculum {
			c, err := NewTarget(0.5, 3, 0.05)
			if err != nil {
				t.Fatal(err)
			}
			return c
		}},
		{"fixed", func() Curriculum { return &Fixed{D: 3} }},
	}
	for _, s := range Strategies {
		cases = append(cases, struct {
			name string
			make func() Curriculum
		}{s, replay(s)})
	}
	return cases
}

// TestRestoredCurriculumContinuesExactly: a curriculum driven for a while,
// snapshotted and restored into a new one made with the same
// configuration, answers the same further calls exactly as the original
// does (plans with the same tasks, whole, the same fresh counts, requests,
// stats), while a new curriculum that was not restored answers otherwise.
func TestRestoredCurriculumContinuesExactly(t *testing.T) {
	const before, after = 300, 300
	for _, tc := range snapshotCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			orig, s := tc.make(), newScript(11)
			for range before {
				s.step(orig)
			}
			snap, err := orig.(Snapshotter).Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			restored := tc.make()
			if err := restored.(Snapshotter).Restore(snap); err != nil {
				t.Fatal(err)
			}
			again, err := restored.(Snapshotter).Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(again, snap) {
				t.Errorf("the restored curriculum's snapshot differs from the one it was restored from")
			}
			unrestored := tc.make()
			sa, sb, sc := s.clone(), s.clone(), s.clone()
			var want, got, blank []step
			for range after {
				want = append(want, sa.step(orig))
				got = append(got, sb.step(restored))
				blank = append(blank, sc.step(unrestored))
			}
			if diff := cmp.Diff(got, want); diff != "" {
				t.Errorf("restored curriculum diverged (-restored +original):\n%s", diff)
			}
			if reflect.DeepEqual(blank, want) {
				t.Errorf("a curriculum that was not restored continues as the original does: the script cannot tell state from none")
			}
			if st := want[0].Stats; st.Observed == 0 || (st.Frontier != nil && st.Frontier.Buffer == 0) {
				t.Errorf("the script left the curriculum nearly empty (%+v): it checks little", st)
			}
		})
	}
}

// TestSnapshotKeepsTheWholeTask: the tasks a restored Replay replays are
// the admitted ones, every field.
func TestSnapshotKeepsTheWholeTask(t *testing.T) {
	r := newReplay(t, func(c *ReplayConfig) { c.FreshShare = 0 })
	task := &env.Task{ID: "x", Repo: "example.com/m", Difficulty: 2.5, Bin: "token/1/single/r1/example.com/m", File: "a.go",
		Patch: "--- a/a.go\n+++ b/a.go\n", ProblemStatement: "TestA fails", FailToPass: []string{"TestA"}, PassToPass: []string{"TestB"},
		TestCmd: []string{"go", "test"}, Version: "v1.2.3", Package: "example.com/m/p",
		Mutations: []env.Mutation{{Op: "negate", Family: "token", File: "a.go", Line: 3, EndLine: 4, Func: "F", Desc: "== to !=",
			Edits: []env.Edit{{}}}}}
	r.Admit([]*env.Task{task})
	r.Observe(task, 1, 1)
	r.Observe(task, 0, 1)
	snap, err := r.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	n := newReplay(t, func(c *ReplayConfig) { c.FreshShare = 0 })
	if err := n.Restore(snap); err != nil {
		t.Fatal(err)
	}
	p := n.Plan(1)
	if len(p.Replay) != 1 {
		t.Fatalf("plan %+v: want the one task replayed", p)
	}
	if diff := cmp.Diff(*p.Replay[0], *task); diff != "" {
		t.Errorf("replayed task (-restored +admitted):\n%s", diff)
	}
	if diff := cmp.Diff(n.Held(), []string{"x"}); diff != "" {
		t.Errorf("Held (-got +want):\n%s", diff)
	}
}

// reseal re-encodes a snapshot's state after edit, with a checksum that
// matches: corruption that the checksum cannot see.
func reseal(t *testing.T, snap []byte, edit func(map[string]any)) []byte {
	t.Helper()
	var e envelope
	if err := json.Unmarshal(snap, &e); err != nil {
		t.Fatal(err)
	}
	var st map[string]any
	if err := json.Unmarshal(e.State, &st); err != nil {
		t.Fatal(err)
	}
	edit(st)
	out, err := snapshotOf(e.Kind, st)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestRestoreRefusesWhatIsNotItsSnapshot(t *testing.T) {
	played := func(c Curriculum) []byte {
		s := newScript(3)
		for range 60 {
			s.step(c)
		}
		b, err := c.(Snapshotter).Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	frontier := func() *Replay { return newReplay(t, nil) }
	target := func() *Target {
		c, err := NewTarget(0.5, 3, 0.05)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	fsnap := played(frontier())
	tsnap := played(target())
	usnap := played(newReplay(t, func(c *ReplayConfig) { c.Strategy = StrategyUniform }))
	seeded := played(newReplay(t, func(c *ReplayConfig) { c.Seed = 8 }))
	otherTarget, err := NewTarget(0.7, 3, 0.05)
	if err != nil {
		t.Fatal(err)
	}
	osnap := played(otherTarget)
	flipped := bytes.Replace(fsnap, []byte(`"tick":`), []byte(`"tick":1`), 1)
	tests := []struct {
		name string
		into Snapshotter
		data []byte
		want string
	}{
		{"not JSON", frontier(), []byte("ckpt"), "not a curriculum snapshot"},
		{"empty", frontier(), nil, "not a curriculum snapshot"},
		{"another format", frontier(), []byte(`{"format":"frog-checkpoint/1","version":3}`), "not a curriculum snapshot"},
		{"truncated", frontier(), fsnap[:len(fsnap)/2], "not a curriculum snapshot"},
		{"another kind", frontier(), tsnap, "a snapshot of a target curriculum, not of a replay one"},
		{"replay into target", target(), fsnap, "a snapshot of a replay curriculum, not of a target one"},
		{"replay into fixed", &Fixed{D: 3}, fsnap, "not of a fixed one"},
		{"another strategy", frontier(), usnap, "a snapshot of a uniform curriculum, not of a frontier one"},
		{"another seed", frontier(), seeded, "configured otherwise"},
		{"another target", target(), osnap, "configured otherwise"},
		{"another difficulty", &Fixed{D: 3}, played(&Fixed{D: 4}), "difficulty 4, not 3"},
		{"a changed digit", frontier(), flipped, "checksum"},
		{"a repeated task", frontier(), reseal(t, fsnap, func(st map[string]any) {
			b := st["buffer"].([]any)
			st["buffer"] = append(b, b[0])
		}), "repeated"},
		{"a bad generator", frontier(), reseal(t, fsnap, func(st map[string]any) { st["rng"] = "AAAA" }), "generator"},
		{"negative evidence", frontier(), reseal(t, fsnap, func(st map[string]any) {
			for _, b := range st["estimate"].(map[string]any)["bins"].(map[string]any) {
				b.(map[string]any)["pass"] = -1
			}
		}), "evidence"},
		{"an unknown field", frontier(), reseal(t, fsnap, func(st map[string]any) { st["future"] = 1 }), "unknown field"},
		{"a tally that does not add up", target(), reseal(t, tsnap, func(st map[string]any) {
			st["tally"].(map[string]any)["total"] = 1e6
		}), "tally"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before, err := tc.into.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			err = tc.into.Restore(tc.data)
			if err == nil || !errors.Is(err, ErrSnapshot) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Restore: %v; want an ErrSnapshot saying %q", err, tc.want)
			}
			after, err := tc.into.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(after, before) {
				t.Errorf("a refused Restore changed the curriculum")
			}
		})
	}
	// And its own snapshot, after all that, is taken.
	f := frontier()
	if err := f.Restore(fsnap); err != nil {
		t.Errorf("Restore of its own snapshot: %v", err)
	}
}
