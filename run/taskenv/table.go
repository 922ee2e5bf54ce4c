package taskenv

import (
	"github.com/frognano/frog/actors"
	"github.com/frognano/frog/env/replay"
	"github.com/frognano/frog/synth"
	"github.com/frognano/frog/synth/store"
)

// TableTasks are the first limit tasks of a replay table (0: all), in its
// order, labelled for an evaluation's report as a store's are (EvalTask).
func TableTasks(t *replay.Table, limit int) []actors.EvalTask {
	var out []actors.EvalTask
	for _, r := range t.Records {
		if limit > 0 && len(out) == limit {
			break
		}
		out = append(out, actors.EvalTask{Task: r.Task, Module: r.Module, Family: r.Family, K: r.K})
	}
	return out
}

// TableSource serves a replay table's tasks to a training run as a store
// of them would be (store.NewSource, drawn with seed): with their family
// and number of bugs, the labels a table keeps. A table of no task is an
// error.
func TableSource(t *replay.Table, seed uint64) (*store.Source, error) {
	recs := make([]synth.TaskRecord, len(t.Records))
	for i, r := range t.Records {
		recs[i] = synth.TaskRecord{Task: r.Task, Family: r.Family, Features: synth.Features{K: r.K}}
	}
	return store.NewSource(recs, seed)
}
