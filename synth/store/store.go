package store

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/frognano/frog/synth"
)

// ErrMalformed marks a line that is not a task record.
var ErrMalformed = errors.New("malformed task record")

// Write encodes records to w, one per line.
func Write(w io.Writer, recs ...synth.TaskRecord) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	for _, r := range recs {
		if err := enc.Encode(r); err != nil {
			return fmt.Errorf("encode task %s: %w", r.ID, err)
		}
	}
	return bw.Flush()
}

// Append adds records to the JSONL file at path, creating it if needed, and
// syncs it.
func Append(path string, recs ...synth.TaskRecord) (err error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("append tasks: %w", err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("append tasks to %s: %w", path, cerr)
		}
	}()
	if err := Write(f, recs...); err != nil {
		return fmt.Errorf("append tasks to %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("append tasks to %s: %w", path, err)
	}
	return nil
}

// Read decodes every record from r. Blank lines are skipped; a line that is
// not a JSON object, or has no instance_id, fails with its 1-based number
// and an error wrapping ErrMalformed.
func Read(r io.Reader) ([]synth.TaskRecord, error) {
	var recs []synth.TaskRecord
	br := bufio.NewReader(r)
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var rec synth.TaskRecord
			if derr := json.Unmarshal(line, &rec); derr != nil {
				return nil, fmt.Errorf("line %d: %w: %w", n, ErrMalformed, derr)
			}
			if rec.ID == "" {
				return nil, fmt.Errorf("line %d: %w: no instance_id", n, ErrMalformed)
			}
			recs = append(recs, rec)
		}
		if err == io.EOF {
			return recs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
	}
}

// Load reads the JSONL file at path.
func Load(path string) ([]synth.TaskRecord, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("load tasks: %w", err)
	}
	defer f.Close()
	recs, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("load tasks from %s: %w", path, err)
	}
	return recs, nil
}
