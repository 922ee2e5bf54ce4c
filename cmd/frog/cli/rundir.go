package cli

import (
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
// killed at any point keeps every record up to the kill; the file is synced
// at the end.
type runDir struct {
	path    string
	mu      sync.Mutex
	metrics *os.File
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
	f, err := os.OpenFile(filepath.Join(path, "metrics.jsonl"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
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
			_, err = d.metrics.Write(append(line, '\n'))
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
	if err := d.metrics.Sync(); err != nil {
		return fmt.Errorf("sync metrics.jsonl: %w", err)
	}
	return nil
}

func (d *runDir) close() {
	_ = d.flush()
	_ = d.metrics.Close()
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
