package run

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

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
	c := &Checkpoints{dir: dir, keep: 3}
	want := testCheckpoint(7)
	if err := c.Save(want); err != nil {
		t.Fatal(err)
	}
	got, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(got.Checkpoint, want); diff != "" || got.Format != CheckpointFormat || len(got.Skipped) != 0 {
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
			if _, err := LoadFile(file); err == nil || !strings.Contains(err.Error(), "corrupted") {
				t.Errorf("a checkpoint with %s changed loads: %v", field, err)
			}
		})
	}

	// An older frog's file: its fields at the top level, no checksum.
	older := filepath.Join(dir, "ckpt-older.json")
	os.WriteFile(older, []byte(`{"format":"frog-checkpoint/1","version":5,"updates":4,"results":40,"learner":"bGVhcm5lcg=="}`), 0o644)
	ck, err := LoadFile(older)
	if err != nil || ck.Format != CheckpointFormat1 || ck.Version != 5 || ck.Updates != 4 || string(ck.Learner) != "learner" {
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
			c := &Checkpoints{dir: dir, keep: 3}
			for v := int64(1); v <= 4; v++ {
				if err := c.Save(testCheckpoint(v)); err != nil {
					t.Fatal(err)
				}
			}
			tt.damage(t, dir)
			ck, err := Load(run)
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
