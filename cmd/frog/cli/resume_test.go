package cli

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/frognano/frog/actors"
	"github.com/frognano/frog/curriculum"
	"github.com/frognano/frog/run"
)

// frog runs the command line as a user types it and returns its stderr.
func frog(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	err := Run(context.Background(), args, &out, &errb)
	return errb.String(), err
}

// firstCurriculumRecord is the first curriculum line of metrics.jsonl of
// version from on: a run resumed from a checkpoint of that version cuts
// the lines of the versions from it on, and writes its own.
func firstCurriculumRecord(t *testing.T, dir string, from int64) actors.CurriculumRecord {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		if !bytes.Contains(sc.Bytes(), []byte(`"kind":"curriculum"`)) {
			continue
		}
		var r actors.CurriculumRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		if r.Version >= from {
			return r
		}
	}
	t.Fatalf("no curriculum line of version %d on in %s/metrics.jsonl", from, dir)
	return actors.CurriculumRecord{}
}

// checkpointedCurriculum is the curriculum of dir's latest checkpoint, as
// the run's config makes it.
func checkpointedCurriculum(t *testing.T, dir string) curriculum.CurriculumStats {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		Config trainOptions `json:"config"`
	}
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	o := rec.Config
	cur, err := newCurriculum(o.curriculumSpec())
	if err != nil {
		t.Fatal(err)
	}
	ck, err := run.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ck.Curriculum) == 0 {
		t.Fatalf("%s holds no curriculum state", ck.File)
	}
	if err := cur.(curriculum.Snapshotter).Restore(ck.Curriculum); err != nil {
		t.Fatalf("%s: %v", ck.File, err)
	}
	return cur.Stats()
}

// latestVersion is the version of dir's latest checkpoint.
func latestVersion(t *testing.T, dir string) int64 {
	t.Helper()
	ck, err := run.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return ck.Version
}

// editLatest rewrites dir's latest checkpoint file with edit applied to
// its checkpoint's JSON object, under a checksum of the edited bytes (a
// state frog itself saved), or as an older frog wrote it (format 1: the
// fields at the top level, no checksum), and returns a function that puts
// the original back.
func editLatest(t *testing.T, dir string, older bool, edit func(map[string]json.RawMessage)) (restore func()) {
	t.Helper()
	ck, err := run.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	file := ck.File
	orig, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	// The file's own format (run.CheckpointFormat), spelled out here as
	// another tool would read it.
	type checkpointFile struct {
		Format     string          `json:"format"`
		Sum        string          `json:"sha256,omitempty"`
		Checkpoint json.RawMessage `json:"checkpoint,omitempty"`
	}
	var f checkpointFile
	if err := json.Unmarshal(orig, &f); err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(f.Checkpoint, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	body, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var data []byte
	if older {
		m["format"] = json.RawMessage(`"` + run.CheckpointFormat1 + `"`)
		data, err = json.Marshal(m)
	} else {
		sum := sha256.Sum256(body)
		data, err = json.Marshal(checkpointFile{Format: run.CheckpointFormat, Sum: hex.EncodeToString(sum[:]), Checkpoint: body})
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return func() {
		if err := os.WriteFile(file, orig, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestResumeContinuesTheCurriculum trains a little on real tasks, resumes,
// and checks that the resumed run's curriculum starts where the
// checkpoint left it (its first record counts the outcomes the checkpoint
// had observed, not zero); that a curriculum other than the run's, or a
// corrupted curriculum state, is a usage error; and that a checkpoint
// without a curriculum state (an older frog's) still resumes, with a
// warning and a fresh curriculum.
func TestResumeContinuesTheCurriculum(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test on a module")
	}
	tiny, err := filepath.Abs("../../../synth/validate/testdata/tiny")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOPROXY", "off")
	t.Setenv("GOTOOLCHAIN", "local")
	tmp := t.TempDir()
	tasks, ws, dir := filepath.Join(tmp, "tasks.jsonl"), filepath.Join(tmp, "ws"), filepath.Join(tmp, "run")
	if stderr, err := frog(t, "synth", "--source", tiny, "--n", "4", "--out", tasks, "--min-timeout", "5s", "--log-level", "warn"); err != nil {
		t.Fatalf("frog synth: %v\n%s", err, stderr)
	}
	if stderr, err := frog(t, "train", "--tasks", tasks, "--local", tiny, "--workspaces", ws, "--heldout", "", "--baselines", "random",
		"--episodes", "12", "--group-size", "2", "--groups-per-update", "1", "--refill-zero-variance=false", "--checkpoint-every", "2",
		"--sandbox", "process", "--device", "cpu", "--concurrency", "2", "--run-dir", dir, "--name", "t1", "--log-level", "warn", "--json"); err != nil {
		t.Fatalf("frog train: %v\n%s", err, stderr)
	}
	// frog report weighs the network of the run's last checkpoint over the
	// decisions its trajectories recorded.
	var rep bytes.Buffer
	if err := Run(context.Background(), []string{"report", dir, "--json"}, &rep, io.Discard); err != nil {
		t.Fatalf("frog report: %v", err)
	}
	var summary struct {
		Weights *run.Explanation `json:"weights"`
	}
	if err := json.Unmarshal(rep.Bytes(), &summary); err != nil || summary.Weights == nil || summary.Weights.Decisions == 0 || len(summary.Weights.Weights) == 0 {
		t.Errorf("frog report --json: %v; weights %+v: want the network's features weighed over the run's decisions", err, summary.Weights)
	}

	at := checkpointedCurriculum(t, dir)
	if at.Observed == 0 || at.Frontier == nil || at.Frontier.Buffer == 0 {
		t.Fatalf("the checkpoint's curriculum observed %d outcomes, buffer %+v: the test needs some", at.Observed, at.Frontier)
	}

	// --episodes is the whole run's budget: each resumption plays 4 more.
	resume := func(episodes int, extra ...string) (string, int64, error) {
		from := latestVersion(t, dir)
		stderr, err := frog(t, append([]string{"train", "--resume", dir, "--episodes", fmt.Sprint(episodes), "--log-level", "warn", "--json"}, extra...)...)
		return stderr, from, err
	}
	stderr, from, err := resume(16)
	if err != nil {
		t.Fatalf("frog train --resume: %v\n%s", err, stderr)
	}
	if strings.Contains(stderr, "starts fresh") {
		t.Errorf("resumed from a checkpoint with a curriculum state, the run warns:\n%s", stderr)
	}
	first := firstCurriculumRecord(t, dir, from)
	t.Logf("checkpoint: observed %d, buffer %d, fresh %d; the resumed run's first record: observed %d, frontier %+v",
		at.Observed, at.Frontier.Buffer, at.Frontier.Fresh, first.Observed, first.Frontier)
	if first.Observed != at.Observed || first.Frontier == nil || first.Frontier.Buffer < at.Frontier.Buffer {
		t.Errorf("the resumed curriculum's first record: observed %d, frontier %+v; the checkpoint's curriculum observed %d, buffer %d",
			first.Observed, first.Frontier, at.Observed, at.Frontier.Buffer)
	}
	if first.Frontier != nil && first.Frontier.Fresh < at.Frontier.Fresh {
		t.Errorf("the resumed curriculum counts %d fresh tasks served; the checkpoint's had %d", first.Frontier.Fresh, at.Frontier.Fresh)
	}

	// Another curriculum than the run's: a usage error, before anything runs.
	var ue *UsageError
	if stderr, _, err := resume(20, "--curriculum", "uniform"); !errors.As(err, &ue) || !strings.Contains(err.Error(), "the run's curriculum is frontier") {
		t.Errorf("--resume --curriculum uniform: %v; want a usage error naming the run's curriculum\n%s", err, stderr)
	}

	// A corrupted curriculum state: a usage error.
	at = checkpointedCurriculum(t, dir)
	restore := editLatest(t, dir, false, func(m map[string]json.RawMessage) {
		var c bytes.Buffer
		if err := json.Compact(&c, m["curriculum"]); err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(c.Bytes(), []byte(`"tick":`)) {
			t.Fatalf("no tick in the curriculum state %s", c.Bytes())
		}
		m["curriculum"] = bytes.Replace(c.Bytes(), []byte(`"tick":`), []byte(`"tick":9`), 1)
	})
	if stderr, _, err := resume(20); !errors.As(err, &ue) || !strings.Contains(err.Error(), "corrupted") {
		t.Errorf("resumed from a corrupted curriculum state: %v; want a usage error saying it is corrupted\n%s", err, stderr)
	}
	restore()

	// An older frog's checkpoint, without the curriculum's state: resumed,
	// with a warning, the curriculum fresh (and the budget counted from
	// the checkpoint: an older frog's does not say what was played).
	editLatest(t, dir, true, func(m map[string]json.RawMessage) {
		delete(m, "curriculum")
		delete(m, "pool")
	})
	stderr, from, err = resume(4)
	if err != nil {
		t.Fatalf("frog train --resume from a checkpoint without a curriculum state: %v\n%s", err, stderr)
	}
	if !strings.Contains(stderr, "starts fresh") {
		t.Errorf("resumed from a checkpoint without a curriculum state, the run does not warn that its curriculum starts fresh:\n%s", stderr)
	}
	if !strings.Contains(stderr, "older frog") {
		t.Errorf("resumed from an older frog's checkpoint, the run does not say so:\n%s", stderr)
	}
	if first := firstCurriculumRecord(t, dir, from); first.Observed != 0 {
		t.Errorf("a fresh curriculum's first record observed %d outcomes; want 0", first.Observed)
	}
	if at.Observed == 0 {
		t.Errorf("the fresh curriculum cannot be told from the restored one")
	}
}
