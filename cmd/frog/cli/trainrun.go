package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/frognano/frog/actors"
	"github.com/frognano/frog/env"
)

// A training run's directory adds to runDir's:
//
//	trajectories/shard-00000.jsonl  every episode's record, 5,000 a shard
//	checkpoints/ckpt-<version>.json the learner's checkpoints (atomic writes)
//	checkpoints/latest              the name of the newest one
//
// and metrics.jsonl holds one JSON object a line with a "kind": "update"
// (one learner update), "eval" (a held-out evaluation) or "baseline" (a
// baseline on the held-out tasks).

// metricsEvent is one line of a training run's metrics.jsonl.
type metricsEvent struct {
	Kind string `json:"kind"`
	// Update lines.
	*actors.UpdateRecord
	// Throughput since the run (or its resumption) started.
	EpisodesPerSecond float64 `json:"episodes_per_second,omitempty"`
	TriesPerSecond    float64 `json:"tries_per_second,omitempty"`
	TrainPassRate     float64 `json:"train_pass_rate,omitempty"`
	ZeroSignalShare   float64 `json:"zero_signal_share,omitempty"`
	// Eval and baseline lines.
	Policy   string       `json:"policy,omitempty"`
	AtUpdate int64        `json:"at_update,omitempty"`
	Solved   *actors.Rate `json:"solved,omitempty"`
	// AtTries is the solve rate within 1, 5 and 10 tries: a policy that
	// learns what to try first gains there before its final rate moves.
	AtTries []actors.RateAt `json:"solved_at_tries,omitempty"`
	Elapsed float64         `json:"elapsed_seconds,omitempty"`
}

// updateEvent is the metrics line of one learner update.
func updateEvent(u actors.UpdateRecord) metricsEvent {
	e := metricsEvent{Kind: "update", UpdateRecord: &u}
	if u.Groups > 0 {
		e.ZeroSignalShare = float64(u.ZeroSignalGroups) / float64(u.Groups)
	}
	return e
}

// writeEvent appends one line to metrics.jsonl.
func (d *runDir) writeEvent(e metricsEvent) error {
	line, err := json.Marshal(e)
	if err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.metrics.append(line)
}

// openRunDirAppend reopens a run's metrics.jsonl to append to (a resumed
// run continues its curve, cut back to its checkpoint first: cutRunDir).
func openRunDirAppend(path string) (*runDir, error) {
	f, err := openJSONL(filepath.Join(path, "metrics.jsonl"), 0)
	if err != nil {
		return nil, fmt.Errorf("run directory: %w", err)
	}
	return &runDir{path: path, metrics: f}, nil
}

// shards writes trajectory records as JSONL shards of at most per lines.
// A record whose write fails is cut back (jsonlFile), and no record is
// written after it.
type shards struct {
	dir  string
	per  int
	mu   sync.Mutex
	f    *jsonlFile
	n    int
	next int
	err  error
}

func newShards(dir string, per int) (*shards, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	// Continue after the shards already there (a resumed run).
	names, _ := filepath.Glob(filepath.Join(dir, "shard-*.jsonl"))
	return &shards{dir: dir, per: per, next: len(names)}, nil
}

// write appends one record; the first error is kept and returned by close.
func (s *shards) write(v any) {
	line, err := json.Marshal(v)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return
	}
	if err != nil {
		s.err = err
		return
	}
	if s.f == nil || s.n >= s.per {
		if s.f != nil {
			s.f.f.Close()
		}
		s.f, s.err = openJSONL(filepath.Join(s.dir, fmt.Sprintf("shard-%05d.jsonl", s.next)), os.O_TRUNC)
		if s.err != nil {
			return
		}
		s.next++
		s.n = 0
	}
	if err := s.f.append(line); err != nil {
		s.err = err
	}
	s.n++
}

func (s *shards) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f != nil {
		s.err = errors.Join(s.err, s.f.f.Sync(), s.f.f.Close())
		s.f = nil
	}
	return s.err
}

// checkpointDir is the learner's checkpoint sink: each checkpoint a file
// written atomically (temporary file, fsync, rename), then the "latest"
// pointer the same way, so that a kill at any point leaves the previous
// checkpoint whole and pointed to. It keeps the newest keep files.
type checkpointDir struct {
	dir  string
	keep int
}

// A checkpoint file holds the actors' checkpoint under a format tag and
// the sha256 of its bytes as they are in the file, so that every field of
// it — the run's progress as much as the learner's and the curriculum's
// states — is under the checksum:
//
//	{"format":"frog-checkpoint/2","sha256":"…","checkpoint":{…}}
//
// The files of older frogs (frog-checkpoint/1) held the checkpoint's fields
// at the top level, under no checksum but the learner's own, and no
// progress but the version, updates and results; they still load.
const (
	checkpointFileFormat = "frog-checkpoint/2"
	checkpointFormat1    = "frog-checkpoint/1"
)

type checkpointFile struct {
	Format     string          `json:"format"`
	Sum        string          `json:"sha256,omitempty"`
	Checkpoint json.RawMessage `json:"checkpoint,omitempty"`
}

// encodeCheckpoint is the file of ck.
func encodeCheckpoint(ck actors.Checkpoint) ([]byte, error) {
	body, err := json.Marshal(ck)
	if err != nil {
		return nil, fmt.Errorf("encode checkpoint: %w", err)
	}
	sum := sha256.Sum256(body)
	data, err := json.Marshal(checkpointFile{Format: checkpointFileFormat, Sum: hex.EncodeToString(sum[:]), Checkpoint: body})
	if err != nil {
		return nil, fmt.Errorf("encode checkpoint: %w", err)
	}
	return append(data, '\n'), nil
}

// decodeCheckpoint reads a checkpoint file: its checkpoint and format, or
// an error that says why it is not one (corrupted, or not frog's).
func decodeCheckpoint(data []byte) (actors.Checkpoint, string, error) {
	var f checkpointFile
	if err := json.Unmarshal(data, &f); err != nil {
		return actors.Checkpoint{}, "", fmt.Errorf("does not parse (corrupted?): %v", err)
	}
	var ck actors.Checkpoint
	switch f.Format {
	case checkpointFileFormat:
		if sum := sha256.Sum256(f.Checkpoint); hex.EncodeToString(sum[:]) != f.Sum {
			return actors.Checkpoint{}, "", errors.New("fails its checksum: the file is corrupted")
		}
		if err := json.Unmarshal(f.Checkpoint, &ck); err != nil {
			return actors.Checkpoint{}, "", fmt.Errorf("does not parse (corrupted?): %v", err)
		}
	case checkpointFormat1:
		var old struct {
			Version, Updates, Results int64
			Learner                   []byte
			Curriculum                json.RawMessage
			Pool                      []env.Task
		}
		if err := json.Unmarshal(data, &old); err != nil {
			return actors.Checkpoint{}, "", fmt.Errorf("does not parse (corrupted?): %v", err)
		}
		ck = actors.Checkpoint{Progress: actors.Progress{Version: old.Version, Updates: old.Updates, Results: old.Results},
			Learner: old.Learner, Curriculum: old.Curriculum, Pool: old.Pool}
	default:
		return actors.Checkpoint{}, "", fmt.Errorf("is not a frog checkpoint (format %q)", f.Format)
	}
	return ck, f.Format, nil
}

func (c *checkpointDir) Save(ck actors.Checkpoint) error {
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return err
	}
	data, err := encodeCheckpoint(ck)
	if err != nil {
		return err
	}
	name := fmt.Sprintf("ckpt-%08d.json", ck.Version)
	if err := writeFileAtomic(filepath.Join(c.dir, name), data); err != nil {
		return err
	}
	if err := writeFileAtomic(filepath.Join(c.dir, "latest"), []byte(name+"\n")); err != nil {
		return err
	}
	c.prune(name)
	return nil
}

// prune removes the oldest checkpoints beyond keep, never the one just
// written (latest names it, whatever the others' versions: a directory may
// hold checkpoints of higher versions than the one a run writes now).
func (c *checkpointDir) prune(current string) {
	names, _ := filepath.Glob(filepath.Join(c.dir, "ckpt-*.json"))
	sort.Strings(names)
	for i := 0; len(names) > c.keep && i < len(names); {
		if filepath.Base(names[i]) == current {
			i++
			continue
		}
		os.Remove(names[i])
		names = append(names[:i], names[i+1:]...)
	}
}

// loadedCheckpoint is a checkpoint as loadCheckpoint found it: its file and
// format, and the newer files it passed over, each with why.
type loadedCheckpoint struct {
	actors.Checkpoint
	File    string
	Format  string
	Skipped []string
}

// loadCheckpoint reads the checkpoint a path names: a checkpoint file, or
// a run directory (or its checkpoints directory): the checkpoint latest
// names, or, when latest is missing or names a file that does not load,
// the newest checkpoint there that does (Skipped says what was passed
// over, and why).
func loadCheckpoint(path string) (loadedCheckpoint, error) {
	st, err := os.Stat(path)
	if err != nil {
		return loadedCheckpoint{}, err
	}
	if !st.IsDir() {
		return loadCheckpointFile(path)
	}
	dir := filepath.Join(path, "checkpoints")
	if _, err := os.Stat(dir); err != nil {
		dir = path // a checkpoints directory itself
	}
	var skipped []string
	tried := ""
	if name, err := os.ReadFile(filepath.Join(dir, "latest")); err != nil {
		skipped = append(skipped, fmt.Sprintf("%s: %v", filepath.Join(dir, "latest"), errors.Unwrap(err)))
	} else {
		tried = filepath.Join(dir, strings.TrimSpace(string(name)))
		ck, err := loadCheckpointFile(tried)
		if err == nil {
			return ck, nil
		}
		skipped = append(skipped, err.Error()+" (named by latest)")
	}
	files, _ := filepath.Glob(filepath.Join(dir, "ckpt-*.json"))
	sort.Sort(sort.Reverse(sort.StringSlice(files))) // newest first: ckpt-<version, zero-padded>.json
	for _, f := range files {
		if f == tried {
			continue
		}
		ck, err := loadCheckpointFile(f)
		if err == nil {
			ck.Skipped = skipped
			return ck, nil
		}
		skipped = append(skipped, err.Error())
	}
	if len(files) == 0 && tried == "" {
		return loadedCheckpoint{}, fmt.Errorf("%s has no checkpoint (no checkpoints/latest)", path)
	}
	return loadedCheckpoint{}, fmt.Errorf("%s has no checkpoint that loads: %s", path, strings.Join(skipped, "; "))
}

// loadCheckpointFile reads one checkpoint file.
func loadCheckpointFile(file string) (loadedCheckpoint, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return loadedCheckpoint{}, err
	}
	ck, format, err := decodeCheckpoint(data)
	if err != nil {
		return loadedCheckpoint{}, fmt.Errorf("checkpoint %s %w", file, err)
	}
	return loadedCheckpoint{Checkpoint: ck, File: file, Format: format}, nil
}
