package gotask

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/rs/zerolog"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/synth"
	"github.com/frognano/frog/synth/store"
)

// checkedQuarantine is a Quarantine whose verdicts are known already: the
// tasks of bad were set aside, the others hold up (nothing is checked).
func checkedQuarantine(ids, bad []string) *Quarantine {
	q := NewQuarantine(nil, nil, nil, "test", zerolog.Nop())
	for _, id := range ids {
		q.checked[id] = nil
	}
	for _, id := range bad {
		q.checked[id] = fmt.Errorf("%w: its bug no longer fails its tests", synth.ErrQuarantined)
	}
	return q
}

// A quarantined store serves the tasks that hold up, however many of
// those it draws do not, and says it is exhausted when none holds up: it
// never answers with nothing (a run asked again and again, for ever).
func TestQuarantinedStoreNeverAnswersEmpty(t *testing.T) {
	for _, tc := range []struct {
		name     string
		good     int
		bad      int
		wantDone bool
	}{
		{"one good of 40", 1, 39, false},
		{"none good", 0, 40, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var recs []synth.TaskRecord
			var ids, bad []string
			for i := range tc.good + tc.bad {
				id := fmt.Sprintf("t%02d", i)
				recs = append(recs, synth.TaskRecord{Task: env.Task{ID: id, Difficulty: float64(i % 7),
					Mutations: []synth.Mutation{{Op: "op", File: "f.go"}}}})
				if i < tc.bad {
					bad = append(bad, id)
				} else {
					ids = append(ids, id)
				}
			}
			st, err := store.NewSource(recs, 1)
			if err != nil {
				t.Fatal(err)
			}
			src := checkedQuarantine(ids, bad).Source(st)
			for _, draw := range []func() ([]env.Task, error){
				func() ([]env.Task, error) { return src.Tasks(context.Background(), 2, 3) },
				func() ([]env.Task, error) {
					return src.(synth.Steerable).TasksFor(context.Background(), 2, synth.Knobs{Family: "f"})
				},
			} {
				got, err := draw()
				if tc.wantDone {
					if !errors.Is(err, synth.ErrExhausted) || len(got) != 0 {
						t.Errorf("got %d tasks, %v; want synth.ErrExhausted", len(got), err)
					}
					continue
				}
				if err != nil || len(got) == 0 {
					t.Fatalf("got %d tasks, %v; want the good one", len(got), err)
				}
				for _, tk := range got {
					if q := st.Len(); tk.ID != ids[0] {
						t.Errorf("served %s, which does not hold up (the store holds %d)", tk.ID, q)
					}
				}
			}
		})
	}
}
