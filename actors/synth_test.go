package actors

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/synth"
)

// compounder makes k tasks on request, and compounds of a base: c of them,
// or an error when fail is set.
type compounder struct {
	c    int
	fail bool
}

func (s compounder) Tasks(_ context.Context, n int, _ float64) ([]env.Task, error) {
	out := make([]env.Task, n)
	for i := range out {
		out[i] = env.Task{ID: "plain"}
	}
	return out, nil
}

func (s compounder) Compound(_ context.Context, n int, base env.Task) ([]env.Task, error) {
	if s.fail {
		return nil, errors.New("base of another module")
	}
	out := make([]env.Task, min(n, s.c))
	for i := range out {
		out[i] = env.Task{ID: base.ID + "+1"}
	}
	return out, nil
}

// A request with a base asks a Compounder for compounds first and makes
// the rest of K as any request; a compound that fails is reported beside
// the tasks made instead.
func TestSynthAsksForCompounds(t *testing.T) {
	for _, tc := range []struct {
		name      string
		src       compounder
		wantIDs   []string
		wantErr   bool
		compounds int64
	}{
		{"two of three", compounder{c: 2}, []string{"b+1", "b+1", "plain"}, false, 2},
		{"none valid", compounder{c: 0}, []string{"plain", "plain", "plain"}, false, 0},
		{"failed", compounder{fail: true}, []string{"plain", "plain", "plain"}, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
				return slog.New(slog.DiscardHandler)
			}))
			defer sys.Shutdown()
			var runners sync.WaitGroup
			defer runners.Wait()
			pid := sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor {
				return &synthesizer{src: tc.src, maxInflight: 1, root: sys.Root, runners: &runners}
			}))
			defer sys.Root.Stop(pid)
			got := make(chan *SynthTasks, 1)
			reply := sys.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
				if m, ok := c.Message().(*SynthTasks); ok {
					got <- m
				}
			}))
			defer sys.Root.Stop(reply)
			sys.Root.Send(pid, &SynthRequest{K: 3, Base: &env.Task{ID: "b"}, ReplyTo: reply})
			select {
			case m := <-got:
				var ids []string
				for _, tk := range m.Tasks {
					ids = append(ids, tk.ID)
				}
				if len(ids) != len(tc.wantIDs) || (m.Err != nil) != tc.wantErr {
					t.Fatalf("tasks %v, err %v; want %v, error %v", ids, m.Err, tc.wantIDs, tc.wantErr)
				}
				for i := range ids {
					if ids[i] != tc.wantIDs[i] {
						t.Errorf("tasks %v, want %v", ids, tc.wantIDs)
						break
					}
				}
			case <-time.After(10 * time.Second):
				t.Fatal("no answer")
			}
			st, err := sys.Root.RequestFuture(pid, &GetStats{}, 5*time.Second).Result()
			if err != nil {
				t.Fatal(err)
			}
			if s := st.(*SynthStats); s.Compound != 1 || s.CompoundTasks != tc.compounds {
				t.Errorf("stats: %d compound requests, %d compound tasks; want 1, %d", s.Compound, s.CompoundTasks, tc.compounds)
			}
		})
	}
}

var _ synth.Compounder = compounder{}
