package curriculum

import (
	"fmt"
	"math/rand/v2"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/synth"
)

// StrategyRounds is the seed report's round-based rule (Rounds).
const StrategyRounds = "rounds"

// RoundsConfig shapes a Rounds curriculum.
type RoundsConfig struct {
	// Size is the fresh tasks calibrated in each round (at least; a
	// refined task's replacement is calibrated in the round on top).
	Size int `json:"size"`
	// CalibrationGroups is the groups each candidate is played in before
	// it is admitted or not; GroupSize the episodes of a group, so that a
	// candidate is calibrated by CalibrationGroups·GroupSize rollouts.
	CalibrationGroups int `json:"calibration_groups"`
	GroupSize         int `json:"group_size"`
	// Band is the pass rates [lo, hi] a candidate is admitted within;
	// LastBand replaces it from round LastRound on (0: never). A candidate
	// whose calibration all passed or all failed is never admitted: its
	// groups carry no signal.
	Band      [2]float64 `json:"band"`
	LastBand  [2]float64 `json:"last_band"`
	LastRound int        `json:"last_round"`
	// Refine asks, for a candidate above the band, for a compound task of
	// it (one more mutation, from a synth.Compounder source), and for one
	// below the band for a task of an easier sibling bin (from a
	// synth.Steerable source); without it such candidates are dropped.
	Refine bool `json:"refine"`
	// Updates is the policy updates of a round's training, counted from
	// when its last candidate was decided.
	Updates int `json:"updates"`
	// Difficulty is what requests ask of sources that take only a
	// difficulty.
	Difficulty float64 `json:"difficulty"`
	Seed       uint64  `json:"seed"`
}

// DefaultRoundsConfig is the rounds curriculum frog's commands run unless
// told otherwise.
func DefaultRoundsConfig() RoundsConfig {
	return RoundsConfig{Size: 32, CalibrationGroups: 1, GroupSize: 8, Band: [2]float64{0.25, 0.75},
		LastBand: [2]float64{0, 0.5}, LastRound: 4, Refine: true, Updates: 16}
}

// RoundsOptions are the settings of a RoundsConfig that frog's commands
// take from their user (--round-size, --round-band, …), as their
// config.json records them: the bands as "lo,hi", the calibration in
// rollouts (0: one group). The commands make a RoundsConfig of them,
// checking each against its flag.
type RoundsOptions struct {
	Size        int    `json:"size"`
	Calibration int    `json:"calibration"`
	Band        string `json:"band"`
	LastBand    string `json:"last_band"`
	LastRound   int    `json:"last_round"`
	Refine      bool   `json:"refine"`
	Updates     int    `json:"updates"`
}

// DefaultRoundsOptions are DefaultRoundsConfig's settings as options.
func DefaultRoundsOptions() RoundsOptions {
	d := DefaultRoundsConfig()
	return RoundsOptions{Size: d.Size, Band: fmt.Sprintf("%g,%g", d.Band[0], d.Band[1]),
		LastBand: fmt.Sprintf("%g,%g", d.LastBand[0], d.LastBand[1]), LastRound: d.LastRound, Refine: d.Refine, Updates: d.Updates}
}

// Held are the ids of the tasks the curriculum may serve again: the
// candidates of the round under way and the admitted tasks of it and of
// the round before.
func (r *Rounds) Held() []string {
	var ids []string
	for _, c := range r.order {
		ids = append(ids, c.t.ID)
	}
	for _, t := range r.prev {
		ids = append(ids, t.ID)
	}
	return ids
}

func (c RoundsConfig) validate() error {
	band := func(name string, b [2]float64) error {
		if !(b[0] >= 0 && b[0] <= b[1] && b[1] <= 1) {
			return fmt.Errorf("%s %v: want 0 <= lo <= hi <= 1", name, b)
		}
		return nil
	}
	switch {
	case c.Size < 1:
		return fmt.Errorf("round size %d: want >= 1", c.Size)
	case c.CalibrationGroups < 1 || c.GroupSize < 1:
		return fmt.Errorf("calibration of %d groups of %d: want >= 1 of each", c.CalibrationGroups, c.GroupSize)
	case c.LastRound < 0:
		return fmt.Errorf("last round %d: want >= 0 (0: never)", c.LastRound)
	case c.Updates < 1:
		return fmt.Errorf("updates per round %d: want >= 1", c.Updates)
	}
	if err := band("band", c.Band); err != nil {
		return err
	}
	return band("last band", c.LastBand)
}

// RoundsStats is a Rounds curriculum's state.
type RoundsStats struct {
	// Round is the round under way (1 is the first); Phase "calibrating"
	// until its last candidate is decided, then "training".
	Round int    `json:"round"`
	Phase string `json:"phase"`
	// CalibrationEpisodes counts the outcomes of calibration groups;
	// TrainingEpisodes those of groups of admitted tasks.
	CalibrationEpisodes int64 `json:"calibration_episodes"`
	TrainingEpisodes    int64 `json:"training_episodes"`
	// Candidates, Admitted, Refined and Dropped total the rounds' (Refined
	// + Dropped + Admitted = the candidates decided); RefineTasks counts
	// the replacements the refine requests brought.
	Candidates  int64 `json:"candidates"`
	Admitted    int64 `json:"admitted"`
	Refined     int64 `json:"refined"`
	Dropped     int64 `json:"dropped"`
	RefineTasks int64 `json:"refine_tasks"`
	// PerRound is every round's line, the one under way last.
	PerRound []RoundReport `json:"per_round"`
}

// RoundReport is one round's line of RoundsStats.
type RoundReport struct {
	Round int        `json:"round"`
	Band  [2]float64 `json:"band"`
	// Candidates were calibrated; of them TooEasy were above the band and
	// TooHard below it, and each was Admitted, Refined or Dropped.
	Candidates int64 `json:"candidates"`
	Admitted   int64 `json:"admitted"`
	TooEasy    int64 `json:"too_easy"`
	TooHard    int64 `json:"too_hard"`
	Refined    int64 `json:"refined"`
	Dropped    int64 `json:"dropped"`
	// CalibrationEpisodes counts its calibration outcomes; Replays the
	// groups of admitted tasks planned during it (its own, or, while it
	// has admitted none, the previous round's); Updates the policy updates
	// of its training.
	CalibrationEpisodes int64 `json:"calibration_episodes"`
	Replays             int64 `json:"replays"`
	Updates             int64 `json:"updates"`
}

// candidate is a fresh task under calibration in the round under way.
type candidate struct {
	t *env.Task
	// served counts its calibration groups planned, last the plan of the
	// latest; groups the distinct groups whose outcomes arrived.
	served int
	last   int64
	groups []uint64
	n      int
	pass   int
	// decided says it was admitted, refined or dropped.
	decided bool
}

// refineReq is a refine request waiting to be made: a compound of base,
// or a task of the sibling bin knobs.
type refineReq struct {
	Base  *env.Task    `json:"base,omitempty"`
	Knobs *synth.Knobs `json:"knobs,omitempty"`
	// Difficulty is what it asks of a source that takes only a difficulty.
	Difficulty float64 `json:"difficulty"`
}

// Rounds is the seed report's round-based rule: in each round, Size fresh
// tasks are each played in CalibrationGroups groups, a candidate whose
// pass rate is within the round's band is admitted, and one outside it is
// refined (a compound task of it, or a task of an easier sibling bin,
// calibrated in its place) or dropped; once every candidate is decided,
// the round's admitted tasks only are replayed (uniformly) until the
// policy has made Updates more updates, and the next round begins.
//
// Calibration groups are ordinary groups: they are planned like any, their
// episodes count in the run's budget, and the learner learns from them as
// from any group. While the round's candidates are all served and some are
// undecided, plans replay the tasks of the round admitted so far, or the
// previous round's, or, with neither, more fresh tasks (candidates of the
// round on top of Size): a plan always answers for the n tasks asked.
// It is plain synchronous code: the curriculum actor drives it from one
// goroutine.
type Rounds struct {
	cfg RoundsConfig
	pcg *rand.PCG
	rng *rand.Rand

	tick    int64
	version int64
	round   int
	// quota is the candidates the round serves fresh (Size plus the
	// replacements its refine requests brought); planned those planned;
	// awaiting those of the latest plan not admitted yet.
	quota, planned, awaiting int
	cands                    map[string]*candidate
	order                    []*candidate
	// undecided counts the round's candidates not yet decided.
	undecided int
	training  bool
	// trainFrom is the policy version at which the round's training began.
	trainFrom int64
	pool      []*env.Task
	prev      []*env.Task
	refines   []refineReq
	t         tally
	st        RoundsStats
}

// NewRounds returns a Rounds curriculum at the start of its first round.
func NewRounds(cfg RoundsConfig) (*Rounds, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	pcg := rand.NewPCG(cfg.Seed, 0x726f756e6473)
	r := &Rounds{cfg: cfg, pcg: pcg, rng: rand.New(pcg)}
	r.begin(1)
	return r, nil
}

// begin starts round k.
func (r *Rounds) begin(k int) {
	r.round, r.quota, r.planned = k, r.cfg.Size, 0
	r.cands, r.order, r.undecided, r.training = map[string]*candidate{}, nil, 0, false
	r.st.PerRound = append(r.st.PerRound, RoundReport{Round: k, Band: r.band()})
}

// band is the round's admission band.
func (r *Rounds) band() [2]float64 {
	if r.cfg.LastRound > 0 && r.round >= r.cfg.LastRound {
		return r.cfg.LastBand
	}
	return r.cfg.Band
}

func (r *Rounds) cur() *RoundReport { return &r.st.PerRound[len(r.st.PerRound)-1] }

// Plan serves, in order: the calibration groups still owed to candidates
// served already, fresh candidates up to the round's quota, and then
// replays of the round's admitted tasks (or, while none is admitted, of
// the previous round's, or more fresh candidates).
func (r *Rounds) Plan(n int) Plan {
	r.tick++
	// The actor admits a plan's fresh tasks before it asks for the next
	// plan: what is still awaited was never admitted (a dry source).
	r.awaiting = 0
	r.expire()
	var p Plan
	if !r.training {
		for _, c := range r.order {
			for len(p.Replay) < n && !c.decided && c.served < r.cfg.CalibrationGroups {
				c.served++
				c.last = r.tick
				p.Replay = append(p.Replay, c.t)
			}
		}
		p.Fresh = min(n-len(p.Replay), max(0, r.quota-r.planned))
		r.planned += p.Fresh
	}
	from := r.pool
	if len(from) == 0 && !r.training {
		from = r.prev
	}
	for len(p.Replay)+p.Fresh < n {
		if len(from) == 0 {
			// Nothing admitted to train on yet: calibrate more.
			p.Fresh = n - len(p.Replay)
			r.planned += p.Fresh
			r.quota = max(r.quota, r.planned)
			break
		}
		p.Replay = append(p.Replay, from[r.rng.IntN(len(from))])
		r.cur().Replays++
	}
	r.awaiting = p.Fresh
	return p
}

// expire decides the candidates whose calibration groups were all served
// more than lostAfter plans ago on the outcomes that arrived: the rest
// were infrastructure failures, never observed. One with no outcome is
// dropped.
func (r *Rounds) expire() {
	for _, c := range r.order {
		if !c.decided && c.served >= r.cfg.CalibrationGroups && r.tick-c.last > lostAfter {
			r.decide(c)
		}
	}
	r.settle()
}

// Admit makes fresh tasks candidates of the round under way.
func (r *Rounds) Admit(tasks []*env.Task) {
	r.awaiting = max(0, r.awaiting-len(tasks))
	for _, t := range tasks {
		if c := r.cands[t.ID]; c != nil {
			// Served again fresh (a source that repeats itself): one
			// more calibration group of the same candidate.
			c.served++
			c.last = r.tick
			continue
		}
		c := &candidate{t: t, served: 1, last: r.tick}
		r.cands[t.ID] = c
		r.order = append(r.order, c)
		r.undecided++
		r.st.Candidates++
		r.cur().Candidates++
	}
}

// Request asks for a waiting refine request first, else for the
// synthesizer's own mix.
func (r *Rounds) Request() synth.Request {
	if len(r.refines) > 0 {
		q := r.refines[0]
		r.refines = r.refines[1:]
		return synth.Request{Difficulty: q.Difficulty, Knobs: q.Knobs, Base: q.Base}
	}
	return synth.Request{Difficulty: r.cfg.Difficulty, Knobs: &synth.Knobs{}}
}

// Synthesized counts a refine request's replacement: a compound of its
// base, or a task of the bin it named; the round under way calibrates one
// more candidate for it.
func (r *Rounds) Synthesized(req synth.Request, tasks []env.Task) {
	refine := req.Base != nil || (req.Knobs != nil && *req.Knobs != synth.Knobs{})
	if !refine {
		return
	}
	for i := range tasks {
		if (req.Base != nil && synth.CompoundOf(&tasks[i], req.Base)) ||
			(req.Base == nil && req.Knobs.Matches(synth.BinOf(&tasks[i]))) {
			r.st.RefineTasks++
			if !r.training {
				r.quota++
			}
			return
		}
	}
}

// Observe counts an outcome; one of a candidate's calibration groups may
// decide it.
func (r *Rounds) Observe(t *env.Task, reward float64, group uint64) {
	r.t.add(t.Difficulty, reward)
	c := r.cands[t.ID]
	if c == nil || !c.calibration(group, r.cfg.CalibrationGroups) {
		r.st.TrainingEpisodes++
		return
	}
	r.st.CalibrationEpisodes++
	r.cur().CalibrationEpisodes++
	if c.decided {
		return // late: decided without it
	}
	c.n++
	if reward > 0 {
		c.pass++
	}
	if c.n >= r.cfg.CalibrationGroups*r.cfg.GroupSize {
		r.decide(c)
		r.settle()
	}
}

// calibration says whether group is one of c's calibration groups (the
// first k whose outcomes arrived), recording it if it is new.
func (c *candidate) calibration(group uint64, k int) bool {
	for _, g := range c.groups {
		if g == group {
			return true
		}
	}
	if len(c.groups) >= k || c.decided {
		return false
	}
	c.groups = append(c.groups, group)
	return true
}

// decide admits c, refines it or drops it by its calibration pass rate.
func (r *Rounds) decide(c *candidate) {
	c.decided = true
	r.undecided--
	rep := r.cur()
	if c.n == 0 {
		rep.Dropped++
		r.st.Dropped++
		return
	}
	p, b := float64(c.pass)/float64(c.n), r.band()
	if p >= b[0] && p <= b[1] && c.pass > 0 && c.pass < c.n {
		r.pool = append(r.pool, c.t)
		rep.Admitted++
		r.st.Admitted++
		return
	}
	easy := p > b[1] || c.pass == c.n
	var q *refineReq
	if easy {
		rep.TooEasy++
		q = compoundOf(c.t)
	} else {
		rep.TooHard++
		q = siblingOf(c.t)
	}
	if r.cfg.Refine && q != nil && len(r.refines) < r.cfg.Size {
		r.refines = append(r.refines, *q)
		rep.Refined++
		r.st.Refined++
		return
	}
	rep.Dropped++
	r.st.Dropped++
}

// compoundOf is the refine request of a task too easy: one more mutation
// (nil when it has none, or MaxCompoundK already).
func compoundOf(t *env.Task) *refineReq {
	if len(t.Mutations) == 0 || len(t.Mutations) >= MaxCompoundK {
		return nil
	}
	return &refineReq{Base: t, Knobs: &synth.Knobs{}, Difficulty: t.Difficulty + 1}
}

// siblingOf is the refine request of a task too hard: a task of its bin
// with one mutation fewer, or else with its fault ranked one bucket more
// suspicious (nil when there is no easier sibling).
func siblingOf(t *env.Task) *refineReq {
	k := synth.BinOf(t)
	switch {
	case k.K > 1:
		k.K--
		if k.K == 1 {
			k.Locality = "single"
		}
	case k.Rank == "r2-3":
		k.Rank = "r1"
	case k.Rank == "r4-9":
		k.Rank = "r2-3"
	case k.Rank == "r10+":
		k.Rank = "r4-9"
	default:
		return nil
	}
	return &refineReq{Knobs: &k, Difficulty: t.Difficulty - 1}
}

// settle moves the round on: to its training once every candidate served
// is decided (straight to the next round when none was admitted), and to
// the next round after Updates updates of training.
func (r *Rounds) settle() {
	if !r.training && r.planned >= r.quota && r.awaiting == 0 && r.undecided == 0 && r.served() {
		r.training, r.trainFrom = true, r.version
		if len(r.pool) == 0 {
			r.next()
		}
		return
	}
	if r.training && r.version-r.trainFrom >= int64(r.cfg.Updates) {
		r.next()
	}
}

// served says every candidate's calibration groups were planned.
func (r *Rounds) served() bool {
	for _, c := range r.order {
		if !c.decided && c.served < r.cfg.CalibrationGroups {
			return false
		}
	}
	return true
}

// next ends the round under way and begins the next.
func (r *Rounds) next() {
	r.cur().Updates = max(0, r.version-r.trainFrom)
	if len(r.pool) > 0 {
		r.prev = r.pool
	}
	r.pool = nil
	r.begin(r.round + 1)
}

// Advance counts the round's updates.
func (r *Rounds) Advance(version int64) {
	if version <= r.version {
		return
	}
	r.version = version
	if r.training {
		r.cur().Updates = r.version - r.trainFrom
	}
	r.settle()
}

// Stats reports the tallies and the rounds.
func (r *Rounds) Stats() CurriculumStats {
	st := r.t.stats(StrategyRounds, r.cfg.Difficulty)
	s := r.st
	s.Round, s.Phase = r.round, "calibrating"
	if r.training {
		s.Phase = "training"
	}
	s.PerRound = append([]RoundReport(nil), r.st.PerRound...)
	st.Rounds = &s
	return st
}

var (
	_ Curriculum  = (*Rounds)(nil)
	_ Snapshotter = (*Rounds)(nil)
)
