package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rs/zerolog"

	"github.com/frognano/frog/actors"
	"github.com/frognano/frog/env"
)

// testCheckpoint is a checkpoint with every field set.
func testCheckpoint(v int64) actors.Checkpoint {
	return actors.Checkpoint{
		Progress: actors.Progress{Version: v, Updates: v, Results: 8 * v,
			Episodes:    actors.EpisodeCounts{Admitted: 8 * v, Completed: 8 * v, Solved: 3 * v, Retries: 1, Accounted: true},
			NextEpisode: uint64(9 * v), NextGroup: uint64(4 * v), Seconds: 1.5 * float64(v),
			Stats: actors.LearnerStats{Updates: v, Version: v, Results: 8 * v, Groups: 4 * v, Checkpoints: v}},
		Learner:    []byte(fmt.Sprintf("learner %d", v)),
		Curriculum: json.RawMessage(`{"tick":3}`),
		Pool:       []env.Task{{ID: "t1", Difficulty: 2}},
	}
}

// tamper rewrites a checkpoint file with edit applied to its checkpoint's
// JSON object, keeping the file's checksum (as a bit flip on disk would).
func tamper(t *testing.T, file string, edit func(map[string]any)) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var f checkpointFile
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(f.Checkpoint, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	if f.Checkpoint, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if data, err = json.Marshal(f); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCheckpointFileChecksumsEveryField: a checkpoint loads as it was
// saved, and a change to any of its fields — the version and the updates
// too, once outside the checksum — is refused as corrupted.
func TestCheckpointFileChecksumsEveryField(t *testing.T) {
	dir := t.TempDir()
	c := &checkpointDir{dir: dir, keep: 3}
	want := testCheckpoint(7)
	if err := c.Save(want); err != nil {
		t.Fatal(err)
	}
	got, err := loadCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(got.Checkpoint, want); diff != "" || got.Format != checkpointFileFormat || len(got.Skipped) != 0 {
		t.Fatalf("loaded %s (format %s, skipped %v); (-got +want):\n%s", got.File, got.Format, got.Skipped, diff)
	}
	file := got.File
	orig, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{"version", "updates", "results", "episodes", "next_episode", "next_group", "elapsed_seconds", "learner_stats", "learner", "curriculum", "pool"} {
		t.Run(field, func(t *testing.T) {
			tamper(t, file, func(m map[string]any) {
				if _, ok := m[field]; !ok {
					t.Fatalf("no %s in the checkpoint: %v", field, m)
				}
				switch v := m[field].(type) {
				case float64:
					m[field] = v + 1
				case string:
					m[field] = "AAAA" + v
				default:
					m[field] = nil
				}
			})
			defer os.WriteFile(file, orig, 0o644)
			if _, err := loadCheckpointFile(file); err == nil || !strings.Contains(err.Error(), "corrupted") {
				t.Errorf("a checkpoint with %s changed loads: %v", field, err)
			}
		})
	}

	// An older frog's file: its fields at the top level, no checksum.
	older := filepath.Join(dir, "ckpt-older.json")
	os.WriteFile(older, []byte(`{"format":"frog-checkpoint/1","version":5,"updates":4,"results":40,"learner":"bGVhcm5lcg=="}`), 0o644)
	ck, err := loadCheckpointFile(older)
	if err != nil || ck.Format != checkpointFormat1 || ck.Version != 5 || ck.Updates != 4 || string(ck.Learner) != "learner" {
		t.Errorf("an older frog's checkpoint: %+v, %v", ck, err)
	}
}

// corrupt flips a byte in the middle of file.
func corrupt(t *testing.T, file string) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0x01
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestLatestFallsBackToTheNewestCheckpointThatLoads: with latest missing,
// or naming a corrupted file, a run's checkpoint is the newest that loads,
// and what was passed over is named.
func TestLatestFallsBackToTheNewestCheckpointThatLoads(t *testing.T) {
	ckpt := func(v int) string { return fmt.Sprintf("ckpt-%08d.json", v) }
	tests := []struct {
		name    string
		damage  func(t *testing.T, dir string)
		want    int64 // 0: none loads
		skipped []string
	}{
		{"whole", func(*testing.T, string) {}, 4, nil},
		{"latest missing", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "latest")) }, 4, []string{"latest"}},
		{"latest corrupted", func(t *testing.T, dir string) { corrupt(t, filepath.Join(dir, ckpt(4))) }, 3, []string{ckpt(4)}},
		{"latest names a missing file", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, ckpt(4))) }, 3, []string{ckpt(4)}},
		{"two corrupted, latest missing", func(t *testing.T, dir string) {
			corrupt(t, filepath.Join(dir, ckpt(4)))
			corrupt(t, filepath.Join(dir, ckpt(3)))
			os.Remove(filepath.Join(dir, "latest"))
		}, 2, []string{"latest", ckpt(4), ckpt(3)}},
		{"none loads", func(t *testing.T, dir string) {
			for v := 2; v <= 4; v++ {
				corrupt(t, filepath.Join(dir, ckpt(v)))
			}
		}, 0, []string{ckpt(4), ckpt(3), ckpt(2)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := t.TempDir()
			dir := filepath.Join(run, "checkpoints")
			c := &checkpointDir{dir: dir, keep: 3}
			for v := int64(1); v <= 4; v++ {
				if err := c.Save(testCheckpoint(v)); err != nil {
					t.Fatal(err)
				}
			}
			tt.damage(t, dir)
			ck, err := loadCheckpoint(run)
			if tt.want == 0 {
				if err == nil {
					t.Fatalf("loaded %s; want an error", ck.File)
				}
				for _, s := range tt.skipped {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not name %s", err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ck.Version != tt.want || filepath.Base(ck.File) != ckpt(int(tt.want)) {
				t.Errorf("loaded %s, version %d; want version %d", ck.File, ck.Version, tt.want)
			}
			if len(ck.Skipped) != len(tt.skipped) {
				t.Fatalf("skipped %q; want %d naming %q", ck.Skipped, len(tt.skipped), tt.skipped)
			}
			for i, s := range tt.skipped {
				if !strings.Contains(ck.Skipped[i], s) {
					t.Errorf("skipped[%d] = %q; want it to name %s", i, ck.Skipped[i], s)
				}
			}
		})
	}
}

// fullFile is an appendFile on a disk with room bytes left: a write past
// them writes what fits and fails with ENOSPC; truncates fail when
// truncateFails says so.
type fullFile struct {
	*os.File
	room          int
	truncateFails bool
}

func (f *fullFile) Write(p []byte) (int, error) {
	if len(p) <= f.room {
		f.room -= len(p)
		return f.File.Write(p)
	}
	n, _ := f.File.Write(p[:f.room])
	f.room -= n
	return n, &os.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
}

func (f *fullFile) Truncate(size int64) error {
	if f.truncateFails {
		return &os.PathError{Op: "truncate", Path: f.Name(), Err: syscall.EIO}
	}
	st, err := f.Stat()
	if err != nil {
		return err
	}
	f.room += int(st.Size() - size)
	return f.File.Truncate(size)
}

// TestJSONLFileNeverGluesARecordOntoATornOne: a record whose write fails
// part way (a full disk) is cut back, and the next one is written whole on
// a line of its own; when the cut fails too, the next record still starts
// a line of its own.
func TestJSONLFileNeverGluesARecordOntoATornOne(t *testing.T) {
	for _, truncateFails := range []bool{false, true} {
		t.Run(fmt.Sprint("truncate fails=", truncateFails), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "metrics.jsonl")
			j, err := openJSONL(path, os.O_TRUNC)
			if err != nil {
				t.Fatal(err)
			}
			f := &fullFile{File: j.f.(*os.File), room: 20, truncateFails: truncateFails}
			j.f = f
			defer f.Close()
			if err := j.append([]byte(`{"update":1}`)); err != nil {
				t.Fatal(err)
			}
			if err := j.append([]byte(`{"update":2,"long":"xxxxxxxx"}`)); !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("append on a full disk: %v; want ENOSPC", err)
			}
			f.room = 1000 // room again
			if err := j.append([]byte(`{"update":3}`)); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			want := "{\"update\":1}\n{\"update\":3}\n"
			if truncateFails {
				want = "{\"update\":1}\n{\"updat\n{\"update\":3}\n" // a torn line readers skip
			}
			if got := string(data); got != want {
				t.Errorf("metrics.jsonl:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

// TestOpenJSONLAfterATornLine: a file that ends in a torn line gets its
// next record on a line of its own.
func TestOpenJSONLAfterATornLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shard.jsonl")
	if err := os.WriteFile(path, []byte("{\"a\":1}\n{\"a\""), 0o644); err != nil {
		t.Fatal(err)
	}
	j, err := openJSONL(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.append([]byte(`{"a":2}`)); err != nil {
		t.Fatal(err)
	}
	j.f.Close()
	data, _ := os.ReadFile(path)
	if got, want := string(data), "{\"a\":1}\n{\"a\"\n{\"a\":2}\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// lines writes n JSONL records made by f.
func lines(n0, n int, f func(i int) string) string {
	var b strings.Builder
	for i := n0; i <= n; i++ {
		b.WriteString(f(i) + "\n")
	}
	return b.String()
}

// TestCutRunDirBackToTheCheckpoint: a resumed run's directory keeps the
// records made by its checkpoint, each once: the updates up to it, the
// evaluations of policies up to it, the baselines, the curriculum records
// of the versions before it, the trajectories it had filed; a torn last
// line is set aside beside its file.
func TestCutRunDirBackToTheCheckpoint(t *testing.T) {
	run := t.TempDir()
	metrics := `{"kind":"baseline","policy":"random","solved":{"rate":0.1}}` + "\n" +
		lines(1, 5, func(i int) string {
			s := fmt.Sprintf(`{"kind":"update","update":%d,"version":%d}`+"\n"+`{"kind":"curriculum","version":%d}`, i, i, i)
			if i%2 == 0 {
				s += fmt.Sprintf("\n"+`{"kind":"eval","policy":"neural","at_update":%d,"solved":{"rate":0.5}}`, i)
			}
			return s
		}) + "not json\n" + `{"kind":"update","upd`
	if err := os.WriteFile(filepath.Join(run, "metrics.jsonl"), []byte(metrics), 0o644); err != nil {
		t.Fatal(err)
	}
	traj := filepath.Join(run, "trajectories")
	os.MkdirAll(traj, 0o755)
	episode := func(i int) string { return fmt.Sprintf(`{"episode":%d}`, i) }
	os.WriteFile(filepath.Join(traj, "shard-00000.jsonl"), []byte(lines(1, 8, episode)), 0o644)
	os.WriteFile(filepath.Join(traj, "shard-00001.jsonl"), []byte(lines(9, 12, episode)+`{"epi`), 0o644)
	os.WriteFile(filepath.Join(traj, "shard-00002.jsonl"), []byte(lines(13, 14, episode)), 0o644)

	ck := loadedCheckpoint{Checkpoint: actors.Checkpoint{Progress: actors.Progress{Version: 3, Updates: 3, Results: 10}}, File: "ckpt-00000003.json", Format: checkpointFileFormat}
	evals, err := cutRunDir(run, ck, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(run, "metrics.jsonl"))
	want := `{"kind":"baseline","policy":"random","solved":{"rate":0.1}}` + "\n" +
		`{"kind":"update","update":1,"version":1}` + "\n" + `{"kind":"curriculum","version":1}` + "\n" +
		`{"kind":"update","update":2,"version":2}` + "\n" + `{"kind":"curriculum","version":2}` + "\n" +
		`{"kind":"eval","policy":"neural","at_update":2,"solved":{"rate":0.5}}` + "\n" +
		`{"kind":"update","update":3,"version":3}` + "\n" + "not json\n"
	if diff := cmp.Diff(string(got), want); diff != "" {
		t.Errorf("metrics.jsonl cut back (-got +want):\n%s", diff)
	}
	var kinds []string
	for _, e := range evals {
		kinds = append(kinds, fmt.Sprintf("%s@%d", e.Kind, e.AtUpdate))
	}
	if diff := cmp.Diff(kinds, []string{"baseline@0", "eval@2"}); diff != "" {
		t.Errorf("evaluations kept (-got +want):\n%s", diff)
	}
	if torn, _ := filepath.Glob(filepath.Join(run, "metrics.jsonl.torn-*")); len(torn) != 1 {
		t.Errorf("torn lines set aside: %v; want one file", torn)
	} else if data, _ := os.ReadFile(torn[0]); string(data) != `{"kind":"update","upd` {
		t.Errorf("set aside %q", data)
	}

	shard := func(n int) string {
		data, err := os.ReadFile(filepath.Join(traj, fmt.Sprintf("shard-%05d.jsonl", n)))
		if errors.Is(err, os.ErrNotExist) {
			return "gone"
		}
		return string(data)
	}
	if got := []string{shard(0), shard(1), shard(2)}; !cmp.Equal(got, []string{lines(1, 8, episode), lines(9, 10, episode), "gone"}) {
		t.Errorf("shards cut back to 10 episodes: %q", got)
	}

	// Cut again, to fewer episodes than the first shard holds: the next
	// shards go; to more than there are (their writes failed): every
	// whole record stays.
	ck.Results = 6
	if _, err := cutRunDir(run, ck, zerolog.Nop()); err != nil {
		t.Fatal(err)
	}
	if got := []string{shard(0), shard(1)}; !cmp.Equal(got, []string{lines(1, 6, episode), "gone"}) {
		t.Errorf("shards cut back to 6 episodes: %q", got)
	}
	os.WriteFile(filepath.Join(traj, "shard-00000.jsonl"), []byte(lines(1, 6, episode)+`{"ep`), 0o644)
	ck.Results = 9
	if _, err := cutRunDir(run, ck, zerolog.Nop()); err != nil {
		t.Fatal(err)
	}
	if got := shard(0); got != lines(1, 6, episode) {
		t.Errorf("shard with a torn line, short of the checkpoint's episodes: %q", got)
	}
	if torn, _ := filepath.Glob(filepath.Join(traj, "shard-00000.jsonl.torn-*")); len(torn) != 1 {
		t.Errorf("torn lines set aside: %v; want one file", torn)
	}
}

// TestReportDrawsEachUpdateOnce: metrics of a run resumed by an older
// frog hold the updates after its checkpoint twice; the report draws the
// later copy, once.
func TestReportDrawsEachUpdateOnce(t *testing.T) {
	run := t.TempDir()
	var b bytes.Buffer
	for i, u := range []int{1, 2, 3, 4, 5, 4, 5, 6} {
		fmt.Fprintf(&b, `{"kind":"update","update":%d,"train_pass_rate":%v}`+"\n", u, float64(i)/10)
	}
	fmt.Fprintf(&b, `{"kind":"eval","at_update":4,"solved":{"rate":0.1}}`+"\n"+`{"kind":"eval","at_update":4,"solved":{"rate":0.2}}`+"\n")
	os.WriteFile(filepath.Join(run, "metrics.jsonl"), b.Bytes(), 0o644)
	s, err := readRun(run)
	if err != nil {
		t.Fatal(err)
	}
	var got [][2]float64
	for _, p := range s.Train {
		got = append(got, [2]float64{p.X, p.Y})
	}
	want := [][2]float64{{1, 0}, {2, 0.1}, {3, 0.2}, {4, 0.5}, {5, 0.6}, {6, 0.7}}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("training curve (-got +want):\n%s", diff)
	}
	if len(s.Heldout) != 1 || s.Heldout[0].Solved.Rate != 0.2 {
		t.Errorf("held-out evaluations %+v; want the later one at update 4", s.Heldout)
	}
}
