package taskenv

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/rs/zerolog"

	"github.com/frognano/frog/run"
	"github.com/frognano/frog/synth"
	"github.com/frognano/frog/synth/store"
)

// LoadStore loads the task store a flag names, to play it: a usage error
// when it does not load; a task it holds more than once is kept once, with
// a warning (played twice, it would be counted twice); a store with no
// task is an error that says so.
func LoadStore(flag, path string, log zerolog.Logger) ([]synth.TaskRecord, error) {
	recs, err := store.Load(path)
	if err != nil {
		return nil, &run.UsageError{Err: fmt.Errorf("%s %s: %w", flag, path, err)}
	}
	recs, dups, err := store.Dedup(recs)
	if err != nil {
		return nil, &run.UsageError{Err: fmt.Errorf("%s %s: %w", flag, path, err)}
	}
	if len(dups) > 0 {
		log.Warn().Str("store", path).Int("tasks", len(dups)).Strs("ids", dups[:min(len(dups), 5)]).
			Msg("the store holds these tasks more than once: each is played and counted once")
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("%s %s: the store holds no task", flag, path)
	}
	return recs, nil
}

// Load loads the store a flag names (LoadStore), keeps its first limit
// records and then a seeded sample of sample of them (0: all).
func Load(flag, path string, limit, sample int, log zerolog.Logger) ([]synth.TaskRecord, error) {
	recs, err := LoadStore(flag, path, log)
	if err != nil {
		return nil, err
	}
	if limit > 0 && limit < len(recs) {
		recs = recs[:limit]
	}
	if sample > 0 && sample < len(recs) {
		recs = sampleTasks(recs, sample)
	}
	return recs, nil
}

// sampleTasks is a seeded random sample of n records, in store order: the
// same sample of a store for every run (frog train's held-out set too).
func sampleTasks(recs []synth.TaskRecord, n int) []synth.TaskRecord {
	idx := make([]int, len(recs))
	for i := range idx {
		idx[i] = i
	}
	rng := rand.New(rand.NewPCG(0x68656c64, 0))
	rng.Shuffle(len(idx), func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
	idx = idx[:n]
	slices.Sort(idx)
	out := make([]synth.TaskRecord, n)
	for i, j := range idx {
		out[i] = recs[j]
	}
	return out
}
