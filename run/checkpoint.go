package run

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

	"github.com/frognano/frog/actors"
	"github.com/frognano/frog/env"
)

// Checkpoints is the learner's checkpoint sink (actors.CheckpointSink),
// a run's checkpoints/ directory: each checkpoint a file
// (ckpt-<version>.json) written atomically (temporary file, fsync, rename),
// then the "latest" pointer the same way, so that a kill at any point
// leaves the previous checkpoint whole and pointed to. It keeps the newest
// keep files. Save is called from one goroutine at a time (the curriculum
// actor's checkpoint writer); it blocks on the disk and takes no context:
// a checkpoint is written whole or not at all.
type Checkpoints struct {
	dir  string
	keep int
}

var _ actors.CheckpointSink = (*Checkpoints)(nil)

// NewCheckpoints is the checkpoint sink that writes to dir (made on the
// first Save) and keeps its newest keep checkpoints.
func NewCheckpoints(dir string, keep int) *Checkpoints {
	return &Checkpoints{dir: dir, keep: keep}
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
	// CheckpointFormat is the format tag of the checkpoints frog writes.
	CheckpointFormat = "frog-checkpoint/2"
	// CheckpointFormat1 is the format tag of older frogs' checkpoints.
	CheckpointFormat1 = "frog-checkpoint/1"
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
	data, err := json.Marshal(checkpointFile{Format: CheckpointFormat, Sum: hex.EncodeToString(sum[:]), Checkpoint: body})
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
	case CheckpointFormat:
		if sum := sha256.Sum256(f.Checkpoint); hex.EncodeToString(sum[:]) != f.Sum {
			return actors.Checkpoint{}, "", errors.New("fails its checksum: the file is corrupted")
		}
		if err := json.Unmarshal(f.Checkpoint, &ck); err != nil {
			return actors.Checkpoint{}, "", fmt.Errorf("does not parse (corrupted?): %v", err)
		}
	case CheckpointFormat1:
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

// Save writes ck as the newest checkpoint, points latest at it, and
// prunes the oldest beyond keep.
func (c *Checkpoints) Save(ck actors.Checkpoint) error {
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return err
	}
	data, err := encodeCheckpoint(ck)
	if err != nil {
		return err
	}
	name := fmt.Sprintf("ckpt-%08d.json", ck.Version)
	if err := WriteFileAtomic(filepath.Join(c.dir, name), data); err != nil {
		return err
	}
	if err := WriteFileAtomic(filepath.Join(c.dir, "latest"), []byte(name+"\n")); err != nil {
		return err
	}
	c.prune(name)
	return nil
}

// prune removes the oldest checkpoints beyond keep, never the one just
// written (latest names it, whatever the others' versions: a directory may
// hold checkpoints of higher versions than the one a run writes now).
func (c *Checkpoints) prune(current string) {
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

// Loaded is a checkpoint as Load found it: its file and format, and the
// newer files it passed over, each with why.
type Loaded struct {
	actors.Checkpoint
	File    string
	Format  string
	Skipped []string
}

// Load reads the checkpoint a path names: a checkpoint file, or
// a run directory (or its checkpoints directory): the checkpoint latest
// names, or, when latest is missing or names a file that does not load,
// the newest checkpoint there that does (Skipped says what was passed
// over, and why). An older frog's checkpoint (CheckpointFormat1) loads
// with the progress it held: version, updates and results.
func Load(path string) (Loaded, error) {
	st, err := os.Stat(path)
	if err != nil {
		return Loaded{}, err
	}
	if !st.IsDir() {
		return LoadFile(path)
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
		ck, err := LoadFile(tried)
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
		ck, err := LoadFile(f)
		if err == nil {
			ck.Skipped = skipped
			return ck, nil
		}
		skipped = append(skipped, err.Error())
	}
	if len(files) == 0 && tried == "" {
		return Loaded{}, fmt.Errorf("%s has no checkpoint (no checkpoints/latest)", path)
	}
	return Loaded{}, fmt.Errorf("%s has no checkpoint that loads: %s", path, strings.Join(skipped, "; "))
}

// LoadFile reads one checkpoint file.
func LoadFile(file string) (Loaded, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return Loaded{}, err
	}
	ck, format, err := decodeCheckpoint(data)
	if err != nil {
		return Loaded{}, fmt.Errorf("checkpoint %s %w", file, err)
	}
	return Loaded{Checkpoint: ck, File: file, Format: format}, nil
}
