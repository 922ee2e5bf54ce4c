package actors

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

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
	if _, err := unmarshalTrajectory([]byte{0xff, 0xff}); err == nil {
		t.Error("garbage decoded as a trajectory")
	}
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
