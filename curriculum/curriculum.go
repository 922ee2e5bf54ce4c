package curriculum

import (
	"fmt"
	"math"
	"sort"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/synth"
)

// Curriculum decides which tasks the scheduler's groups play: tasks served
// before (replayed) or fresh ones from the synthesizer, and what to ask the
// synthesizer for. It sees tasks and their outcomes, never a bare
// difficulty number. It is called from one goroutine (the curriculum
// actor's) and never blocks.
type Curriculum interface {
	// Plan answers a request for n tasks: which tasks served before to play
	// again, and how many fresh tasks to take from the synthesizer (n minus
	// the replayed ones).
	Plan(n int) Plan
	// Admit tells the curriculum of fresh tasks about to be served.
	Admit(tasks []*env.Task)
	// Request is what to ask the synthesizer for next.
	Request() synth.Request
	// Synthesized reports what the synthesizer made for a request.
	Synthesized(req synth.Request, tasks []env.Task)
	// Observe records the reward of one completed episode of task t, played
	// in GRPO group group. Infrastructure failures are never observed.
	Observe(t *env.Task, reward float64, group uint64)
	// Advance tells the curriculum that the policy is now at version.
	Advance(version int64)
	// Stats reports what the curriculum saw.
	Stats() CurriculumStats
}

// Plan is a curriculum's answer to a request for tasks.
type Plan struct {
	Replay []*env.Task
	Fresh  int
}

// fresh is the part of a curriculum that only ever serves fresh tasks.
type fresh struct{}

func (fresh) Plan(n int) Plan                       { return Plan{Fresh: n} }
func (fresh) Admit([]*env.Task)                     {}
func (fresh) Synthesized(synth.Request, []env.Task) {}
func (fresh) Advance(int64)                         {}

// CurriculumStats summarizes what a curriculum saw.
type CurriculumStats struct {
	Kind       string  `json:"kind"`
	Difficulty float64 `json:"final_difficulty"`
	// Ability is the estimated difficulty the policy solves half of the
	// time (target curriculum only).
	Ability  float64 `json:"ability_estimate,omitempty"`
	Observed int64   `json:"observed"`
	PassRate float64 `json:"pass_rate"`
	Bins     []Bin   `json:"bins"`
	// Frontier is the state of a replay curriculum (frontier, uniform,
	// easy, hard, offline, frontier-no-synth).
	Frontier *FrontierStats `json:"frontier,omitempty"`
	// Rounds is the state of a rounds curriculum.
	Rounds *RoundsStats `json:"rounds,omitempty"`
}

// Bin is the tally of one unit-wide difficulty bin [Lo, Lo+1).
type Bin struct {
	Lo       float64 `json:"lo"`
	Episodes int64   `json:"episodes"`
	Passed   int64   `json:"passed"`
	PassRate float64 `json:"pass_rate"`
}

// tally counts outcomes per unit-wide difficulty bin.
type tally struct {
	bins          map[int]*Bin
	total, passed int64
}

func (t *tally) add(difficulty, reward float64) {
	if t.bins == nil {
		t.bins = make(map[int]*Bin)
	}
	k := int(math.Floor(difficulty))
	b := t.bins[k]
	if b == nil {
		b = &Bin{Lo: float64(k)}
		t.bins[k] = b
	}
	b.Episodes++
	t.total++
	if reward > 0 {
		b.Passed++
		t.passed++
	}
}

func (t *tally) stats(kind string, d float64) CurriculumStats {
	st := CurriculumStats{Kind: kind, Difficulty: d, Observed: t.total, Bins: make([]Bin, 0, len(t.bins))}
	if t.total > 0 {
		st.PassRate = float64(t.passed) / float64(t.total)
	}
	for _, b := range t.bins {
		c := *b
		c.PassRate = float64(c.Passed) / float64(c.Episodes)
		st.Bins = append(st.Bins, c)
	}
	sort.Slice(st.Bins, func(i, j int) bool { return st.Bins[i].Lo < st.Bins[j].Lo })
	return st
}

// Fixed always asks for the same difficulty: the baseline a curriculum must
// beat.
type Fixed struct {
	fresh
	D float64
	t tally
}

// Request asks for difficulty D.
func (f *Fixed) Request() synth.Request { return synth.Request{Difficulty: f.D} }

// Observe tallies the outcome.
func (f *Fixed) Observe(t *env.Task, reward float64, _ uint64) { f.t.add(t.Difficulty, reward) }

// Stats reports the tallies.
func (f *Fixed) Stats() CurriculumStats { return f.t.stats("fixed", f.D) }

// Target keeps the pass rate near a target by tracking the policy's ability
// on the difficulty scale. Each outcome moves the ability estimate a the way
// an Elo rating moves, a += Rate·(r − σ(a − d)) with d the difficulty of the
// task the outcome came from, and the curriculum asks for the difficulty at
// which σ(a − d) = PassRate. Because every outcome is scored against its own
// task's difficulty, outcomes that arrive late (thousands of episodes are in
// flight at once) bias nothing and the loop does not oscillate, as a plain
// "raise d when too many pass" controller would under such delay.
type Target struct {
	fresh
	// PassRate is the target pass rate, in (0, 1).
	PassRate float64
	// Rate is the step of the ability estimate per outcome.
	Rate float64
	// Min and Max bound the difficulty asked for.
	Min, Max float64
	a        float64
	t        tally
}

// NewTarget returns a target curriculum whose ability estimate starts at the
// difficulty the target pass rate implies for start.
func NewTarget(passRate, start, rate float64) (*Target, error) {
	if !(passRate > 0 && passRate < 1) {
		return nil, fmt.Errorf("target pass rate %v: want a number strictly between 0 and 1", passRate)
	}
	if !(rate > 0) || math.IsInf(rate, 0) {
		return nil, fmt.Errorf("curriculum rate %v: want a positive number", rate)
	}
	c := &Target{PassRate: passRate, Rate: rate, Min: -20, Max: 40}
	c.a = start + logit(passRate)
	return c, nil
}

// Difficulty is the difficulty at which the estimated pass rate is the target.
func (c *Target) Difficulty() float64 {
	return math.Min(math.Max(c.a-logit(c.PassRate), c.Min), c.Max)
}

// Request asks for Difficulty.
func (c *Target) Request() synth.Request { return synth.Request{Difficulty: c.Difficulty()} }

// Observe moves the ability estimate toward what the outcome says.
func (c *Target) Observe(t *env.Task, reward float64, _ uint64) { c.observe(t.Difficulty, reward) }

func (c *Target) observe(difficulty, reward float64) {
	c.t.add(difficulty, reward)
	p := 1 / (1 + math.Exp(difficulty-c.a))
	c.a += c.Rate * (reward - p)
}

// Stats reports the tallies and the ability estimate.
func (c *Target) Stats() CurriculumStats {
	st := c.t.stats("target", c.Difficulty())
	st.Ability = c.a
	return st
}

func logit(p float64) float64 { return math.Log(p / (1 - p)) }
