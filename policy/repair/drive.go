package repair

import (
	"math/rand/v2"
	"path"

	"github.com/frognano/frog/env"
)

// Chooser picks the next candidate to try among the untried ones (ids,
// indexes into st.List, in list order). It returns the position in ids of
// its choice, or -1 to stop and submit; the Decision (nil for none) and the
// log-probability of the choice under the chooser. rnd is the episode's own
// generator for this step.
type Chooser interface {
	Choose(st *State, ids []int, rnd *rand.Rand) (pick int, dec *env.Decision, logProb float64)
}

// Config shapes the episode protocol of a repair policy.
type Config struct {
	// Lines is how many of the most suspicious lines candidates are asked
	// for (default 60; a coverage block's blank, brace and comment lines
	// count among them, and docs/training.md measures how many hold a
	// candidate and the fix); AllLines asks for every line a failing test
	// ran.
	Lines    int
	AllLines bool
	// Keep applies a try that fixes some failing tests and breaks none
	// (the way to a fix of several bugs), then lists candidates again.
	Keep bool
	// MaxLists bounds the candidate lists of an episode (default 4).
	MaxLists int
	// Exhaustive tries every candidate of a list in one step: the search
	// of the candidate-space ceiling, not a policy.
	Exhaustive bool
}

// WithDefaults is c with its defaults filled in: two configs that play
// alike are equal once filled.
func (c Config) WithDefaults() Config { return c.withDefaults() }

func (c Config) withDefaults() Config {
	if c.Lines <= 0 {
		c.Lines = 60
	}
	if c.MaxLists <= 0 {
		c.MaxLists = 4
	}
	return c
}

// Next is a repair policy's next action: run the tests, measure coverage,
// rank lines by suspiciousness, list candidates at the most suspicious ones,
// try them one at a time in the chooser's order, apply the first that makes
// every test pass (and, with Keep, one that fixes some and breaks none,
// then list again), and submit when done, out of tries or out of steps.
func Next(obs env.Observation, cfg Config, ch Chooser, rnd *rand.Rand) env.Action {
	cfg = cfg.withDefaults()
	st := Derive(obs)
	left := obs.MaxSteps - obs.Step // this step included
	submit := env.Action{Tool: env.ToolSubmit}
	lastTool, lastErr := env.Tool(0), ""
	if n := len(obs.History); n > 0 {
		lastTool, lastErr = obs.History[n-1].Action.Tool, obs.History[n-1].Result.Error
	}
	switch {
	case left <= 1:
		return submit
	case st.Initial == nil:
		if lastTool == env.ToolRunTests {
			return submit // the tests could not be run: nothing to go on
		}
		return env.Action{Tool: env.ToolRunTests}
	case !st.Initial.Built || len(st.Failing0) == 0:
		return submit
	case st.Coverage == nil:
		if lastTool == env.ToolCoverage {
			return submit
		}
		return env.Action{Tool: env.ToolCoverage}
	case st.AppliedAfter != nil && st.AppliedAfter.AllPass:
		return submit
	case lastErr != "" && (lastTool == env.ToolTry || lastTool == env.ToolApply || lastTool == env.ToolCandidates):
		return submit // out of tries, or a list that could not be made
	case st.LastTry != nil && st.LastTry.AllPass:
		return apply(st.LastTry.Candidate)
	case cfg.Keep && Improves(st.LastTry) && left >= 4 && st.Lists < cfg.MaxLists:
		return apply(st.LastTry.Candidate)
	case st.List == nil:
		if st.Lists >= cfg.MaxLists || left < 3 {
			return submit
		}
		lines := st.Lines(cfg)
		if len(lines) == 0 {
			return submit
		}
		return env.Action{Tool: env.ToolCandidates, Args: &env.ActionArgs{Lines: lines}}
	case left <= 2 || obs.MaxTries > 0 && st.Tries >= obs.MaxTries:
		return submit
	}
	ids := st.Untried()
	if len(ids) == 0 {
		return submit
	}
	if cfg.Exhaustive {
		if obs.MaxTries > 0 {
			ids = ids[:min(len(ids), obs.MaxTries-st.Tries)]
		}
		return env.Action{Tool: env.ToolTry, Args: &env.ActionArgs{Candidates: ids}}
	}
	pick, dec, lp := ch.Choose(st, ids, rnd)
	if pick < 0 || pick >= len(ids) {
		a := submit
		a.Decision, a.LogProb = dec, lp
		return a
	}
	return env.Action{Tool: env.ToolTry, Args: &env.ActionArgs{Candidates: []int{ids[pick]}}, Decision: dec, LogProb: lp}
}

func apply(id int) env.Action {
	return env.Action{Tool: env.ToolApply, Args: &env.ActionArgs{Candidates: []int{id}}}
}

// Lines are where to ask for candidates: the most suspicious lines against
// the tests failing now (after kept edits), in the task's package first.
func (st *State) Lines(cfg Config) []env.Line {
	cfg = cfg.withDefaults()
	sus := st.Suspects
	if st.Applied > 0 && len(st.Failing) > 0 {
		failing := map[string]bool{}
		for _, t := range st.Failing {
			failing[t] = true
		}
		sus = Rank(Spectra(st.Coverage, failing))
	}
	if cfg.AllLines {
		return TopLines(sus, 0)
	}
	// Prefer the package under test: code elsewhere is rarely the bug's.
	var in, out []env.Line
	for _, s := range sus {
		if path.Dir(s.Line.File) == path.Clean(st.Task.Dir) {
			in = append(in, s.Line)
		} else {
			out = append(out, s.Line)
		}
	}
	lines := append(in, out...)
	return lines[:min(len(lines), cfg.Lines)]
}

// Seeded is the generator of one step of one episode: the same (seed,
// episode, attempt, step) gives the same draws however episodes are
// batched.
func Seeded(seed uint64, obs env.Observation) *rand.Rand {
	return rand.New(rand.NewPCG(mix(seed), mix(obs.Episode<<20^uint64(obs.Attempt)<<12^uint64(obs.Step))))
}

func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
