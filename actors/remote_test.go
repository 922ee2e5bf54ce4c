package actors

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/frognano/frog/actors/wire"
	"github.com/frognano/frog/env"
)

// Runs across processes are tested in cmd/frog/cli (remote_test.go), one
// remote per process: protoactor-go's remote sets gRPC's global logger at
// every start, a data race when two start in one process.

// A worker's result crosses as its wire form and comes back the same: the
// kind, the attempts, the trajectory (its steps: the observation history)
// and the error's kind, which errors.Is still sees on the trainer.
func TestEpisodeResultCrossesTheWire(t *testing.T) {
	task := &env.Task{ID: "t1"}
	spec := &episodeSpec{id: 7, group: 3, groupSize: 8, task: task}
	traj := &env.Trajectory{Task: "t1", Episode: 7, Attempt: 1, Reward: 1, Submitted: true, Tries: 2,
		Steps: []env.Step{{Action: env.Action{Tool: env.ToolView, Path: "a.go"}, Result: env.StepResult{Output: "1 package a"}}}}
	for _, tc := range []struct {
		name string
		in   EpisodeResult
		is   error
	}{
		{"completed", EpisodeResult{Kind: Completed, Trajectory: traj, Attempts: 2}, nil},
		{"infra", EpisodeResult{Kind: FailedInfra, Attempts: 3, Err: env.Infra(errors.New("sandbox crashed"))}, env.ErrInfra},
		{"cancelled", EpisodeResult{Kind: Cancelled, Attempts: 1, Err: fmt.Errorf("stop: %w", context.Canceled)}, context.Canceled},
		{"not utf-8", EpisodeResult{Kind: FailedInfra, Attempts: 1, Err: env.Infra(errors.New("go test said \xff\xfe"))}, env.ErrInfra},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			in.Episode = 7
			d, err := episodeDone(&in, 11)
			if err != nil {
				t.Fatal(err)
			}
			if d.Placement != 11 {
				t.Errorf("placement %d, want 11", d.Placement)
			}
			out := episodeResult(spec, d)
			if out.Kind != in.Kind || out.Attempts != in.Attempts || out.Task != task || out.Group != 3 || out.GroupSize != 8 {
				t.Errorf("got %+v from %+v", out, in)
			}
			if _, err := proto.Marshal(&wire.DoneBatch{Done: []*wire.EpisodeDone{d}}); err != nil {
				t.Errorf("the result does not encode: %v", err)
			}
			if (in.Err == nil) != (out.Err == nil) || in.Err != nil && (out.Err.Error() != wireText(in.Err.Error()) || !errors.Is(out.Err, tc.is)) {
				t.Errorf("error %v, want %v (is %v)", out.Err, in.Err, tc.is)
			}
			if in.Trajectory != nil {
				if out.Trajectory == nil || out.Trajectory.Reward != 1 || len(out.Trajectory.Steps) != 1 ||
					out.Trajectory.Steps[0].Result.Output != "1 package a" || out.Trajectory.Tries != 2 {
					t.Errorf("trajectory %+v, want %+v", out.Trajectory, in.Trajectory)
				}
			}
		})
	}
}

// A worker's result that cannot be read is an infrastructure failure of
// the episode, not a crash of the trainer.
func TestUnreadableResultIsAnInfraFailure(t *testing.T) {
	spec := &episodeSpec{id: 1, task: &env.Task{ID: "t"}}
	for _, d := range []*wire.EpisodeDone{
		{Episode: 1, Outcome: wire.Outcome_OUTCOME_COMPLETED, Trajectory: []byte("\xff\xff\xff not a trajectory")},
		{Episode: 1, Outcome: wire.Outcome(42)},
	} {
		if r := episodeResult(spec, d); r.Kind != FailedInfra || !errors.Is(r.Err, env.ErrInfra) {
			t.Errorf("%v: got %v %v, want an infrastructure failure", d, r.Kind, r.Err)
		}
	}
}

// Episodes go to the pool with the most free slots; this process's wins
// ties, and a full worker gets none.
func TestPickMostFree(t *testing.T) {
	a := &workerRef{name: "a", slots: 10, running: 4}
	b := &workerRef{name: "b", slots: 10, running: 9}
	r := &remoteState{workers: map[string]*workerRef{"a": a, "b": b}}
	for _, tc := range []struct {
		local int
		want  *workerRef
	}{{0, a}, {5, a}, {6, nil}, {9, nil}} {
		if got := r.pick(tc.local, "t"); got != tc.want {
			t.Errorf("local free %d: picked %v, want %v", tc.local, got, tc.want)
		}
	}
	a.running = 10
	if got := r.pick(0, "t"); got != b {
		t.Errorf("picked %v, want b (a is full)", got)
	}
}

// An episode goes where its task ran lately while that pool has a free
// slot, however many the others have; the most free slots decide among
// pools equally warm or cold.
func TestPickWarmFirst(t *testing.T) {
	a := &workerRef{name: "a", slots: 10, running: 9}
	b := &workerRef{name: "b", slots: 10, running: 0}
	r := &remoteState{workers: map[string]*workerRef{"a": a, "b": b}}
	a.tasks.add("x")
	r.localTasks.add("y")
	for _, tc := range []struct {
		task  string
		local int
		want  *workerRef
	}{
		{"x", 0, a}, {"x", 5, a}, // a is warm for x
		{"y", 5, nil}, {"y", 0, b}, // this process is warm for y, while it has a slot
		{"z", 5, b}, {"z", 10, nil}, // cold everywhere: most free
	} {
		if got := r.pick(tc.local, tc.task); got != tc.want {
			t.Errorf("task %s, local free %d: picked %v, want %v", tc.task, tc.local, got, tc.want)
		}
	}
	a.running = 10
	if got := r.pick(0, "x"); got != b {
		t.Errorf("picked %v, want b (a, warm, is full)", got)
	}
}

// A pool remembers the last recentTasksKept tasks and forgets the oldest.
func TestRecentTasksForgetsTheOldest(t *testing.T) {
	var rt recentTasks
	for i := range recentTasksKept + 2 {
		rt.add(fmt.Sprint(i))
		rt.add(fmt.Sprint(i)) // again: no second entry
	}
	if len(rt.has) != recentTasksKept {
		t.Fatalf("%d remembered, want %d", len(rt.has), recentTasksKept)
	}
	for i, want := range map[int]bool{0: false, 1: false, 2: true, recentTasksKept + 1: true} {
		if got := rt.contains(fmt.Sprint(i)); got != want {
			t.Errorf("task %d: remembered %v, want %v", i, got, want)
		}
	}
}

// A run's farewell ends once every worker answered or went: a worker that
// exits on the Leave without its answer getting out is not waited for.
func TestFarewellEndsWhenWorkersAnswerOrGo(t *testing.T) {
	system := actor.NewActorSystem()
	root := system.Root
	answers := root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		if _, ok := c.Message().(*wire.Leave); ok {
			c.Respond(&wire.Heartbeat{})
		}
	}))
	goes := root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		if _, ok := c.Message().(*wire.Leave); ok {
			c.Stop(c.Self())
		}
	}))
	done := make(chan struct{})
	pid := root.Spawn(actor.PropsFromProducer(func() actor.Actor {
		return &farewells{pids: []*actor.PID{answers, goes}, waiting: make(map[string]bool), done: done}
	}))
	defer root.Stop(pid)
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("the farewell still waits for a worker that answered or went")
	}
}

// A worker keeps the tasks it decoded by their record's bytes: the same
// bytes give the same task, another oracle or record gives none, and past
// decodedTasksKept the oldest is forgotten.
func TestDecodedTasksByRecord(t *testing.T) {
	var d decodedTasks
	rec := func(i int, oracle string) *wire.TaskRecord {
		return &wire.TaskRecord{Record: []byte(fmt.Sprintf(`{"id":"t%d"}`, i)), Oracle: []byte(oracle)}
	}
	t0 := &env.Task{ID: "t0"}
	d.add(rec(0, "fix"), t0)
	if got := d.get(rec(0, "fix")); got != t0 {
		t.Errorf("same bytes: got %v, want the task kept", got)
	}
	if got := d.get(rec(0, "other fix")); got != nil {
		t.Errorf("another oracle: got %v, want none", got)
	}
	for i := 1; i <= decodedTasksKept; i++ {
		d.add(rec(i, "fix"), &env.Task{ID: fmt.Sprint("t", i)})
	}
	if got := d.get(rec(0, "fix")); got != nil || len(d.byRecord) != decodedTasksKept {
		t.Errorf("past the bound: the oldest is %v and %d are kept, want none and %d", got, len(d.byRecord), decodedTasksKept)
	}
	if got := d.get(rec(decodedTasksKept, "fix")); got == nil || got.ID != fmt.Sprint("t", decodedTasksKept) {
		t.Errorf("the newest: got %v", got)
	}
}
