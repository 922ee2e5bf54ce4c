package env

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// forbidden are words no field a policy can see may be named after: what
// would tell the agent the answer rather than what it observed.
var forbidden = []string{"patch", "mutation", "gold", "buggy", "oracle", "difficulty", "coveragebl", "answer", "solution"}

// PolicyFacing are the types a policy is handed; everything reachable from
// them is policy-facing too.
var PolicyFacing = []reflect.Type{reflect.TypeFor[Observation](), reflect.TypeFor[TaskView]()}

// TestPolicyTypesHideTheAnswer fails if any type a policy can reach gains a
// field that could hold the gold patch, the mutation record, the buggy file
// or the store's coverage, or holds the harness's full Task record.
func TestPolicyTypesHideTheAnswer(t *testing.T) {
	problems, seen := leaks(PolicyFacing...)
	for _, p := range problems {
		t.Error(p)
	}
	if !seen[reflect.TypeFor[StepResult]()] || !seen[reflect.TypeFor[Candidate]()] || !seen[reflect.TypeFor[Decision]()] {
		t.Fatal("the walk missed the step results: it does not look where policies look")
	}
	// The check can fail: a type that hands a policy the Task, or a gold
	// patch by another name, is caught.
	type leaky struct {
		Obs       Observation
		Task      *Task
		GoldPatch string
	}
	if p, _ := leaks(reflect.TypeFor[leaky]()); len(p) != 3 {
		t.Errorf("a leaky type gave %d problems, want 3: %v", len(p), p)
	}
}

// leaks lists what in the types reachable from roots could give the answer
// away, and the types it saw.
func leaks(roots ...reflect.Type) (problems []string, seen map[reflect.Type]bool) {
	seen = map[reflect.Type]bool{}
	var walk func(typ reflect.Type, path string)
	walk = func(typ reflect.Type, path string) {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice || typ.Kind() == reflect.Array || typ.Kind() == reflect.Map {
			if typ.Kind() == reflect.Map {
				walk(typ.Key(), path+"[key]")
			}
			typ = typ.Elem()
		}
		if seen[typ] {
			return
		}
		seen[typ] = true
		if typ == reflect.TypeFor[Task]() {
			problems = append(problems, path+" is the harness's Task, which holds the gold patch: give policies a TaskView")
			return
		}
		if typ.Kind() != reflect.Struct {
			return
		}
		for i := range typ.NumField() {
			f := typ.Field(i)
			name := strings.ToLower(f.Name)
			for _, w := range forbidden {
				if strings.Contains(name, w) {
					problems = append(problems, fmt.Sprintf("%s.%s: a policy-facing field named like %q", path, f.Name, w))
				}
			}
			walk(f.Type, path+"."+f.Name)
		}
	}
	for _, typ := range roots {
		walk(typ, typ.Name())
	}
	return problems, seen
}

// TestTaskViewFields pins what a policy is told of its task: adding a field
// to TaskView must be a decision, made here, that it gives nothing away.
func TestTaskViewFields(t *testing.T) {
	var got []string
	typ := reflect.TypeFor[TaskView]()
	for i := range typ.NumField() {
		got = append(got, typ.Field(i).Name)
	}
	want := []string{"ID", "Repo", "ProblemStatement", "Dir", "FailToPass", "PassToPass"}
	if !slices.Equal(got, want) {
		t.Errorf("TaskView fields %v, want %v: review what the new ones tell an agent", got, want)
	}
	// The view carries no more than the task's public fields.
	task := &Task{ID: "x", Repo: "r", File: "secret.go", Patch: "--- a/secret.go", Difficulty: 3,
		ProblemStatement: "p", FailToPass: []string{"TestA"}, TestCmd: []string{"go", "test", "-run", "^TestA$", "./pkg"}}
	v := task.View()
	for _, s := range []string{"secret.go", "--- a/"} {
		if strings.Contains(strings.Join([]string{v.ID, v.Repo, v.ProblemStatement, v.Dir}, " "), s) {
			t.Errorf("the view of a task shows %q", s)
		}
	}
	if v.Dir != "pkg" {
		t.Errorf("view dir %q, want pkg", v.Dir)
	}
}
