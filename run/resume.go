package run

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/rs/zerolog"
)

// A resumed training run continues exactly: its directory is cut back to
// the checkpoint it resumes from, so that metrics.jsonl and trajectories/
// hold the records an uninterrupted run would have made up to that
// checkpoint, each once, and the resumed run appends the rest. What was
// written after the checkpoint (by a run killed, or ended by a full disk,
// before its next one) is made again.

// Resume reopens the run directory path to continue it from ck, a
// checkpoint Load found there (the caller has put its learner and
// curriculum back at ck first, so that a checkpoint it cannot use leaves
// the directory as it was): it removes summary.json (the run goes on),
// cuts the directory back to ck (cutBack) and reopens metrics.jsonl to
// append to. It returns the directory and the held-out evaluations and
// baselines its metrics kept.
func Resume(path string, ck Loaded, log zerolog.Logger) (*Dir, []Event, error) {
	os.Remove(filepath.Join(path, "summary.json")) // the run goes on
	evals, err := cutBack(path, ck, log)
	if err != nil {
		return nil, nil, err
	}
	d, err := openAppend(path)
	if err != nil {
		return nil, nil, err
	}
	return d, evals, nil
}

// openAppend reopens a run's metrics.jsonl to append to (a resumed run
// continues its curve, cut back to its checkpoint first: cutBack).
func openAppend(path string) (*Dir, error) {
	f, err := openJSONL(filepath.Join(path, "metrics.jsonl"), 0)
	if err != nil {
		return nil, fmt.Errorf("run directory: %w", err)
	}
	return &Dir{path: path, metrics: f}, nil
}

// cutBack cuts a run's metrics.jsonl and trajectories back to the
// checkpoint ck and returns the evaluations kept. A checkpoint of an older
// frog does not say how many trajectories it had filed: they are left as
// they are.
func cutBack(dir string, ck Loaded, log zerolog.Logger) ([]Event, error) {
	evals, err := cutMetrics(filepath.Join(dir, "metrics.jsonl"), ck, log)
	if err != nil {
		return nil, fmt.Errorf("cut metrics.jsonl back to %s: %w", ck.File, err)
	}
	if ck.Format == CheckpointFormat1 {
		return evals, nil
	}
	if err := cutTrajectories(filepath.Join(dir, "trajectories"), ck.Results, log); err != nil {
		return nil, fmt.Errorf("cut trajectories back to %s: %w", ck.File, err)
	}
	return evals, nil
}

// metricsKey is what says where a metrics line falls against a checkpoint.
type metricsKey struct {
	Kind     string `json:"kind"`
	Update   int64  `json:"update"`
	Version  int64  `json:"version"`
	AtUpdate int64  `json:"at_update"`
}

// before says whether a metrics line is one the run had made by the
// checkpoint: an update up to the checkpoint's, an evaluation of a policy
// up to it, the baselines (evaluated at the start), a curriculum record of
// a version before the checkpoint's (the resumed curriculum records the
// checkpoint's version itself, as it hears of it), and any line of another
// kind.
func (k metricsKey) before(ck Loaded) bool {
	switch k.Kind {
	case "update":
		return k.Update <= ck.Updates
	case "eval":
		return k.AtUpdate <= ck.Updates
	case "curriculum":
		return k.Version < ck.Version
	}
	return true
}

// cutMetrics rewrites metrics.jsonl (atomically) without the records made
// after the checkpoint and without a torn last line (set aside beside it),
// and returns the evaluations and baselines kept. Lines that do not parse
// are kept as they are (readers skip them).
func cutMetrics(path string, ck Loaded, log zerolog.Logger) ([]Event, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	whole := bytes.LastIndexByte(data, '\n') + 1
	if tail := data[whole:]; len(tail) > 0 {
		aside := path + ".torn-" + tornHash(tail)
		if err := WriteFileAtomic(aside, tail); err != nil {
			return nil, fmt.Errorf("set the torn line aside: %w", err)
		}
		log.Warn().Str("file", path).Str("aside", aside).Int("bytes", len(tail)).Msg("metrics.jsonl ends in a torn line: set aside, not appended to")
	}
	var kept bytes.Buffer
	var evals []Event
	dropped := 0
	for rest := data[:whole]; len(rest) > 0; {
		i := bytes.IndexByte(rest, '\n')
		line := rest[:i+1]
		rest = rest[i+1:]
		var k metricsKey
		if err := json.Unmarshal(line, &k); err == nil && !k.before(ck) {
			dropped++
			continue
		}
		kept.Write(line)
		if k.Kind == "eval" || k.Kind == "baseline" {
			var e Event
			if err := json.Unmarshal(line, &e); err == nil && e.Solved != nil {
				evals = append(evals, e)
			}
		}
	}
	if dropped > 0 || whole < len(data) {
		if err := WriteFileAtomic(path, kept.Bytes()); err != nil {
			return nil, err
		}
	}
	if dropped > 0 {
		log.Info().Int("dropped", dropped).Int64("updates", ck.Updates).Int64("version", ck.Version).
			Msg("metrics.jsonl cut back to the checkpoint: the records made after it are made again")
	}
	return evals, nil
}

// cutTrajectories keeps the first results records of the shards (those
// the learner had filed by the checkpoint, in the order filed): the shard
// that holds the last of them is cut after it, the shards after it are
// removed. A torn last line short of that is set aside beside its shard.
func cutTrajectories(dir string, results int64, log zerolog.Logger) error {
	names, err := filepath.Glob(filepath.Join(dir, "shard-*.jsonl"))
	if err != nil {
		return err
	}
	sort.Strings(names)
	var kept, dropped int64
	for _, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			return err
		}
		off := 0
		for kept < results {
			i := bytes.IndexByte(data[off:], '\n')
			if i < 0 {
				break
			}
			off += i + 1
			kept++
		}
		rest := data[off:]
		switch {
		case len(rest) == 0:
		case off == 0 && kept == results:
			dropped += records(rest)
			if err := os.Remove(name); err != nil {
				return err
			}
		case kept == results:
			dropped += records(rest)
			if err := os.Truncate(name, int64(off)); err != nil {
				return err
			}
		default:
			aside, err := cutAside(name, rest, int64(off))
			if err != nil {
				return err
			}
			log.Warn().Str("file", name).Str("aside", aside).Int("bytes", len(rest)).Msg("trajectory shard ends in a torn line: set aside")
		}
	}
	if dropped > 0 {
		log.Info().Int64("dropped", dropped).Int64("kept", kept).Msg("trajectories cut back to the checkpoint: the episodes played after it are played again")
	}
	if kept < results {
		log.Warn().Int64("kept", kept).Int64("filed", results).Msg("trajectories hold fewer episodes than the checkpoint had filed (their writes failed)")
	}
	return nil
}

// records counts the lines of data, a torn last one included.
func records(data []byte) int64 {
	n := int64(bytes.Count(data, []byte("\n")))
	if len(data) > 0 && data[len(data)-1] != '\n' {
		n++
	}
	return n
}
