package store

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/frognano/frog/synth"
)

// ErrMalformed marks a line that is not a task record.
var ErrMalformed = errors.New("malformed task record")

// ErrTorn says that a store does not end at a line boundary: its last
// write was cut short (a crash, a full disk). Repair sets the torn line
// aside.
var ErrTorn = errors.New("store ends in a torn line")

// LineError is an error about one line of a store.
type LineError struct {
	Line int // 1-based
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

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
// syncs it. It never glues a record onto a torn last line: when the file
// does not end in a newline it fails with ErrTorn and writes nothing
// (Repair the store first).
func Append(path string, recs ...synth.TaskRecord) (err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("append tasks: %w", err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("append tasks to %s: %w", path, cerr)
		}
	}()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("append tasks to %s: %w", path, err)
	}
	if n := st.Size(); n > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, n-1); err != nil {
			return fmt.Errorf("append tasks to %s: %w", path, err)
		}
		if last[0] != '\n' {
			return fmt.Errorf("append tasks to %s: %w", path, ErrTorn)
		}
	}
	if err := Write(f, recs...); err != nil {
		return fmt.Errorf("append tasks to %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("append tasks to %s: %w", path, err)
	}
	return nil
}

// Repair makes the store at path end at a line boundary, so that records
// appended next start on a line of their own. A last line without its
// newline that holds a valid record gets the newline. Any other torn last
// line is copied to a file beside the store, path + ".torn-" + a hash of
// the bytes (synced before the store is cut), and cut off; Repair returns
// that file's name. Every complete line is kept as it was. A missing or
// empty store, or one that ends in a newline, is left alone ("", nil).
func Repair(path string) (aside string, err error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("repair %s: %w", path, err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("repair %s: %w", path, cerr)
		}
	}()
	data, err := io.ReadAll(f)
	if err != nil {
		return "", fmt.Errorf("repair %s: %w", path, err)
	}
	if len(data) == 0 || data[len(data)-1] == '\n' {
		return "", nil
	}
	keep := bytes.LastIndexByte(data, '\n') + 1
	tail := data[keep:]
	if _, err := decode(tail); err == nil {
		if _, err := f.WriteAt([]byte("\n"), int64(len(data))); err != nil {
			return "", fmt.Errorf("repair %s: %w", path, err)
		}
		if err := f.Sync(); err != nil {
			return "", fmt.Errorf("repair %s: %w", path, err)
		}
		return "", nil
	}
	sum := sha256.Sum256(tail)
	aside = path + ".torn-" + hex.EncodeToString(sum[:6])
	if err := writeSynced(aside, tail); err != nil {
		return "", fmt.Errorf("repair %s: set the torn line aside: %w", path, err)
	}
	if err := f.Truncate(int64(keep)); err != nil {
		return "", fmt.Errorf("repair %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return "", fmt.Errorf("repair %s: %w", path, err)
	}
	return aside, nil
}

func writeSynced(path string, data []byte) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

// decode parses one line and validates the record (synth.TaskRecord's
// Validate).
func decode(line []byte) (synth.TaskRecord, error) {
	var rec synth.TaskRecord
	if err := json.Unmarshal(line, &rec); err != nil {
		return rec, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if rec.ID == "" {
		return rec, fmt.Errorf("%w: no instance_id", ErrMalformed)
	}
	if err := rec.Validate(); err != nil {
		return rec, fmt.Errorf("task %s: %w", rec.ID, err)
	}
	return rec, nil
}

// Read decodes every record from r. Blank lines are skipped. A line that is
// not a JSON object or has no instance_id (ErrMalformed), or whose record
// is not a usable task (synth.ErrInvalid: see TaskRecord.Validate), fails
// with a *LineError naming its 1-based number; a malformed last line with
// no newline is reported as torn (ErrTorn).
func Read(r io.Reader) ([]synth.TaskRecord, error) {
	var recs []synth.TaskRecord
	br := bufio.NewReader(r)
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			rec, derr := decode(line)
			if derr != nil && err == io.EOF && errors.Is(derr, ErrMalformed) {
				derr = fmt.Errorf("%w (no newline: a write cut short): %w", ErrTorn, derr)
			}
			if derr != nil {
				return nil, &LineError{Line: n, Err: derr}
			}
			recs = append(recs, rec)
		}
		if err == io.EOF {
			return recs, nil
		}
		if err != nil {
			return nil, &LineError{Line: n, Err: err}
		}
	}
}

// Dedup returns recs with each instance_id once, the first record of an
// id kept, and the ids that were repeated, once each. A store that holds
// one task twice (two stores concatenated, a run appended twice) would
// have it played, and counted, twice. Records that repeat an id with other
// content are an error: which of them a run played, and which one its
// caches and verdicts are of, would be a guess.
func Dedup(recs []synth.TaskRecord) ([]synth.TaskRecord, []string, error) {
	first := make(map[string]int, len(recs))
	repeated := map[string]bool{}
	out := recs[:0:0]
	var dups []string
	for i := range recs {
		j, seen := first[recs[i].ID]
		if !seen {
			first[recs[i].ID] = i
			out = append(out, recs[i])
			continue
		}
		a, errA := json.Marshal(recs[j])
		b, errB := json.Marshal(recs[i])
		if errA != nil || errB != nil || !bytes.Equal(a, b) {
			return nil, nil, fmt.Errorf("task %s: records %d and %d have this instance_id and differ: %w", recs[i].ID, j+1, i+1, ErrMalformed)
		}
		if !repeated[recs[i].ID] {
			repeated[recs[i].ID] = true
			dups = append(dups, recs[i].ID)
		}
	}
	return out, dups, nil
}

// Load reads the JSONL file at path. An error about a line names it as
// path:line.
func Load(path string) ([]synth.TaskRecord, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("load tasks: %w", err)
	}
	defer f.Close()
	recs, err := Read(f)
	var le *LineError
	if errors.As(err, &le) {
		return nil, fmt.Errorf("%s:%d: %w", path, le.Line, le.Err)
	}
	if err != nil {
		return nil, fmt.Errorf("load tasks from %s: %w", path, err)
	}
	return recs, nil
}
