package run

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/rs/zerolog"

	"github.com/frognano/frog/actors"
)

// Dir is a run's directory: config.json written first, metrics.jsonl
// appended to as the learner updates, summary.json written last. JSON
// documents are written atomically (temporary file, fsync, rename). Each
// metrics record is written (one write of one line) as it is made, so a run
// killed at any point keeps every record up to the kill; a write that fails
// part way is cut back (jsonlFile); the file is synced at the end.
//
// Its methods are safe for concurrent use (the learner's and the
// curriculum's actors write metrics from their own goroutines), except
// Close, which the run's owner calls once, after every writer is done.
type Dir struct {
	path    string
	mu      sync.Mutex
	metrics *jsonlFile
}

// ErrFinished is the error Create returns (wrapped) for a directory that
// holds a finished run: its summary.json is written.
var ErrFinished = errors.New("holds a finished run")

// Create makes the run directory path (and its parents) for a new run:
// config.json holds config, metrics.jsonl is made empty. A directory that
// holds a finished run is refused (ErrFinished); one that holds an
// unfinished run is started over (its metrics.jsonl emptied).
func Create(path string, config any) (*Dir, error) {
	if err := os.MkdirAll(path, 0o755); err != nil {
		return nil, fmt.Errorf("run directory: %w", err)
	}
	if _, err := os.Stat(filepath.Join(path, "summary.json")); err == nil {
		return nil, fmt.Errorf("run directory %s %w", path, ErrFinished)
	}
	if err := WriteJSONAtomic(filepath.Join(path, "config.json"), config); err != nil {
		return nil, err
	}
	f, err := openJSONL(filepath.Join(path, "metrics.jsonl"), os.O_TRUNC)
	if err != nil {
		return nil, fmt.Errorf("run directory: %w", err)
	}
	return &Dir{path: path, metrics: f}, nil
}

// Path is the directory's path, as Create or Resume was given it.
func (d *Dir) Path() string { return d.path }

// OnUpdate returns the learner's metrics hook (actors.Deps.OnUpdate): one
// JSON line per update. The first write that fails is logged; later
// records are dropped silently.
func (d *Dir) OnUpdate(log zerolog.Logger) func(actors.UpdateRecord) {
	var failed atomic.Bool
	return func(u actors.UpdateRecord) {
		if err := d.WriteEvent(UpdateEvent(u)); err != nil && failed.CompareAndSwap(false, true) {
			log.Error().Err(err).Msg("write metrics.jsonl; later records are dropped silently")
		}
	}
}

// OnCurriculum returns the curriculum's metrics hook
// (actors.Deps.OnCurriculum): one JSON line each time the policy version it
// hears of advances.
func (d *Dir) OnCurriculum(log zerolog.Logger) func(actors.CurriculumRecord) {
	return jsonLines[actors.CurriculumRecord](d, log)
}

// jsonLines appends each record to metrics.jsonl; it is safe for
// concurrent use (the learner and the curriculum write from their actors).
func jsonLines[T any](d *Dir, log zerolog.Logger) func(T) {
	var failed atomic.Bool
	return func(r T) {
		line, err := json.Marshal(r)
		d.mu.Lock()
		defer d.mu.Unlock()
		if err == nil {
			err = d.metrics.append(line)
		}
		if err != nil && failed.CompareAndSwap(false, true) {
			log.Error().Err(err).Msg("write metrics.jsonl; later records are dropped silently")
		}
	}
}

// WriteSummary syncs metrics.jsonl and then writes v, indented, as the
// run's summary.json (atomically): the run is finished.
func (d *Dir) WriteSummary(v any) error {
	if err := d.flush(); err != nil {
		return err
	}
	return WriteJSONAtomic(filepath.Join(d.path, "summary.json"), v)
}

func (d *Dir) flush() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.metrics.f.Sync(); err != nil {
		return fmt.Errorf("sync metrics.jsonl: %w", err)
	}
	return nil
}

// Close syncs and closes metrics.jsonl. The hooks must not be called
// after it.
func (d *Dir) Close() {
	_ = d.flush()
	_ = d.metrics.f.Close()
}

// jsonlFile is a JSONL file that records are appended to a whole line at
// a time. A write that fails part way (a full disk) is cut back to the last
// whole line, so that the next record is not glued onto a torn one; when
// even the cut fails, the next record starts a line of its own, and the
// torn line is one that readers skip. It is not safe for concurrent use.
type jsonlFile struct {
	f appendFile
	// size is the length of the file's whole lines, and of a torn line
	// that could not be cut back (torn): the next record's newline ends it.
	size int64
	torn bool
}

// appendFile is the file under a jsonlFile: an *os.File opened to append
// (O_APPEND: every write goes to the end, also after a cut), or in tests a
// file on a disk that fills up.
type appendFile interface {
	io.Writer
	Truncate(size int64) error
	Sync() error
	Close() error
}

// openJSONL opens path to append records to (flag adds to O_CREATE,
// O_WRONLY and O_APPEND: O_TRUNC for a new file). A file that does not end
// in a newline gets its next record on a line of its own (a resumed run
// sets a torn last line aside before: cutBack).
func openJSONL(path string, flag int) (*jsonlFile, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND|flag, 0o644)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	torn, err := endsTorn(path, st.Size())
	if err != nil {
		f.Close()
		return nil, err
	}
	return &jsonlFile{f: f, size: st.Size(), torn: torn}, nil
}

// endsTorn says whether the file at path, of size bytes, does not end in
// a newline.
func endsTorn(path string, size int64) (bool, error) {
	if size == 0 {
		return false, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	last := make([]byte, 1)
	if _, err := f.ReadAt(last, size-1); err != nil {
		return false, err
	}
	return last[0] != '\n', nil
}

// append writes record (one JSON document, without its newline) as a line.
func (j *jsonlFile) append(record []byte) error {
	line := make([]byte, 0, len(record)+2)
	if j.torn {
		line = append(line, '\n')
	}
	line = append(append(line, record...), '\n')
	n, err := j.f.Write(line)
	if err == nil {
		j.size += int64(n)
		j.torn = false
		return nil
	}
	if n > 0 {
		if terr := j.f.Truncate(j.size); terr != nil {
			j.torn = true
			j.size += int64(n)
		}
	}
	return err
}

// cutAside copies tail, the end of the file at path from offset keep on,
// to a file beside it named by its hash (synced), and then cuts the file
// at keep. It returns the name of the copy.
func cutAside(path string, tail []byte, keep int64) (string, error) {
	aside := path + ".torn-" + tornHash(tail)
	if err := WriteFileAtomic(aside, tail); err != nil {
		return "", fmt.Errorf("set the torn line of %s aside: %w", path, err)
	}
	if err := os.Truncate(path, keep); err != nil {
		return "", fmt.Errorf("cut the torn line of %s: %w", path, err)
	}
	return aside, nil
}

// tornHash names a torn line set aside by (a hash of) its bytes.
func tornHash(tail []byte) string {
	sum := sha256.Sum256(tail)
	return hex.EncodeToString(sum[:6])
}

// outputMode is the mode of the files WriteFileAtomic writes: those of
// the files frog creates with os.Create and OpenFile (0644; the umask is
// not applied, as Chmod does not).
const outputMode = 0o644

// WriteJSONAtomic writes v as indented JSON to path (WriteFileAtomic).
func WriteJSONAtomic(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", filepath.Base(path), err)
	}
	return WriteFileAtomic(path, append(data, '\n'))
}

// WriteFileAtomic writes data to path through a temporary file in the same
// directory, fsync and rename: a kill at any moment leaves the old file or
// the new one, whole. The file is readable by all (mode 0644, as frog's
// other outputs), not private like the temporary file it was.
func WriteFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := f.Chmod(outputMode); err != nil {
		f.Close()
		return fmt.Errorf("chmod %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("sync %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
