package experiment

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/frognano/frog/actors"
	"github.com/frognano/frog/run"
)

// Result is one line of results.jsonl: one strategy, one seed.
type Result struct {
	Strategy string `json:"strategy"`
	Seed     uint64 `json:"seed"`
	// Budget and Executions count what the mode's budget counts: test
	// executions, or episodes in Mode "replay" (a replayed verdict runs no
	// test) and in real mode with RealOptions.BudgetEpisodes; so do Reach
	// and CurveX.
	Budget     int64   `json:"budget"`
	Executions int64   `json:"test_executions"`
	Episodes   int64   `json:"episodes"`
	Final      float64 `json:"final_heldout"`
	AUC        float64 `json:"auc"`
	// Reach is the test executions at which the held-out curve first
	// reached the target solve rate; -1 when it did not.
	Reach      int64     `json:"reach"`
	ZeroSignal float64   `json:"zero_signal_share"`
	FinalSkill float64   `json:"final_skill"`
	CurveX     []int64   `json:"curve_executions"`
	CurveY     []float64 `json:"curve_heldout"`
	// Retired, Frontier: the replay curriculum's state at the end.
	Retired   int     `json:"retired,omitempty"`
	Frontier  int     `json:"frontier_size,omitempty"`
	FreshPass float64 `json:"fresh_pass_rate,omitempty"`
	TrainPass float64 `json:"train_pass_rate"`
	// Distinct is the number of distinct training tasks the run played.
	Distinct     int     `json:"distinct_tasks,omitempty"`
	Seconds      float64 `json:"seconds"`
	FrogVersion  string  `json:"frog_version"`
	TargetSolve  float64 `json:"target_solve"`
	HeldoutTasks int     `json:"heldout_tasks"`
	// Real mode: the learner's updates, the training tasks quarantined,
	// the seconds the training took (the rest is evaluation).
	Updates int64 `json:"updates,omitempty"`
	// Points are the held-out curve's points in more detail (real mode).
	Points       []HeldoutPoint `json:"heldout_points,omitempty"`
	Quarantined  int            `json:"quarantined,omitempty"`
	TrainSeconds float64        `json:"train_seconds,omitempty"`
}

// HeldoutPoint is one point of a real run's held-out curve: the solve
// rate, the rate within the first try (and within each of the
// evaluation's marks, actors.DefaultMarks), the mean reciprocal rank of
// the first fix, the tries an episode made, and all of these per operator
// family of the bug. The rates within a few tries and the MRR move when
// the policy's ranking does, even where the solve rate stands still.
// Results of a frog before the marks and the MRR have neither.
type HeldoutPoint struct {
	Solved          float64         `json:"solved"`
	SolvedFirstTry  float64         `json:"solved_first_try"`
	TriesPerEpisode float64         `json:"tries_per_episode"`
	AtTries         []actors.RateAt `json:"solved_at_tries,omitempty"`
	MRR             *actors.Mean    `json:"mrr,omitempty"`
	ByFamily        []actors.RateOf `json:"by_family,omitempty"`
}

// Key names one run of an experiment.
type Key struct {
	Strategy string
	Seed     uint64
}

// OpenDir creates o.Dir and its config.json, or checks that an existing
// one was made with the same settings (a *run.UsageError when not), and
// returns the results it already holds.
func OpenDir(o Options, version string) ([]Result, error) {
	results, err := checkDir(o, version)
	if err != nil {
		return nil, err
	}
	return results, writeConfig(o, version)
}

// comparable is what must agree between the runs of one directory for
// their results to be comparable: every setting but the strategies and
// seeds run this time.
func comparable(o Options) Options {
	o.Strategies, o.Seeds, o.FirstSeed = nil, 0, 0
	return o
}

// checkDir checks that o.Dir's config.json, where there is one, was made
// with o's settings, and returns the results the directory holds. It
// makes and writes nothing.
func checkDir(o Options, version string) ([]Result, error) {
	data, err := os.ReadFile(filepath.Join(o.Dir, "config.json"))
	if errors.Is(err, os.ErrNotExist) {
		return ReadResults(o.Dir)
	}
	if err != nil {
		return nil, err
	}
	var old struct {
		Config Options `json:"config"`
	}
	if err := json.Unmarshal(data, &old); err != nil {
		return nil, run.Usagef("--dir %s: config.json: %v", o.Dir, err)
	}
	a, _ := json.Marshal(old.Config)
	b, _ := json.Marshal(comparable(o))
	if string(a) != string(b) {
		return nil, run.Usagef("--dir %s holds an experiment with other settings (%s); want %s", o.Dir, a, b)
	}
	return ReadResults(o.Dir)
}

// writeConfig creates o.Dir and its config.json where there is none yet
// (checkDir has compared one that is there).
func writeConfig(o Options, version string) error {
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return fmt.Errorf("experiment directory: %w", err)
	}
	path := filepath.Join(o.Dir, "config.json")
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return run.WriteJSONAtomic(path, struct {
		Version string  `json:"frog_version"`
		Command string  `json:"command"`
		Config  Options `json:"config"`
	}{version, "experiment curriculum", comparable(o)})
}

// ReadResults reads dir's results.jsonl; a line cut by a kill is skipped
// (its run is done again), and a directory without the file holds none.
func ReadResults(dir string) ([]Result, error) {
	f, err := os.Open(filepath.Join(dir, "results.jsonl"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Result
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var r Result
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			// A line cut by a kill: the run is done again.
			continue
		}
		out = append(out, r)
	}
	return out, sc.Err()
}

// AppendResult appends one line to dir's results.jsonl and syncs it: a run
// is recorded whole or not at all (a torn last line is skipped when read).
func AppendResult(dir string, r Result) error {
	line, err := json.Marshal(r)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(dir, "results.jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	if _, err = f.Write(append(line, '\n')); err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

// distinct counts the distinct tasks of a run's episodes; add is safe
// for concurrent use (OnEpisode hooks run on many goroutines).
type distinct struct {
	mu  sync.Mutex
	ids map[string]struct{}
}

func newDistinct() *distinct { return &distinct{ids: map[string]struct{}{}} }

func (d *distinct) add(r *actors.EpisodeResult) {
	if r.Task == nil {
		return
	}
	d.mu.Lock()
	d.ids[r.Task.ID] = struct{}{}
	d.mu.Unlock()
}

func (d *distinct) n() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.ids)
}

// newResult is a run's result before its curve is measured.
func newResult(o Options, version, strategy string, seed uint64, execs int64, sum actors.Summary, heldout int) Result {
	r := Result{Strategy: strategy, Seed: seed, Budget: o.Budget, Executions: execs, Episodes: sum.Episodes.Completed,
		ZeroSignal: sum.Learner.ZeroSignalShare, Reach: -1, FrogVersion: version, TargetSolve: o.TargetSolve,
		HeldoutTasks: heldout, Updates: sum.Learner.Updates}
	if sum.Episodes.Completed > 0 {
		r.TrainPass = float64(sum.Episodes.Solved) / float64(sum.Episodes.Completed)
	}
	if f := sum.Curriculum.Frontier; f != nil {
		r.Retired, r.Frontier, r.FreshPass = f.Retired, f.Frontier, f.FreshPassRate
	}
	return r
}
