package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/rs/zerolog"

	"github.com/frognano/frog/actors"
)

// runDir is a run's directory: config.json written first, metrics.jsonl
// appended to as the learner updates, summary.json written last. JSON
// documents are written atomically (temporary file, fsync, rename). Each
// metrics record is written (one write of one line) as it is made, so a run
// killed at any point keeps every record up to the kill; a write that fails
// part way is cut back (jsonlFile); the file is synced at the end.
type runDir struct {
	path    string
	mu      sync.Mutex
	metrics *jsonlFile
}

// checkRunName refuses a run name that is not one plain path element: the
// name becomes runs/<name> and a container label, and "../x" or "a/b" would
// put the run elsewhere.
func checkRunName(name string) error {
	if name == "" {
		return nil // the command picks one
	}
	if len(name) > 64 || name[0] == '.' || name[0] == '-' ||
		strings.Trim(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != "" {
		return usagef("--name %q: want 1 to 64 letters, digits, '.', '_' or '-', not starting with '.' or '-' (use --run-dir to choose the directory)", name)
	}
	return nil
}

func createRunDir(path string, config any) (*runDir, error) {
	if err := os.MkdirAll(path, 0o755); err != nil {
		return nil, fmt.Errorf("run directory: %w", err)
	}
	if _, err := os.Stat(filepath.Join(path, "summary.json")); err == nil {
		return nil, usagef("run directory %s holds a finished run; pick another --name or --run-dir", path)
	}
	if err := writeJSONAtomic(filepath.Join(path, "config.json"), config); err != nil {
		return nil, err
	}
	f, err := openJSONL(filepath.Join(path, "metrics.jsonl"), os.O_TRUNC)
	if err != nil {
		return nil, fmt.Errorf("run directory: %w", err)
	}
	return &runDir{path: path, metrics: f}, nil
}

// onUpdate returns the learner's metrics hook: one JSON line per update.
func (d *runDir) onUpdate(log zerolog.Logger) func(actors.UpdateRecord) {
	var failed atomic.Bool
	return func(u actors.UpdateRecord) {
		if err := d.writeEvent(updateEvent(u)); err != nil && failed.CompareAndSwap(false, true) {
			log.Error().Err(err).Msg("write metrics.jsonl; later records are dropped silently")
		}
	}
}

// onCurriculum returns the curriculum's metrics hook: one JSON line each
// time the policy version it hears of advances.
func (d *runDir) onCurriculum(log zerolog.Logger) func(actors.CurriculumRecord) {
	return jsonLines[actors.CurriculumRecord](d, log)
}

// jsonLines appends each record to metrics.jsonl; it is safe for
// concurrent use (the learner and the curriculum write from their actors).
func jsonLines[T any](d *runDir, log zerolog.Logger) func(T) {
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

func (d *runDir) writeSummary(v any) error {
	if err := d.flush(); err != nil {
		return err
	}
	return writeJSONAtomic(filepath.Join(d.path, "summary.json"), v)
}

func (d *runDir) flush() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.metrics.f.Sync(); err != nil {
		return fmt.Errorf("sync metrics.jsonl: %w", err)
	}
	return nil
}

func (d *runDir) close() {
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
// sets a torn last line aside before: cutRunDir).
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
	if err := writeFileAtomic(aside, tail); err != nil {
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

// writeJSONAtomic writes v as indented JSON to path (writeFileAtomic).
func writeJSONAtomic(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", filepath.Base(path), err)
	}
	return writeFileAtomic(path, append(data, '\n'))
}

// writeFileAtomic writes data to path through a temporary file in the same
// directory, fsync and rename: a kill at any moment leaves the old file or
// the new one, whole.
func writeFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
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

// finish ends a command that ran a run: it writes the summary into the run
// directory (when there is one), prints it, and returns the run's error, or
// ErrInterrupted when a signal cut the run short.
func finish(w io.Writer, dir *runDir, rep interface{ print(io.Writer, bool) error }, asJSON, interrupted bool, runErr error) error {
	if dir != nil {
		if err := dir.writeSummary(rep); err != nil {
			runErr = errors.Join(runErr, err)
		}
	}
	if err := rep.print(w, asJSON); err != nil {
		return err
	}
	if runErr != nil {
		return runErr
	}
	if interrupted {
		return ErrInterrupted
	}
	return nil
}
