package actors

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/frognano/frog/actors/wire"
	"github.com/frognano/frog/env"
)

// A trajectory crosses the wire as it would through its JSON on disk: every
// field of every step, those added later included (fillAll sets each one),
// comes back as the trajectory format has it.
func TestTrajectoryCrossesTheWireAsOnDisk(t *testing.T) {
	var full env.Step
	fillAll(reflect.ValueOf(&full).Elem(), 0)
	full.Action.Tool = env.ToolTry
	traj := &env.Trajectory{Task: "t", Episode: 3, Attempt: 2, Reward: 1, Submitted: true, RewardHackSuspected: "why",
		Executions: 4, Tries: 5, Steps: []env.Step{full, {Action: env.Action{Tool: env.ToolSubmit}}, {
			Action: env.Action{Tool: env.ToolView, Args: &env.ActionArgs{}},
			Result: env.StepResult{Output: "o", Duration: time.Second},
		}}}
	b, err := marshalTrajectory(traj)
	if err != nil {
		t.Fatal(err)
	}
	got, err := unmarshalTrajectory(b)
	if err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(traj)
	if err != nil {
		t.Fatal(err)
	}
	want := new(env.Trajectory)
	if err := json.Unmarshal(js, want); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("the wire and the JSON disagree (-json +wire):\n%s", d)
	}
	if d := cmp.Diff(traj.Steps[0], got.Steps[0]); d != "" {
		t.Errorf("a step with every field set lost some (-sent +received):\n%s", d)
	}
	for _, bad := range [][]byte{{0xff, 0xff}, {0x22, 0x05, 0x3a, 0x03, 0x15, 0x01}, b[:len(b)-1]} {
		if _, err := unmarshalTrajectory(bad); err == nil {
			t.Errorf("% x decoded as a trajectory", bad)
		}
	}
}

// The hand-written encoding is frog.proto's Trajectory: the generated
// types read what marshalTrajectory writes, and unmarshalTrajectory reads
// what the generated types write, packed or not.
func TestTrajectoryWireMatchesTheSchema(t *testing.T) {
	traj := fullTrajectory()
	b, err := marshalTrajectory(traj)
	if err != nil {
		t.Fatal(err)
	}
	got := new(wire.Trajectory)
	if err := proto.Unmarshal(b, got); err != nil {
		t.Fatal(err)
	}
	want := schemaTrajectory(t, traj)
	if d := cmp.Diff(want, got, protocmp.Transform()); d != "" {
		t.Errorf("the generated types read (-want +got):\n%s", d)
	}
	for _, deterministic := range []bool{false, true} {
		gb, err := proto.MarshalOptions{Deterministic: deterministic}.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		back, err := unmarshalTrajectory(gb)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(traj, back); d != "" {
			t.Errorf("read from the generated types' encoding (-sent +received):\n%s", d)
		}
	}
	// Text from a sandbox need not be UTF-8: it crosses as it is.
	traj.Steps[0].Result.Output = "cut \xe2\x82"
	b, _ = marshalTrajectory(traj)
	if back, err := unmarshalTrajectory(b); err != nil || back.Steps[0].Result.Output != traj.Steps[0].Result.Output {
		t.Errorf("output that is not UTF-8 came back as %q (%v)", back.Steps[0].Result.Output, err)
	}
}

// fullTrajectory is a trajectory whose first step has every field set.
func fullTrajectory() *env.Trajectory {
	var full env.Step
	fillAll(reflect.ValueOf(&full).Elem(), 0)
	full.Action.Tool = env.ToolTry
	full.Result.ExitCode, full.Action.Args.StartLine = -1, -3
	return &env.Trajectory{Task: "t", Episode: 3, Attempt: 2, Reward: 1, Submitted: true, RewardHackSuspected: "why",
		Executions: 4, Tries: 5, Steps: []env.Step{full, {Action: env.Action{Tool: env.ToolSubmit}}}}
}

// schemaTrajectory is t as the generated types have it.
func schemaTrajectory(t *testing.T, tr *env.Trajectory) *wire.Trajectory {
	t.Helper()
	w := &wire.Trajectory{Task: tr.Task, Episode: tr.Episode, Attempt: int32(tr.Attempt), Reward: tr.Reward, Submitted: tr.Submitted,
		RewardHackSuspected: []byte(tr.RewardHackSuspected), Executions: int32(tr.Executions), Tries: int32(tr.Tries)}
	bs := func(s string) []byte {
		if s == "" {
			return nil
		}
		return []byte(s)
	}
	for _, s := range tr.Steps {
		a, r := s.Action, s.Result
		ws := &wire.Step{Tool: uint32(a.Tool), Path: bs(a.Path), Old: bs(a.Old), New: bs(a.New), Version: a.Version, Logprob: a.LogProb,
			Output: bs(r.Output), Error: bs(r.Error), ExitCode: int64(r.ExitCode), Executions: int64(r.Executions), Cached: r.Cached,
			DurationNs: int64(r.Duration)}
		if d := a.Decision; d != nil {
			ws.Decision = &wire.Decision{Kind: d.Kind, Features: d.Features, Dim: int64(d.Dim), Chosen: int64(d.Chosen), Temperature: d.Temperature}
		}
		if x := a.Args; x != nil {
			ws.StartLine, ws.EndLine, ws.Query, ws.Mistake = int32(x.StartLine), int32(x.EndLine), bs(x.Query), bs(x.Mistake)
			for _, tn := range x.Tests {
				ws.Tests = append(ws.Tests, []byte(tn))
			}
			for _, l := range x.Lines {
				ws.Lines = append(ws.Lines, &wire.Line{File: bs(l.File), Line: int64(l.Line)})
			}
			for _, c := range x.Candidates {
				ws.Candidates = append(ws.Candidates, int64(c))
			}
		}
		var err error
		if a.Turn != nil {
			if ws.Turn, err = json.Marshal(a.Turn); err != nil {
				t.Fatal(err)
			}
		}
		if r.Detail != nil {
			if ws.Detail, err = json.Marshal(env.StepResult{Detail: r.Detail}); err != nil {
				t.Fatal(err)
			}
		}
		w.Steps = append(w.Steps, ws)
	}
	return w
}

// fillAll sets every exported field of v, recursively, to a value that is
// not its zero.
func fillAll(v reflect.Value, depth int) {
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fillAll(v.Field(i), depth+1)
			}
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fillAll(v.Elem(), depth)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range 2 {
			fillAll(v.Index(i), depth+1)
		}
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fillAll(k, depth+1)
		fillAll(e, depth+1)
		v.SetMapIndex(k, e)
	case reflect.String:
		v.SetString("s" + string(rune('a'+depth%26)))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(1 + depth))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(1 + depth%3))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(0.5 + float64(depth))
	}
}
