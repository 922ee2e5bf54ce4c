package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/synth"
	"github.com/google/go-cmp/cmp"
)

func sample(id string) synth.TaskRecord {
	return synth.TaskRecord{
		Task: env.Task{
			ID: id, Repo: "example.com/tiny", Difficulty: 0.5, File: "calc/calc.go",
			Patch: "--- a/calc/calc.go\n+++ b/calc/calc.go\n", ProblemStatement: "TestSqrt fails <here>",
			FailToPass: []string{"TestSqrt"}, PassToPass: []string{"TestMax"},
			TestCmd: []string{"go", "test", "./calc"},
			Package: "example.com/tiny/calc",
			Mutations: []synth.Mutation{{Op: "nil-error", Family: "idiom", File: "calc/calc.go", Line: 3, EndLine: 3,
				Edits: []synth.Edit{{Offset: 10, Old: "err", New: "nil"}}}},
		},
		Family:         "idiom",
		Features:       synth.Features{K: 1, Complexity: 2, FailToPass: 1},
		Validation:     synth.Validation{Outcome: "valid", Runs: 2, DiffHash: "abc"},
		CoverageBlocks: []string{"calc.go:1.1,2.2"},
		Coverage:       map[string][]int{"TestSqrt": {0}},
	}
}

func TestRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tasks.jsonl")
	want := []synth.TaskRecord{sample("a"), sample("b")}
	if err := Append(path, want[0]); err != nil {
		t.Fatal(err)
	}
	if err := Append(path, want[1]); err != nil {
		t.Fatal(err)
	}
	got, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Load (-want +got):\n%s", diff)
	}
}

func TestSWEBenchFields(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, sample("x")); err != nil {
		t.Fatal(err)
	}
	line := buf.String()
	for _, key := range []string{`"instance_id":"x"`, `"repo":`, `"patch":`, `"FAIL_TO_PASS":["TestSqrt"]`, `"PASS_TO_PASS":`, `"problem_statement":"TestSqrt fails <here>"`, `"mutations":`, `"features":`, `"validation":`} {
		if !strings.Contains(line, key) {
			t.Errorf("record lacks %s: %s", key, line)
		}
	}
	if strings.Count(line, "\n") != 1 {
		t.Errorf("record is not one line: %q", line)
	}
}

func TestReadMalformed(t *testing.T) {
	var good bytes.Buffer
	if err := Write(&good, sample("a")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		input string
		line  string
	}{
		{"bad json", good.String() + "\n{not json}\n", "line 3:"},
		{"no id", good.String() + `{"repo":"r"}` + "\n", "line 2:"},
		{"truncated last line", good.String() + good.String()[:20], "line 2:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Read(strings.NewReader(tt.input))
			if !errors.Is(err, ErrMalformed) || !strings.HasPrefix(err.Error(), tt.line) {
				t.Errorf("Read error = %v, want %q prefix wrapping ErrMalformed", err, tt.line)
			}
		})
	}
}

func TestSourceDrawsNearTheDifficulty(t *testing.T) {
	var recs []synth.TaskRecord
	for i := range 100 {
		r := sample(fmt.Sprint(i))
		r.Difficulty = float64(i) / 10 // 0 .. 9.9
		recs = append(recs, r)
	}
	src, err := NewSource(recs, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []float64{-5, 0, 4.2, 9.9, 20} {
		got, err := src.Tasks(context.Background(), 8, d)
		if err != nil || len(got) != 8 {
			t.Fatalf("Tasks(8, %v) = %d tasks, %v", d, len(got), err)
		}
		for _, tk := range got {
			if math.Abs(tk.Difficulty-min(max(d, 0), 9.9)) > 1.0 {
				t.Errorf("Tasks(8, %v) drew a task of difficulty %v", d, tk.Difficulty)
			}
		}
	}
	if _, err := NewSource(nil, 1); err == nil {
		t.Error("NewSource of no tasks succeeded")
	}
}

func TestReadTornLastLine(t *testing.T) {
	var good bytes.Buffer
	if err := Write(&good, sample("a")); err != nil {
		t.Fatal(err)
	}
	_, err := Read(strings.NewReader(good.String() + good.String()[:20]))
	if !errors.Is(err, ErrTorn) || !errors.Is(err, ErrMalformed) {
		t.Errorf("Read of a torn last line = %v, want ErrTorn and ErrMalformed", err)
	}
}

// A store whose records lack what a task needs, or whose paths leave the
// module, fails to load, naming the file and the line and what is wrong.
func TestLoadValidatesEveryRecord(t *testing.T) {
	tests := []struct {
		name   string
		change func(*synth.TaskRecord)
		want   string
	}{
		{"no test_cmd", func(r *synth.TaskRecord) { r.TestCmd = nil }, "no test_cmd"},
		{"empty FAIL_TO_PASS", func(r *synth.TaskRecord) { r.FailToPass = []string{} }, "no FAIL_TO_PASS test"},
		{"no PASS_TO_PASS", func(r *synth.TaskRecord) { r.PassToPass = nil }, "no PASS_TO_PASS test"},
		{"no patch", func(r *synth.TaskRecord) { r.Patch = "" }, "no patch"},
		{"no repo", func(r *synth.TaskRecord) { r.Repo = "" }, "no repo"},
		{"no mutations", func(r *synth.TaskRecord) { r.Mutations = nil }, "no mutations"},
		{"mutation without edits", func(r *synth.TaskRecord) { r.Mutations[0].Edits = nil }, "mutation 1 of calc/calc.go: no edits"},
		{"mutation leaves the module", func(r *synth.TaskRecord) { r.Mutations[0].File = "../../etc/passwd" }, `mutation 1: path "../../etc/passwd" leaves the module`},
		{"absolute mutation path", func(r *synth.TaskRecord) { r.Mutations[0].File = "/etc/passwd" }, `mutation 1: path "/etc/passwd" is absolute`},
		{"task file leaves the module", func(r *synth.TaskRecord) { r.File = "calc/../../x.go" }, `file: path "calc/../../x.go" leaves the module`},
		{"patch leaves the module", func(r *synth.TaskRecord) { r.Patch = "--- a/../x.go\n+++ b/../x.go\n" }, `patch: path "../x.go" leaves the module`},
		{"test_cmd package leaves the module", func(r *synth.TaskRecord) { r.TestCmd = []string{"go", "test", "../.."} }, `test_cmd package: path "../.." leaves the module`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bad := sample("bad")
			bad.Mutations = append([]synth.Mutation(nil), bad.Mutations...)
			tt.change(&bad)
			path := filepath.Join(t.TempDir(), "tasks.jsonl")
			if err := Append(path, sample("a"), sample("b"), bad, sample("c")); err != nil {
				t.Fatal(err)
			}
			_, err := Load(path)
			if err == nil {
				t.Fatalf("Load of a store with a task with %s succeeded", tt.name)
			}
			if !errors.Is(err, synth.ErrInvalid) || !strings.HasPrefix(err.Error(), path+":3: task bad: ") || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Load error = %v\nwant %q prefix, %q in it, wrapping synth.ErrInvalid", err, path+":3: task bad: ", tt.want)
			}
		})
	}
	for _, p := range []string{"calc/calc.go", "calc.go", ".", "a/../b.go"} {
		if err := synth.LocalPath(p); err != nil {
			t.Errorf("LocalPath(%q) = %v, want nil", p, err)
		}
	}
	for _, p := range []string{"", "..", "../a", "a/../../b", "/abs", "a\\..\\..\\b"} {
		if err := synth.LocalPath(p); err == nil {
			t.Errorf("LocalPath(%q) = nil, want an error", p)
		}
	}
}

// Appending after a crash mid-write: the torn last line is set aside, every
// complete line is kept, and the new record starts a line of its own.
func TestAppendAfterATornLastLine(t *testing.T) {
	var one bytes.Buffer
	if err := Write(&one, sample("c")); err != nil {
		t.Fatal(err)
	}
	torn := one.Bytes()[:one.Len()/2]
	path := filepath.Join(t.TempDir(), "tasks.jsonl")
	if err := Append(path, sample("a"), sample("b")); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(torn); err != nil {
		t.Fatal(err)
	}
	f.Close()

	if err := Append(path, sample("d")); !errors.Is(err, ErrTorn) {
		t.Fatalf("Append onto a torn line = %v, want ErrTorn", err)
	}
	aside, err := Repair(path)
	if err != nil {
		t.Fatal(err)
	}
	if aside == "" || !strings.HasPrefix(aside, path+".torn-") {
		t.Fatalf("Repair set the torn line aside in %q, want %s.torn-*", aside, path)
	}
	if got, err := os.ReadFile(aside); err != nil || !bytes.Equal(got, torn) {
		t.Errorf("the aside file holds %q (%v), want the torn bytes %q", got, err, torn)
	}
	if err := Append(path, sample("d")); err != nil {
		t.Fatal(err)
	}
	recs, err := Load(path)
	if err != nil {
		t.Fatalf("Load after Repair and Append: %v", err)
	}
	var ids []string
	for _, r := range recs {
		ids = append(ids, r.ID)
	}
	if diff := cmp.Diff([]string{"a", "b", "d"}, ids); diff != "" {
		t.Errorf("ids (-want +got):\n%s", diff)
	}
	if aside, err := Repair(path); aside != "" || err != nil {
		t.Errorf("Repair of a sound store = %q, %v; want nothing done", aside, err)
	}
}

// A last record that is whole but lacks its newline is kept: Repair adds
// the newline.
func TestRepairKeepsAWholeLastRecord(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, sample("a"), sample("b")); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tasks.jsonl")
	if err := os.WriteFile(path, bytes.TrimSuffix(buf.Bytes(), []byte("\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	if aside, err := Repair(path); aside != "" || err != nil {
		t.Fatalf("Repair = %q, %v; want the newline added and nothing set aside", aside, err)
	}
	if err := Append(path, sample("c")); err != nil {
		t.Fatal(err)
	}
	recs, err := Load(path)
	if err != nil || len(recs) != 3 {
		t.Fatalf("Load = %d records, %v; want 3", len(recs), err)
	}
	if _, err := Repair(filepath.Join(t.TempDir(), "none.jsonl")); err != nil {
		t.Errorf("Repair of a missing store: %v", err)
	}
}

// A long run through a window of the store sees every task of the window
// before any twice.
func TestSourceServesUnseenTasksFirst(t *testing.T) {
	var recs []synth.TaskRecord
	for i := range 100 {
		r := sample(fmt.Sprint(i))
		r.Difficulty = float64(i) / 10
		recs = append(recs, r)
	}
	src, err := NewSource(recs, 1)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for range 5 {
		got, err := src.Tasks(context.Background(), 2, 4.2) // a window of 10 tasks
		if err != nil {
			t.Fatal(err)
		}
		for _, tk := range got {
			seen[tk.ID]++
		}
	}
	if len(seen) != 10 {
		t.Errorf("10 draws from a window of 10 saw %d tasks (%v); want each once", len(seen), seen)
	}
}

func TestSourceTasksForDrawsTheBinAskedFor(t *testing.T) {
	mk := func(id, fam string) synth.TaskRecord {
		return synth.TaskRecord{Task: env.Task{ID: id, Repo: "m", Mutations: []env.Mutation{{Family: fam, File: "a.go"}}}}
	}
	src, err := NewSource([]synth.TaskRecord{mk("a", "token"), mk("b", "stmt"), mk("c", "token")}, 1)
	if err != nil {
		t.Fatal(err)
	}
	// The bin's task first; then, the bin spent, unseen tasks of the
	// nearest bins; then the bin's again: every round serves each task once.
	got, err := src.TasksFor(context.Background(), 6, synth.Knobs{Family: "stmt"})
	if err != nil || len(got) != 6 {
		t.Fatalf("TasksFor: %d tasks, %v", len(got), err)
	}
	for round := range 2 {
		if id := got[3*round].ID; id != "b" {
			t.Errorf("round %d: asked for stmt, first got task %s", round, id)
		}
		if ids := got[3*round+1].ID + got[3*round+2].ID; ids != "ac" && ids != "ca" {
			t.Errorf("round %d: the stmt task served, got %s; want the unseen a and c", round, ids)
		}
	}
	// No task of the family asked for: the best matches (module m) instead.
	if got, _ := src.TasksFor(context.Background(), 5, synth.Knobs{Family: "guard", Module: "m"}); len(got) != 5 {
		t.Errorf("TasksFor with no exact match: %d tasks, want 5 near matches", len(got))
	}
}

// A stored record's fault-localisation rank puts its task in a rank
// bucket, and TasksFor can ask for one.
func TestSourceBinsByRank(t *testing.T) {
	mk := func(id string, rank int) synth.TaskRecord {
		r := synth.TaskRecord{Task: env.Task{ID: id, Repo: "m", Mutations: []env.Mutation{{Family: "token", File: "a.go"}}}}
		r.Features.OchiaiRank = rank
		return r
	}
	src, err := NewSource([]synth.TaskRecord{mk("near", 1), mk("far", 12)}, 1)
	if err != nil {
		t.Fatal(err)
	}
	got, err := src.TasksFor(context.Background(), 1, synth.Knobs{Rank: "r10+"})
	if err != nil || len(got) != 1 || got[0].ID != "far" {
		t.Fatalf("TasksFor rank r10+: %v, %v; want the task ranked 12th", got, err)
	}
	if b := synth.BinOf(&got[0]); b.Rank != "r10+" || b.Family != "token" {
		t.Errorf("the served task's bin %+v: want token, rank r10+", b)
	}
}

// TestMarkServedTasksComeLast: the tasks marked served (a resumed run's
// curriculum holds them) are drawn only once every other task has been.
func TestMarkServedTasksComeLast(t *testing.T) {
	var recs []synth.TaskRecord
	for i := range 10 {
		recs = append(recs, sample(fmt.Sprint(i)))
	}
	src, err := NewSource(recs, 1)
	if err != nil {
		t.Fatal(err)
	}
	if n := src.MarkServed([]string{"0", "1", "2", "2", "nosuch"}); n != 3 {
		t.Errorf("MarkServed held %d of the ids; want 3", n)
	}
	got, err := src.TasksFor(context.Background(), 7, synth.Knobs{}) // any of the 10
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, tk := range got {
		ids = append(ids, tk.ID)
	}
	slices.Sort(ids)
	if diff := cmp.Diff(ids, []string{"3", "4", "5", "6", "7", "8", "9"}); diff != "" {
		t.Errorf("the first 7 draws of 10 tasks, 3 of them marked served (-got +want):\n%s", diff)
	}
}

// A dropped task is never drawn again; once every task is dropped a draw
// says the store is exhausted instead of answering with nothing.
func TestSourceDropsTasks(t *testing.T) {
	var recs []synth.TaskRecord
	for i := range 10 {
		recs = append(recs, sample(fmt.Sprint(i)))
	}
	src, err := NewSource(recs, 1)
	if err != nil {
		t.Fatal(err)
	}
	if n := src.Drop("0", "1", "2", "nosuch"); n != 3 {
		t.Errorf("Drop of 3 held ids and one other = %d, want 3", n)
	}
	for range 20 {
		got, err := src.Tasks(context.Background(), 3, 0.5)
		if err != nil {
			t.Fatal(err)
		}
		got2, err := src.TasksFor(context.Background(), 3, synth.Knobs{})
		if err != nil {
			t.Fatal(err)
		}
		for _, tk := range append(got, got2...) {
			if tk.ID == "0" || tk.ID == "1" || tk.ID == "2" {
				t.Fatalf("drew dropped task %s", tk.ID)
			}
		}
	}
	src.Drop("3", "4", "5", "6", "7", "8", "9")
	if got, err := src.Tasks(context.Background(), 2, 0.5); !errors.Is(err, synth.ErrExhausted) || len(got) != 0 {
		t.Errorf("Tasks from a store with every task dropped = %d tasks, %v; want synth.ErrExhausted", len(got), err)
	}
	if _, err := src.TasksFor(context.Background(), 2, synth.Knobs{}); !errors.Is(err, synth.ErrExhausted) {
		t.Errorf("TasksFor from a store with every task dropped: %v; want synth.ErrExhausted", err)
	}
}

// A store that holds a task twice gives it once, naming it; two different
// records under one id are refused.
func TestDedup(t *testing.T) {
	a, b, c := sample("a"), sample("b"), sample("c")
	got, dups, err := Dedup([]synth.TaskRecord{a, b, a, c, b, a})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range got {
		ids = append(ids, r.ID)
	}
	if diff := cmp.Diff(ids, []string{"a", "b", "c"}); diff != "" {
		t.Errorf("kept (-got +want):\n%s", diff)
	}
	if diff := cmp.Diff(dups, []string{"a", "b"}); diff != "" {
		t.Errorf("repeated (-got +want):\n%s", diff)
	}
	other := sample("a")
	other.ProblemStatement = "another statement"
	if _, _, err := Dedup([]synth.TaskRecord{a, b, other}); err == nil || !strings.Contains(err.Error(), "records 1 and 3") {
		t.Errorf("Dedup of two different records of id a: %v; want an error naming records 1 and 3", err)
	}
}
