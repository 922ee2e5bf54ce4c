package repair

import (
	"slices"

	"github.com/frognano/frog/env"
)

// State is what an episode has learned so far, derived from its history
// alone: a repair policy is a pure function of what it observed, so one
// policy value serves every episode and any version of it can resume one.
type State struct {
	Task env.TaskView
	// Initial is the first test report; Failing0 the tests failing in it.
	Initial  *env.TestReport
	Failing0 []string
	// Coverage is the first coverage report, Suspects its lines by
	// suspiciousness (against Failing0).
	Coverage *env.CoverageReport
	Suspects []Suspect
	// List is the last candidates list, nil when none was made or the
	// workspace changed after it (Stale).
	List  []env.Candidate
	Stale bool
	// Lists counts the lists made.
	Lists int
	// Tried holds the results of the tries of List's candidates, by ID.
	Tried map[int]env.TryResult
	// LineTries and LineNoEffect count, over the whole episode, the tries
	// at each line and those that changed no test's verdict.
	LineTries    map[env.Line]int
	LineNoEffect map[env.Line]int
	// LastTry is the result of the last try when the last action was one:
	// of several candidates tried at once, the best (every test passing,
	// else the most fixed with none broken, else the first).
	LastTry *env.TryResult
	// Applied counts applies; LastApplied is the candidate of the last
	// action when it was an apply, with the try result it was applied on.
	Applied      int
	LastApplied  *env.Candidate
	AppliedAfter *env.TryResult
	// Failing is the set of deciding tests failing now, as far as the
	// tries of applied candidates tell.
	Failing []string
	// Tries counts candidates tried.
	Tries int
	// Step and MaxSteps are the observation's.
	Step, MaxSteps int
}

// Derive reads an observation's history into a State.
func Derive(obs env.Observation) *State {
	st := &State{Task: obs.View(), Step: obs.Step, MaxSteps: obs.MaxSteps,
		Tried: map[int]env.TryResult{}, LineTries: map[env.Line]int{}, LineNoEffect: map[env.Line]int{}}
	for i := range obs.History {
		s := &obs.History[i]
		r := &s.Result
		last := i == len(obs.History)-1
		switch s.Action.Tool {
		case env.ToolRunTests:
			if rep := r.Tests(); st.Initial == nil && rep != nil {
				st.Initial = rep
				st.Failing0 = rep.Failing()
				st.Failing = slices.Clone(st.Failing0)
			}
		case env.ToolCoverage:
			if cov := r.Coverage(); st.Coverage == nil && cov != nil {
				st.Coverage = cov
				failing := map[string]bool{}
				for _, t := range st.Failing0 {
					failing[t] = true
				}
				st.Suspects = Rank(Spectra(cov, failing))
			}
		case env.ToolCandidates:
			if r.Error == "" {
				st.List, st.Stale, st.Tried = r.Candidates(), false, map[int]env.TryResult{}
				st.Lists++
			}
		case env.ToolTry:
			for _, tr := range r.Tries() {
				st.Tries++
				st.Tried[tr.Candidate] = tr
				if tr.Candidate >= 0 && tr.Candidate < len(st.List) {
					c := st.List[tr.Candidate]
					l := env.Line{File: c.File, Line: c.Line}
					st.LineTries[l]++
					if tr.Built && len(tr.Fixed) == 0 && len(tr.Broken) == 0 {
						st.LineNoEffect[l]++
					}
				}
			}
			if last {
				st.LastTry = best(r.Tries())
			}
		case env.ToolApply:
			ids := s.Action.CandidateIDs()
			if r.Error != "" || len(ids) != 1 {
				continue
			}
			id := ids[0]
			st.Applied++
			if id >= 0 && id < len(st.List) {
				c := st.List[id]
				if tr, ok := st.Tried[id]; ok {
					st.Failing = tr.Failing
					if last {
						st.AppliedAfter = &tr
					}
				}
				if last {
					st.LastApplied = &c
				}
			}
			st.List, st.Stale = nil, true
		case env.ToolEdit, env.ToolRevert:
			if r.Error == "" {
				st.List, st.Stale = nil, true
			}
		}
	}
	return st
}

// Untried lists the IDs of List's candidates not tried yet, in list order.
func (st *State) Untried() []int {
	var out []int
	for i := range st.List {
		if _, ok := st.Tried[i]; !ok {
			out = append(out, i)
		}
	}
	return out
}

// Improves reports whether a try fixed some failing tests and broke none:
// worth keeping on the way to a fix of several bugs.
func Improves(tr *env.TryResult) bool {
	return tr != nil && tr.Built && !tr.AllPass && len(tr.Fixed) > 0 && len(tr.Broken) == 0
}

// best is the most useful of a step's try results.
func best(trs []env.TryResult) *env.TryResult {
	if len(trs) == 0 {
		return nil
	}
	b := 0
	score := func(t *env.TryResult) int {
		switch {
		case t.AllPass:
			return 1 << 30
		case Improves(t):
			return len(t.Fixed)
		}
		return -1
	}
	for i := range trs {
		if score(&trs[i]) > score(&trs[b]) {
			b = i
		}
	}
	tr := trs[b]
	return &tr
}
