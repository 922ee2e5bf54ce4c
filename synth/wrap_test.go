package synth_test

import (
	"context"
	"testing"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/synth"
)

// plain is a Source and nothing more; steer adds TasksFor, comp adds
// Compound, both add both. Each answers one task named after the call.
type plain struct{}

func (plain) Tasks(context.Context, int, float64) ([]env.Task, error) {
	return []env.Task{{ID: "tasks"}}, nil
}

type steer struct{ plain }

func (steer) TasksFor(context.Context, int, synth.Knobs) ([]env.Task, error) {
	return []env.Task{{ID: "tasksfor"}}, nil
}

type comp struct{ plain }

func (comp) Compound(context.Context, int, env.Task) ([]env.Task, error) {
	return []env.Task{{ID: "compound"}}, nil
}

type both struct{ steer }

func (both) Compound(context.Context, int, env.Task) ([]env.Task, error) {
	return []env.Task{{ID: "compound"}}, nil
}

// A wrapped source keeps exactly the capabilities of the source it wraps,
// and every answer, whichever method gave it, passes through around.
func TestWrapKeepsCapabilities(t *testing.T) {
	for _, tc := range []struct {
		name        string
		src         synth.Source
		steer, comp bool
	}{
		{"plain", plain{}, false, false},
		{"steerable", steer{}, true, false},
		{"compounder", comp{}, false, true},
		{"both", both{}, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var seen []string
			w := synth.Wrap(tc.src, func(ctx context.Context, next func() ([]env.Task, error)) ([]env.Task, error) {
				tasks, err := next()
				for _, tk := range tasks {
					seen = append(seen, tk.ID)
				}
				return tasks, err
			})
			ctx := context.Background()
			want := []string{"tasks"}
			if _, err := w.Tasks(ctx, 1, 0.5); err != nil {
				t.Fatal(err)
			}
			s, ok := w.(synth.Steerable)
			if ok != tc.steer {
				t.Errorf("wrapped source Steerable = %v, want %v", ok, tc.steer)
			}
			if ok {
				if _, err := s.TasksFor(ctx, 1, synth.Knobs{}); err != nil {
					t.Fatal(err)
				}
				want = append(want, "tasksfor")
			}
			c, ok := w.(synth.Compounder)
			if ok != tc.comp {
				t.Errorf("wrapped source Compounder = %v, want %v", ok, tc.comp)
			}
			if ok {
				if _, err := c.Compound(ctx, 1, env.Task{}); err != nil {
					t.Fatal(err)
				}
				want = append(want, "compound")
			}
			if len(seen) != len(want) {
				t.Fatalf("around saw %v, want %v", seen, want)
			}
			for i := range want {
				if seen[i] != want[i] {
					t.Errorf("around saw %v, want %v", seen, want)
				}
			}
		})
	}
}
