package env_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/frognano/frog/env"
	envsim "github.com/frognano/frog/env/sim"
)

// play drives ep through agent's actions in a fresh sandbox of task and
// returns its trajectory and its observations.
func play(t *testing.T, ep *env.Episode, task *env.Task, agent script) (env.Trajectory, []env.Observation) {
	t.Helper()
	p, err := envsim.New(envsim.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	sb, err := p.Open(context.Background(), env.OpenOptions{Task: task})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close(context.Background())
	var seen []env.Observation
	for {
		obs, ok := ep.Observation()
		if !ok {
			break
		}
		seen = append(seen, obs)
		act, _ := agent.Act(context.Background(), obs)
		if err := ep.Apply(context.Background(), sb, act); err != nil {
			t.Fatal(err)
		}
	}
	traj, err := ep.Finish(context.Background(), sb)
	if err != nil {
		t.Fatal(err)
	}
	return traj, seen
}

// TestResetIsANewEpisode plays two episodes on one Episode, reset between
// them, and each on an Episode of its own: the same trajectories and
// observations, and the first trajectory unchanged by the second episode.
func TestResetIsANewEpisode(t *testing.T) {
	first, second := newTask(), &env.Task{ID: "u", File: "other.go", Patch: "other\n", TestCmd: []string{"go", "test", "./x"}}
	fix := script{{Tool: env.ToolView, Path: "bug.go"}, {Tool: env.ToolEdit, Path: "bug.go", New: "fixed\n"}}
	wrong := script{{Tool: env.ToolEdit, Path: "other.go", New: "wrong\n"}, {Tool: env.ToolView, Path: "other.go"}}
	opts := env.RunOptions{MaxSteps: 5, Episode: 7}

	wantFirst, _ := play(t, env.NewEpisode(first, opts), first, fix)
	opts.Episode = 8
	wantSecond, wantObs := play(t, env.NewEpisode(second, opts), second, wrong)

	ep := new(env.Episode)
	opts.Episode = 7
	ep.Reset(first, opts)
	gotFirst, _ := play(t, ep, first, fix)
	kept := cmp.Diff(env.Trajectory{}, gotFirst) // gotFirst as it was
	opts.Episode = 8
	ep.Reset(second, opts)
	gotSecond, gotObs := play(t, ep, second, wrong)

	ignore := cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Duration" }, cmp.Ignore())
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"first trajectory", gotFirst, wantFirst},
		{"second trajectory", gotSecond, wantSecond},
		{"second episode's observations", gotObs, wantObs},
	} {
		if diff := cmp.Diff(c.got, c.want, ignore); diff != "" {
			t.Errorf("%s (-got +want):\n%s", c.name, diff)
		}
	}
	if diff := cmp.Diff(env.Trajectory{}, gotFirst); diff != kept {
		t.Errorf("the first trajectory changed when the Episode was reset and played again")
	}
}
