package neural

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/frognano/frog/cuda"
	"github.com/frognano/frog/env"
	"github.com/frognano/frog/policy"
)

func TestRecordedBatchesRoundTrip(t *testing.T) {
	_, batches := loadRecorded(t)
	for _, name := range []string{"b.jsonl", "b.jsonl.gz"} {
		path := filepath.Join(t.TempDir(), name)
		rec, err := NewBatchRecorder(path)
		if err != nil {
			t.Fatal(err)
		}
		l, err := NewLearner(cuda.NewCPU(), DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		var pl policy.Learner = Recording{Learner: l, To: rec}
		if _, ok := pl.(policy.Checkpointer); !ok {
			t.Fatal("a Recording learner does not checkpoint: a run that records would save none")
		}
		// A batch with a step of another kind and a step that made no
		// decision: the learner skips both, and so may the recording.
		extra := []policy.Group{{Task: &env.Task{ID: "t"}, TryCost: 0.1, Trajectories: []*env.Trajectory{{
			Task: "t", Reward: 1, Tries: 2, Steps: []env.Step{{Action: env.Action{Tool: env.ToolRunTests}, Result: env.StepResult{Output: strings.Repeat("x", 1000)}}}}}}}
		in := append([][]policy.Group{extra}, batches[:3]...)
		for _, g := range in {
			if _, _, err := pl.Update(context.Background(), g); err != nil {
				t.Fatal(err)
			}
		}
		if err := rec.Close(); err != nil {
			t.Fatal(err)
		}
		out, err := ReadBatches(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(out) != len(in) {
			t.Fatalf("%s: read %d batches, recorded %d", name, len(out), len(in))
		}
		if s := out[0][0].Trajectories[0]; len(s.Steps) != 0 || s.Reward != 1 || s.Tries != 2 || out[0][0].TryCost != 0.1 || out[0][0].Task.ID != "t" {
			t.Errorf("%s: the first batch came back as %+v", name, out[0][0])
		}
		// What the learner reads is kept: the same updates from the copy.
		a, _, _ := replay(t, cuda.NewCPU(), DefaultConfig(), in[1:])
		b, _, _ := replay(t, cuda.NewCPU(), DefaultConfig(), out[1:])
		if paramsSHA(a.Current().Params) != paramsSHA(b.Current().Params) {
			t.Errorf("%s: updates on the recorded batches differ from updates on the batches", name)
		}
	}
}

func TestReadBatchesErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, data, want string }{
		{"torn.jsonl", `{"format":"frog-neural-batch/1","update":1,"groups":[]}` + "\n" + `{"format":"frog-ne`, "torn.jsonl:2:"},
		{"other.jsonl", `{"format":"something/2","update":1}` + "\n", `other.jsonl:1: format "something/2"`},
		{"bad.jsonl.gz", "not gzip", "bad.jsonl.gz"},
	} {
		path := filepath.Join(dir, tc.name)
		if err := os.WriteFile(path, []byte(tc.data), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := ReadBatches(path)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming %q", tc.name, err, tc.want)
		}
	}
	if _, err := NewBatchRecorder(filepath.Join(dir, "no/such/dir/b.jsonl")); err == nil {
		t.Error("a recorder in a missing folder: no error")
	}
}

// TestRecordedBatchesReencode decodes every line of the recorded batches
// (a real run's trajectories) and encodes it again: the bytes must be the
// ones on file, so that env.Action and env.StepResult keep their wire
// format whatever their layout in memory.
func TestRecordedBatchesReencode(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "recorded-batches.jsonl.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(gz)
	sc.Buffer(make([]byte, 1<<20), 1<<30)
	lines := 0
	for sc.Scan() {
		lines++
		var line batchLine
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("line %d: %v", lines, err)
		}
		got, err := json.Marshal(line)
		if err != nil {
			t.Fatalf("line %d: %v", lines, err)
		}
		if !bytes.Equal(got, sc.Bytes()) {
			t.Errorf("line %d encodes to %d bytes, not the %d on file", lines, len(got), len(sc.Bytes()))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if lines == 0 {
		t.Fatal("no recorded batches")
	}
}
