package replay

import (
	"errors"
	"fmt"
	"slices"

	"github.com/frognano/frog/env"
)

// FromSearch makes task's record from the trajectory of an exhaustive
// search on the protocol the table is for (policy/baseline.Exhaustive: run
// the tests, coverage, list the candidates at the lines the protocol asks
// for, try every one of them in one step, apply the first that passes and
// submit). read returns a file of the task's starting workspace (the
// content an apply reads).
//
// The verdict of the candidate the search applied is the real verdict of
// its episode; the verdicts of the other candidates whose tries passed are
// those tries. The start's verdict is a failure: the task check, which
// every tabulated task passed, saw the deciding tests fail on it.
func FromSearch(task env.Task, traj *env.Trajectory, read func(file string) ([]byte, error)) (Record, error) {
	rec := Record{Task: task, Executions: map[string]int{}}
	applied := -1
	tried := false
	for i := range traj.Steps {
		s := &traj.Steps[i]
		r := &s.Result
		switch s.Action.Tool {
		case env.ToolRunTests:
			if rep := r.Tests(); rep != nil && rec.Tests == nil {
				rep := *rep
				rec.Tests, rec.Executions["run_tests"] = &rep, r.Executions
			}
		case env.ToolCoverage:
			if cov := r.Coverage(); cov != nil && rec.Coverage == nil {
				cov := *cov
				rec.Coverage, rec.Executions["coverage"] = &cov, r.Executions
			}
		case env.ToolCandidates:
			if r.Error != "" {
				return Record{}, fmt.Errorf("the search's candidates failed: %s", r.Error)
			}
			if rec.Listed {
				return Record{}, errors.New("the search listed candidates twice (a protocol that keeps partial fixes is not replayable)")
			}
			rec.Listed, rec.Lines, rec.Candidates = true, slices.Clone(s.Action.Lines()), slices.Clone(r.Candidates())
		case env.ToolTry:
			if tried {
				return Record{}, errors.New("the search tried twice")
			}
			tried = true
			trs := r.Tries()
			if len(trs) != len(rec.Candidates) {
				return Record{}, fmt.Errorf("the search tried %d of %d candidates", len(trs), len(rec.Candidates))
			}
			rec.Tries = make([]env.TryResult, len(trs))
			for _, tr := range trs {
				if tr.Candidate < 0 || tr.Candidate >= len(trs) {
					return Record{}, fmt.Errorf("a try of candidate %d, of %d", tr.Candidate, len(trs))
				}
				tr.Cached = false
				rec.Tries[tr.Candidate] = tr
			}
			rec.Executions["try"] = r.Executions
		case env.ToolApply:
			if r.Error != "" {
				return Record{}, fmt.Errorf("the search's apply failed: %s", r.Error)
			}
			applied = s.Action.CandidateIDs()[0]
		}
	}
	if rec.Listed && len(rec.Candidates) > 0 && !tried {
		return Record{}, errors.New("the search tried no candidate")
	}
	final := env.Verdict{Pass: traj.Reward == 1, Suspected: traj.RewardHackSuspected}
	if applied < 0 {
		rec.Start = final
	}
	rec.Files = map[string]string{}
	for i, tr := range rec.Tries {
		if !tr.AllPass && i != applied {
			continue
		}
		v := CandidateVerdict{Candidate: i, Verdict: env.Verdict{Pass: true}}
		if i == applied {
			v.Verdict, v.Real = final, true
		}
		rec.Verdicts = append(rec.Verdicts, v)
		f := rec.Candidates[i].File
		if _, ok := rec.Files[f]; ok {
			continue
		}
		data, err := read(f)
		if err != nil {
			return Record{}, fmt.Errorf("read %s: %w", f, err)
		}
		rec.Files[f] = string(data)
	}
	return rec, rec.check()
}
