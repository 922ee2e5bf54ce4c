package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
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
		},
		Package: "example.com/tiny/calc", Family: "idiom",
		Mutations: []synth.Mutation{{Op: "nil-error", Family: "idiom", File: "calc/calc.go", Line: 3, EndLine: 3,
			Edits: []synth.Edit{{Offset: 10, Old: "err", New: "nil"}}}},
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
