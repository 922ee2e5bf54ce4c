package curriculum

import (
	"fmt"
	"slices"
	"testing"

	"github.com/frognano/frog/env"
)

// conform drives a curriculum made by mk as the curriculum actor does and
// reports, through bad, every breach of the Curriculum contract: a plan
// that does not answer for n tasks, a replay of a task never admitted,
// outcomes that Stats does not count, and, for a Snapshotter, a restored
// copy that answers differently from the original. Every strategy passes
// it (TestConformance); a broken one does not (TestConformanceCatches).
func conform(mk func() Curriculum, bad func(format string, args ...any)) {
	c := mk()
	admitted := map[string]*env.Task{}
	next, observed := 0, int64(0)
	var group uint64
	var version int64
	fresh := func(n int) []*env.Task {
		out := make([]*env.Task, n)
		for i := range out {
			fam := []string{"token", "guard", "structural"}[next%3]
			out[i] = &env.Task{ID: fmt.Sprintf("t%04d", next), Repo: "example.com/m", Package: "p", Difficulty: float64(next % 9),
				Mutations: []env.Mutation{{Family: fam, File: "a.go", Func: "F", Op: "op"}}}
			next++
		}
		return out
	}
	// step plays one request of n tasks on cur: plan, admit the fresh
	// ones, observe a group of 4 outcomes of each, now and then a request
	// to the synthesizer and a new policy version. It returns what cur
	// answered, for comparing two copies.
	step := func(cur Curriculum, i, n int, check bool) string {
		p := cur.Plan(n)
		if check && (p.Fresh < 0 || len(p.Replay)+p.Fresh != n) {
			bad("step %d: Plan(%d) gave %d replays and %d fresh", i, n, len(p.Replay), p.Fresh)
		}
		var ids []string
		for _, t := range p.Replay {
			if check && admitted[t.ID] == nil {
				bad("step %d: Plan replays %s, which was never admitted", i, t.ID)
			}
			ids = append(ids, t.ID)
		}
		var f []*env.Task
		if check {
			f = fresh(max(p.Fresh, 0))
			for _, t := range f {
				admitted[t.ID] = t
			}
		} else { // the copy is given the same tasks as the original
			f = make([]*env.Task, 0, p.Fresh)
			for k := range p.Fresh {
				f = append(f, admitted[fmt.Sprintf("t%04d", next+k)])
			}
		}
		cur.Admit(f)
		for _, t := range append(slices.Clone(p.Replay), f...) {
			if t == nil {
				continue
			}
			g := group + uint64(len(ids))
			for k := range 4 {
				cur.Observe(t, float64((i+k+len(t.ID))%2), g)
				if check {
					observed++
				}
			}
		}
		req := cur.Request()
		if i%5 == 0 {
			cur.Synthesized(req, nil)
		}
		if i%7 == 0 {
			cur.Advance(version + 1)
		}
		k := ""
		if req.Knobs != nil {
			k = req.Knobs.Key()
		}
		return fmt.Sprintf("%v fresh %d req %.3f %s", ids, p.Fresh, req.Difficulty, k)
	}
	for i := range 60 {
		step(c, i, 1+i%5, true)
		group += 8
		if i%7 == 0 {
			version++
		}
	}
	if st := c.Stats(); st.Observed != observed {
		bad("Stats counts %d outcomes; %d were observed", st.Observed, observed)
	}
	s, ok := c.(Snapshotter)
	if !ok {
		return
	}
	data, err := s.Snapshot()
	if err != nil {
		bad("Snapshot: %v", err)
		return
	}
	c2 := mk()
	if err := c2.(Snapshotter).Restore(data); err != nil {
		bad("Restore of its own snapshot: %v", err)
		return
	}
	for i := 60; i < 90; i++ {
		n := 1 + i%5
		before := next
		a := step(c, i, n, true)
		after := next
		next = before // the copy draws the same fresh tasks
		b := step(c2, i, n, false)
		next = after
		if a != b {
			bad("step %d after a snapshot: the original answered %s, the restored copy %s", i, a, b)
			return
		}
		group += 8
		if i%7 == 0 {
			version++
		}
	}
}

// Every curriculum frog offers passes the conformance suite.
func TestConformance(t *testing.T) {
	mks := map[string]func() Curriculum{
		"fixed": func() Curriculum { return &Fixed{D: 3} },
		"target": func() Curriculum {
			c, err := NewTarget(0.5, 2, 0.01)
			if err != nil {
				t.Fatal(err)
			}
			return c
		},
	}
	for _, s := range Strategies {
		mks[s] = func() Curriculum {
			cfg := DefaultReplayConfig()
			cfg.Strategy, cfg.Seed, cfg.FixedSet, cfg.Capacity = s, 7, 20, 64
			r, err := NewReplay(cfg)
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
	}
	mks[StrategyRounds] = func() Curriculum {
		cfg := DefaultRoundsConfig()
		cfg.Size, cfg.GroupSize, cfg.Updates, cfg.LastRound, cfg.Seed = 5, 4, 2, 3, 7
		r, err := NewRounds(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for name, mk := range mks {
		t.Run(name, func(t *testing.T) { conform(mk, t.Errorf) })
	}
}

// overPlanner is a broken strategy: its plans hold one task more than
// asked for.
type overPlanner struct{ *Replay }

func (o overPlanner) Plan(n int) Plan {
	p := o.Replay.Plan(n)
	p.Fresh++
	return p
}

// forgetful is a broken strategy: its snapshot holds nothing learned.
type forgetful struct{ *Replay }

func (f forgetful) Snapshot() ([]byte, error) {
	r, err := NewReplay(f.Replay.cfg)
	if err != nil {
		return nil, err
	}
	return r.Snapshot()
}

// The suite fails on a broken strategy: one whose plans are too long, and
// one whose snapshot forgets.
func TestConformanceCatches(t *testing.T) {
	mkReplay := func() *Replay {
		cfg := DefaultReplayConfig()
		cfg.Seed = 7
		r, err := NewReplay(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for name, mk := range map[string]func() Curriculum{
		"plans too long":   func() Curriculum { return overPlanner{mkReplay()} },
		"snapshot forgets": func() Curriculum { return forgetful{mkReplay()} },
	} {
		var got []string
		conform(mk, func(format string, args ...any) { got = append(got, fmt.Sprintf(format, args...)) })
		if len(got) == 0 {
			t.Errorf("%s: the suite found nothing wrong", name)
		} else {
			t.Logf("%s: %s", name, got[0])
		}
	}
}
