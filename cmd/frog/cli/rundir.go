package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/rs/zerolog"

	"github.com/frognano/frog/actors"
)

// runDir is a run's directory: config.json written first, metrics.jsonl
// appended to as the learner updates, summary.json written last. JSON
// documents are written atomically (temporary file, fsync, rename).
type runDir struct {
	path    string
	mu      sync.Mutex
	metrics *os.File
	buf     *bufio.Writer
	enc     *json.Encoder
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
	d := &runDir{path: path, metrics: f, buf: bufio.NewWriterSize(f, 64<<10)}
	d.enc = json.NewEncoder(d.buf)
	return d, nil
}

// onUpdate returns the learner's metrics hook: one JSON line per update.
func (d *runDir) onUpdate(log zerolog.Logger) func(actors.UpdateRecord) {
	failed := false
	return func(r actors.UpdateRecord) {
		d.mu.Lock()
		defer d.mu.Unlock()
		if err := d.enc.Encode(r); err != nil && !failed {
			failed = true
			log.Error().Err(err).Msg("write metrics.jsonl")
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
	if err := d.buf.Flush(); err != nil {
		return fmt.Errorf("write metrics.jsonl: %w", err)
	}
	return d.metrics.Sync()
}

func (d *runDir) close() {
	_ = d.flush()
	_ = d.metrics.Close()
}

// writeJSONAtomic writes v as indented JSON to path: a temporary file in the
// same directory, fsync, rename.
func writeJSONAtomic(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", filepath.Base(path), err)
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(append(data, '\n')); err != nil {
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
