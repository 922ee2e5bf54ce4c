package run

import (
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
)

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

	ck := Loaded{Checkpoint: actors.Checkpoint{Progress: actors.Progress{Version: 3, Updates: 3, Results: 10}}, File: "ckpt-00000003.json", Format: CheckpointFormat}
	evals, err := cutBack(run, ck, zerolog.Nop())
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
	if _, err := cutBack(run, ck, zerolog.Nop()); err != nil {
		t.Fatal(err)
	}
	if got := []string{shard(0), shard(1)}; !cmp.Equal(got, []string{lines(1, 6, episode), "gone"}) {
		t.Errorf("shards cut back to 6 episodes: %q", got)
	}
	os.WriteFile(filepath.Join(traj, "shard-00000.jsonl"), []byte(lines(1, 6, episode)+`{"ep`), 0o644)
	ck.Results = 9
	if _, err := cutBack(run, ck, zerolog.Nop()); err != nil {
		t.Fatal(err)
	}
	if got := shard(0); got != lines(1, 6, episode) {
		t.Errorf("shard with a torn line, short of the checkpoint's episodes: %q", got)
	}
	if torn, _ := filepath.Glob(filepath.Join(traj, "shard-00000.jsonl.torn-*")); len(torn) != 1 {
		t.Errorf("torn lines set aside: %v; want one file", torn)
	}
}

// TestWriteFileAtomicIsReadableByAll: a file written atomically (a replay
// table, config.json, a checkpoint) has the mode of frog's other outputs,
// 0644, not the 0600 of the temporary file it was written through.
func TestWriteFileAtomicIsReadableByAll(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"new.jsonl", "replaced.jsonl"} {
		path := filepath.Join(dir, name)
		if name == "replaced.jsonl" {
			if err := os.WriteFile(path, []byte("old\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if err := WriteFileAtomic(path, []byte("{}\n")); err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := st.Mode().Perm(), os.FileMode(0o644); got != want {
			t.Errorf("%s: mode %v, want %v", name, got, want)
		}
	}
}
