package curriculum

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"sort"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/synth"
)

// The strategies of a Replay curriculum.
const (
	// StrategyFrontier samples the replay buffer by expected learnability
	// (Prioritized Level Replay: score rank with a temperature, mixed with
	// staleness), retires tasks confidently outside the band and brings
	// them back when the policy has moved, and steers the synthesizer's
	// fresh tasks toward the bins whose pooled score is highest.
	StrategyFrontier = "frontier"
	// StrategyFrontierNoSynth samples as frontier does from a fixed set of
	// tasks taken from the synthesizer at the start (replay only).
	StrategyFrontierNoSynth = "frontier-no-synth"
	// StrategyUniform replays tasks uniformly, takes the same share of
	// fresh tasks from the synthesizer's own mix, retires nothing.
	StrategyUniform = "uniform"
	// StrategyEasy replays tasks whose posterior mean is above 0.8.
	StrategyEasy = "easy"
	// StrategyHard replays tasks whose posterior mean is below 0.2.
	StrategyHard = "hard"
	// StrategyOffline plays a fixed set taken at the start, uniformly.
	StrategyOffline = "offline"
)

// Strategies lists the Replay strategies.
var Strategies = []string{StrategyFrontier, StrategyUniform, StrategyEasy, StrategyHard, StrategyOffline, StrategyFrontierNoSynth}

// ReplayConfig shapes a Replay curriculum.
type ReplayConfig struct {
	Strategy string         `json:"strategy"`
	Estimate EstimateConfig `json:"estimate"`
	// Temperature sharpens (< 1) or flattens (> 1) the rank
	// prioritization: task of rank r is drawn ∝ r^(−1/Temperature).
	Temperature float64 `json:"temperature"`
	// Staleness is the share of the replay distribution given to how long
	// a task has gone unplayed (ρ of Prioritized Level Replay).
	Staleness float64 `json:"staleness"`
	// FreshShare is the expected share of fresh tasks in each plan.
	FreshShare float64 `json:"fresh_share"`
	// Capacity bounds the replay buffer; the least learnable task leaves
	// first.
	Capacity int `json:"capacity"`
	// FixedSet is the number of tasks offline and frontier-no-synth take
	// from the synthesizer before they only replay.
	FixedSet int `json:"fixed_set"`
	// Explore is the share of frontier's synthesis requests that ask for
	// any bin (the synthesizer's own mix), so that unseen bins are found.
	Explore float64 `json:"explore"`
	// Difficulty is what non-steered requests ask for; frontier aims its
	// requests' difficulty at a pass rate of one half (a Target), for
	// sources that take only a difficulty.
	Difficulty float64 `json:"difficulty"`
	// EasyAbove and HardBelow are the posterior means easy and hard select by.
	// UpdateGroups is the run's groups per learner update: the estimate's
	// Discount applies per 4 groups learned from, so an update of B groups
	// discounts by Discount^(B/4).
	UpdateGroups int     `json:"update_groups"`
	EasyAbove    float64 `json:"easy_above"`
	HardBelow    float64 `json:"hard_below"`
	Seed         uint64  `json:"seed"`
	// Compound is the share of frontier's synthesis requests that ask a
	// Compounder source for a compound task: a buffered task that the
	// policy solves more often than not, with the highest expected
	// learnability, made harder by one more mutation (at most
	// MaxCompoundK mutations, and MaxCompounds requests per base). 0: none.
	Compound float64 `json:"compound,omitempty"`
	// Return judges a task by the return GRPO compares (the reward less
	// the try cost, ReturnObserver) as well as by its 0/1 reward: a task
	// whose latest group's returns differed (solved every time, but in
	// different numbers of tries) still gives the learner a signal, so it
	// is scored as learnable as a task solved half the time and is not
	// retired as saturated.
	Return bool `json:"return,omitempty"`
}

// ReturnObserver is a Curriculum that also learns from each episode's
// return, the reward less its try cost (policy.Return), which GRPO
// compares within a group. The curriculum actor calls ObserveReturn just
// before Observe, for the same episode.
type ReturnObserver interface {
	ObserveReturn(t *env.Task, ret float64, group uint64)
}

// ReplayOptions are the settings of a ReplayConfig that frog's commands
// take from their user (--fresh-share, --curriculum-temperature, …), as
// their config.json records them; Apply sets them in a ReplayConfig.
// Rounds holds the rounds curriculum's (--round-size, …).
type ReplayOptions struct {
	FreshShare  float64 `json:"fresh_share"`
	Temperature float64 `json:"temperature"`
	Staleness   float64 `json:"staleness"`
	Discount    float64 `json:"discount"`
	FixedSet    int     `json:"fixed_set"`
	Capacity    int     `json:"capacity"`
	Compound    float64 `json:"compound,omitempty"`
	// Return judges tasks by the return GRPO compares (ReplayConfig.Return).
	Return bool `json:"return,omitempty"`
	// Rounds are the rounds curriculum's settings.
	Rounds RoundsOptions `json:"rounds"`
}

// Apply sets o's settings in cfg.
func (o ReplayOptions) Apply(cfg *ReplayConfig) {
	cfg.FreshShare, cfg.Temperature, cfg.Staleness = o.FreshShare, o.Temperature, o.Staleness
	cfg.Estimate.Discount, cfg.FixedSet, cfg.Capacity = o.Discount, o.FixedSet, o.Capacity
	cfg.Compound, cfg.Return = o.Compound, o.Return
}

// MaxCompoundK is the most mutations a compound task is made with;
// MaxCompounds the most compound requests made of one base task.
const (
	MaxCompoundK = 3
	MaxCompounds = 2
)

// compoundKey is the request key (reqOf) of the tasks of compound requests.
const compoundKey = "compound"

// DefaultReplayConfig is the frontier curriculum `frog train` and `frog
// sim` run by default.
func DefaultReplayConfig() ReplayConfig {
	return ReplayConfig{
		Strategy: StrategyFrontier, Estimate: DefaultEstimateConfig(), Temperature: 0.5, Staleness: 0.2,
		FreshShare: 0.25, Capacity: 4096, FixedSet: 256, Explore: 0.1, UpdateGroups: 4, EasyAbove: 0.8, HardBelow: 0.2,
	}
}

// FrontierStats is a Replay curriculum's state.
type FrontierStats struct {
	Strategy string `json:"strategy"`
	// Buffer is the tasks held; Active those not retired; Frontier those
	// tried whose posterior mean lies in [0.1, 0.9].
	Buffer   int `json:"buffer"`
	Active   int `json:"active"`
	Frontier int `json:"frontier_size"`
	Retired  int `json:"retired"`
	// RetiredTotal and Returned count retirements and returns so far.
	RetiredTotal int64 `json:"retired_total"`
	Returned     int64 `json:"returned"`
	Evicted      int64 `json:"evicted"`
	// Replayed and Fresh count the tasks served of each kind.
	Replayed int64 `json:"replayed"`
	Fresh    int64 `json:"fresh"`
	// FreshPassRate is the pass rate of fresh tasks' first group; Aim the
	// pass rate the steering controller aims its bin choice at.
	FreshPassRate float64 `json:"fresh_pass_rate"`
	// SteeredPassRate is that of the fresh tasks of the bins and knobs the
	// controller chose (the exploring requests left out).
	SteeredPassRate float64 `json:"steered_pass_rate"`
	Aim             float64 `json:"controller_aim"`
	// MeanHistogram counts active tried tasks by posterior mean, in
	// fifths [0, 0.2), …, [0.8, 1].
	MeanHistogram [5]int `json:"mean_histogram"`
	// Requests counts synthesis requests; Steered those that named a bin.
	Requests int64 `json:"synth_requests"`
	Steered  int64 `json:"synth_steered"`
	// SteeredTasks counts the tasks that requests naming a bin or knob
	// brought; SteeredMatched those in the bin asked for.
	SteeredTasks   int64 `json:"steered_tasks"`
	SteeredMatched int64 `json:"steered_matched"`
	// Compounds counts the compound requests; CompoundTasks the compound
	// tasks they brought; CompoundTried and CompoundPassed the outcomes of
	// those tasks' first groups.
	Compounds      int64       `json:"compound_requests,omitempty"`
	CompoundTasks  int64       `json:"compound_tasks,omitempty"`
	CompoundTried  int64       `json:"compound_tried,omitempty"`
	CompoundPassed int64       `json:"compound_passed,omitempty"`
	Bins           []BinReport `json:"bins,omitempty"`
}

// BinReport is one bin's line of FrontierStats.
type BinReport struct {
	Bin      string  `json:"bin"`
	Tasks    int     `json:"tasks"`
	Frontier int     `json:"frontier"`
	Mean     float64 `json:"pooled_mean"`
	Score    float64 `json:"pooled_score"`
	// Requested is the tasks asked of this bin; Yield the tasks made in it
	// (from any request).
	Requested int64 `json:"requested"`
	Yield     int64 `json:"yield"`
}

type entry struct {
	t   *env.Task
	bin string
	// belief and binEv are the estimate's belief of the task and evidence
	// of its bin, kept once they exist (scoring.posterior).
	belief *taskBelief
	binEv  *evidence
	// post is the task's posterior Beta(post[0], post[1]) when the
	// estimate had made postChanges changes and the inner target's ability
	// was postAbility: Plan, eviction and Request score the same buffer
	// between two outcomes.
	post        [2]float64
	postChanges uint64
	postAbility float64
	postSet     bool
	last        int64 // the plan that last served it
	served      int64
	retired     bool
	// seen says an outcome arrived; firstGroup is the group it came from.
	// A task is replayed only once seen, so that group is its first.
	seen       bool
	firstGroup uint64
	// groups counts the distinct groups whose outcomes arrived (lastGroup
	// the latest): served − groups are in flight.
	groups    int64
	lastGroup uint64
	// compounded counts the compound requests made of it.
	compounded int
	// With ReplayConfig.Return: retGroup is the group whose returns
	// retFirst and retDiffer describe (the first one seen, and whether
	// any other differed from it); spread is whether the latest group
	// with two returns or more had returns that differed.
	retGroup  uint64
	retN      int
	retFirst  float64
	retDiffer bool
	spread    bool
}

// lostAfter is how many plans after its last serve a task whose group is
// still in flight may be replayed anyway: that group's outcomes were lost
// (infrastructure failures are never observed).
const lostAfter = 64

// Replay is the replay-buffer curriculum: the estimate, a buffer of the
// tasks served, and one of the strategies. It is plain synchronous code:
// the curriculum actor drives it from one goroutine.
type Replay struct {
	cfg    ReplayConfig
	est    *Estimate
	target *Target
	// pcg is rng's source, kept for its state (Snapshot).
	pcg *rand.PCG
	rng *rand.Rand

	buf     []*entry
	byID    map[string]*entry
	tick    int64
	version int64
	taken   int // fresh tasks admitted
	// plannedFresh counts fresh tasks planned (fixed-set strategies).
	plannedFresh int

	freshPass, freshN     int64
	steeredPass, steeredN int64
	// aim is the pass rate the bin choice aims at: an integral controller
	// moves it so that fresh tasks pass the target's share of the time.
	aim              float64
	requested, yield map[string]int64
	// matched counts, per request key, the tasks made for it that were in
	// the bin asked for: what the synthesizer can make of each request.
	matched map[string]int64
	// reqOf is the request (knobs key) each fresh task was made for, and
	// reqEv the first-group outcomes of each request's tasks (discounted as
	// the estimate is): what asking for one knob alone yields.
	reqOf map[string]string
	reqEv map[string]*evidence
	t     tally
	// rankW[i] is the score weight of rank i+1, (i+1)^(−1/Temperature),
	// grown as the candidates grow (weights).
	rankW []float64
	rank  ranker
	// scr holds Plan's slices from plan to plan (contents valid only
	// during one).
	scr struct {
		cands, picked  []*entry
		w, stale, tree []float64
	}
	st FrontierStats
}

// NewReplay returns a Replay curriculum.
func NewReplay(cfg ReplayConfig) (*Replay, error) {
	if !slices.Contains(Strategies, cfg.Strategy) {
		return nil, fmt.Errorf("curriculum %q: want one of %v", cfg.Strategy, Strategies)
	}
	switch {
	case !(cfg.Temperature > 0) || math.IsInf(cfg.Temperature, 0):
		return nil, fmt.Errorf("curriculum temperature %v: want > 0", cfg.Temperature)
	case !(cfg.Staleness >= 0 && cfg.Staleness <= 1):
		return nil, fmt.Errorf("curriculum staleness %v: want a share in [0, 1]", cfg.Staleness)
	case !(cfg.FreshShare >= 0 && cfg.FreshShare <= 1):
		return nil, fmt.Errorf("fresh share %v: want a share in [0, 1]", cfg.FreshShare)
	case !(cfg.Explore >= 0 && cfg.Explore <= 1):
		return nil, fmt.Errorf("explore share %v: want a share in [0, 1]", cfg.Explore)
	case !(cfg.Compound >= 0 && cfg.Compound <= 1):
		return nil, fmt.Errorf("compound share %v: want a share in [0, 1]", cfg.Compound)
	case cfg.UpdateGroups < 1:
		return nil, fmt.Errorf("update groups %d: want >= 1", cfg.UpdateGroups)
	case cfg.Capacity < 1 || cfg.FixedSet < 1:
		return nil, fmt.Errorf("replay capacity %d, fixed set %d: want >= 1", cfg.Capacity, cfg.FixedSet)
	}
	est, err := NewEstimate(cfg.Estimate)
	if err != nil {
		return nil, err
	}
	target, err := NewTarget(0.5, cfg.Difficulty, 0.01)
	if err != nil {
		return nil, err
	}
	pcg := rand.NewPCG(cfg.Seed, 0x7265706c6179)
	r := &Replay{cfg: cfg, est: est, target: target, aim: target.PassRate, pcg: pcg, rng: rand.New(pcg),
		byID: make(map[string]*entry), requested: map[string]int64{}, yield: map[string]int64{}, matched: map[string]int64{},
		reqOf: map[string]string{}, reqEv: map[string]*evidence{}}
	est.Predictor = r.predict
	return r, nil
}

// predict is the estimate's Predictor: σ(a − d), a the inner target's
// ability estimate on the difficulty scale and d the task's difficulty
// estimate.
func (r *Replay) predict(id string) (float64, bool) {
	e := r.byID[id]
	if e == nil {
		return 0, false
	}
	return sigmoid(r.predictLogit(e)), true
}

// predictLogit is the logit of predict's answer for a buffered task.
func (r *Replay) predictLogit(e *entry) float64 { return r.target.a - e.t.Difficulty }

// scoring reads buffered tasks' posteriors off one view of the
// estimate (each bin's prior computed once), with predict's prediction
// taken from the entry rather than looked up: what Plan, eviction and Stats
// do for every task buffered. It is valid until the estimate next changes.
type scoring struct {
	r *Replay
	s view
}

func (r *Replay) scoring() scoring { return scoring{r: r, s: r.est.view()} }

// posterior is r.est.Posterior(e.t.ID, e.bin). The entry keeps its
// task's belief and its bin's evidence once the estimate has them, rather
// than look them up by name for every score: the estimate neither
// replaces nor drops them while the task is buffered (Forget comes with
// eviction, and a restored Replay has new entries).
func (c scoring) posterior(e *entry) (a, b float64) {
	est := c.s.e
	if e.postSet && e.postChanges == est.changes && e.postAbility == c.r.target.a {
		return e.post[0], e.post[1]
	}
	a, b = c.compute(e)
	e.post, e.postChanges, e.postAbility, e.postSet = [2]float64{a, b}, est.changes, c.r.target.a, true
	return a, b
}

// compute is posterior, computed.
func (c scoring) compute(e *entry) (a, b float64) {
	est := c.s.e
	if e.belief == nil {
		e.belief = est.tasks[e.t.ID]
	}
	if e.belief != nil && e.belief.bin != e.bin {
		return c.s.posterior(e.t.ID, e.bin, c.r.predictLogit(e))
	}
	if e.binEv == nil {
		e.binEv = est.bins[e.bin]
	}
	return c.s.posteriorOf(e.belief, e.binEv, c.r.predictLogit(e))
}

// score is r.est.Score(e.t.ID, e.bin); with ReplayConfig.Return, a task
// whose latest group's returns differed scores at least as a task solved
// half the time on the same evidence would.
func (c scoring) score(e *entry) float64 {
	a, b := c.posterior(e)
	s := Learnability(a, b)
	if c.r.cfg.Return && e.spread {
		n := a + b
		s = max(s, 0.25*n/(n+1))
	}
	return s
}

// mean is r.est.Mean(e.t.ID, e.bin).
func (c scoring) mean(e *entry) float64 {
	a, b := c.posterior(e)
	return a / (a + b)
}

// Estimate is the curriculum's estimate (read it from the curriculum's
// goroutine only).
func (r *Replay) Estimate() *Estimate { return r.est }

func (r *Replay) fixedSet() bool {
	return r.cfg.Strategy == StrategyOffline || r.cfg.Strategy == StrategyFrontierNoSynth
}

func (r *Replay) frontierLike() bool {
	return r.cfg.Strategy == StrategyFrontier || r.cfg.Strategy == StrategyFrontierNoSynth
}

// Plan chooses up to n tasks to replay and leaves the rest to fresh tasks.
func (r *Replay) Plan(n int) Plan {
	r.tick++
	cands := r.candidates()
	defer func() {
		// The scratch slices hold no entry past the plan.
		clear(r.scr.cands)
		clear(r.scr.picked)
	}()
	var p Plan
	var picked []*entry
	if r.fixedSet() {
		// The set's tasks are planned (not yet admitted, perhaps) until it
		// is full; after that only replays, with replacement if need be.
		p.Fresh = min(n, max(0, r.cfg.FixedSet-r.plannedFresh))
		want := n - p.Fresh
		picked = r.draw(cands, want, len(cands) < want)
		if len(picked) < want && len(r.buf) > 0 {
			// Nothing (or too little) replayable: every task of the set
			// is retired or unplayed. Replay the least recently played
			// rather than ask for tasks outside the set.
			all := slices.Clone(r.buf)
			sort.SliceStable(all, func(i, j int) bool { return all[i].last < all[j].last })
			for i := 0; len(picked) < want; i++ {
				picked = append(picked, all[i%len(all)])
			}
		}
		// More than the set only while nothing is there to replay.
		p.Fresh = n - len(picked)
		r.plannedFresh += p.Fresh
	} else {
		want := n - r.round(float64(n)*r.cfg.FreshShare)
		picked = r.draw(cands, min(want, len(cands)), false)
		p.Fresh = n - len(picked)
	}
	p.Replay = make([]*env.Task, len(picked))
	for i, e := range picked {
		e.last, e.served = r.tick, e.served+1
		p.Replay[i] = e.t
	}
	r.st.Replayed += int64(len(p.Replay))
	return p
}

// round rounds x up or down at random, keeping its expectation.
func (r *Replay) round(x float64) int {
	f := math.Floor(x)
	if r.rng.Float64() < x-f {
		f++
	}
	return int(f)
}

// candidates are the buffered tasks the strategy may replay.
func (r *Replay) candidates() []*entry {
	out := grow(r.scr.cands, len(r.buf))[:0]
	defer func() { r.scr.cands = out }()
	sc := r.scoring()
	for _, e := range r.buf {
		if r.frontierLike() && e.served > e.groups && r.tick-e.last <= lostAfter {
			// Not while a group of it is in flight: its outcomes say
			// whether it is still worth a group, and with thousands of
			// episodes in flight the best task would otherwise be planned
			// over and over on stale evidence. This also keeps a task's
			// first outcomes those of its first group.
			continue
		}
		if !e.seen && r.cfg.Strategy != StrategyOffline && r.cfg.Strategy != StrategyUniform {
			// Not before its first group's outcomes: a task's first
			// outcomes must come from its first group (a fair draw of its
			// bin), and an unplayed task has nothing to be chosen for.
			continue
		}
		switch r.cfg.Strategy {
		case StrategyFrontier, StrategyFrontierNoSynth:
			if e.retired {
				continue
			}
		case StrategyEasy:
			if r.tries(e) == 0 || sc.mean(e) <= r.cfg.EasyAbove {
				continue
			}
		case StrategyHard:
			if r.tries(e) == 0 || sc.mean(e) >= r.cfg.HardBelow {
				continue
			}
		}
		out = append(out, e)
	}
	return out
}

// draw picks k of cands, by the strategy's distribution.
func (r *Replay) draw(cands []*entry, k int, replace bool) []*entry {
	if k <= 0 || len(cands) == 0 {
		return nil
	}
	f := fenwick{w: r.weights(cands), tree: grow(r.scr.tree, len(cands)+1)}
	r.scr.tree = f.tree
	f.build()
	out := grow(r.scr.picked, k)[:0]
	defer func() { r.scr.picked = out }()
	for range k {
		i, ok := f.find(r.rng.Float64())
		if !ok {
			break
		}
		out = append(out, cands[i])
		if !replace {
			f.zero(i)
		}
	}
	return out
}

// fenwick draws indices in proportion to their weights, and takes a weight
// out, in O(log n) each, after an O(n) build: Plan draws hundreds of tasks
// from thousands buffered with one.
type fenwick struct {
	w    []float64 // the weights as they stand
	tree []float64 // tree[i] sums w over (i − lowbit(i), i], 1-based
	left int       // weights still positive
}

func newFenwick(w []float64) *fenwick {
	f := &fenwick{w: w, tree: make([]float64, len(w)+1)}
	f.build()
	return f
}

// build sums f.w into f.tree (of length len(f.w)+1, whatever it holds).
func (f *fenwick) build() {
	clear(f.tree)
	f.left = 0
	for i, x := range f.w {
		if x > 0 {
			f.left++
		}
		j := i + 1
		f.tree[j] += x
		if k := j + j&-j; k < len(f.tree) {
			f.tree[k] += f.tree[j]
		}
	}
}

// find is the index whose share of the total weight holds u·total (u in
// [0, 1)); ok is false when no weight is left.
func (f *fenwick) find(u float64) (int, bool) {
	if f.left == 0 {
		return 0, false
	}
	n := len(f.w)
	total := 0.0
	for j := n; j > 0; j -= j & -j {
		total += f.tree[j]
	}
	if !(total > 0) {
		return 0, false
	}
	target, pos := u*total, 0
	for step := 1 << bits.Len(uint(n)); step > 0; step >>= 1 {
		if next := pos + step; next <= n && f.tree[next] <= target {
			pos = next
			target -= f.tree[next]
		}
	}
	// pos is the index of the first prefix beyond target; rounding can leave
	// it on a weight of zero or past the end: take the nearest positive one.
	for i := min(pos, n-1); i >= 0; i-- {
		if f.w[i] > 0 {
			return i, true
		}
	}
	for i := pos + 1; i < n; i++ {
		if f.w[i] > 0 {
			return i, true
		}
	}
	return 0, false
}

// zero takes index i's weight out.
func (f *fenwick) zero(i int) {
	x := f.w[i]
	if !(x > 0) {
		return
	}
	f.w[i], f.left = 0, f.left-1
	for j := i + 1; j < len(f.tree); j += j & -j {
		f.tree[j] -= x
	}
}

// weights is the replay distribution over cands: for the frontier
// strategies (1−ρ)·P_score + ρ·P_stale, P_score ∝ rank^(−1/T) by expected
// learnability and P_stale ∝ plans since the task was last served; uniform
// for the others.
func (r *Replay) weights(cands []*entry) []float64 {
	w := grow(r.scr.w, len(cands))
	r.scr.w = w
	if !r.frontierLike() {
		for i := range w {
			w[i] = 1
		}
		return w
	}
	sc := r.scoring()
	order := r.rank.byScore(len(cands), func(i int) float64 { return -sc.score(cands[i]) })
	var ssum, csum float64
	stale := grow(r.scr.stale, len(cands))
	r.scr.stale = stale
	for i := len(r.rankW); i < len(cands); i++ {
		r.rankW = append(r.rankW, math.Pow(float64(i+1), -1/r.cfg.Temperature))
	}
	for rank, x := range order {
		w[x.i] = r.rankW[rank]
		ssum += w[x.i]
	}
	for i, e := range cands {
		stale[i] = float64(r.tick - e.last)
		csum += stale[i]
	}
	for i := range w {
		w[i] = (1 - r.cfg.Staleness) * w[i] / ssum
		if csum > 0 {
			w[i] += r.cfg.Staleness * stale[i] / csum
		}
	}
	return w
}

// Admit puts fresh tasks into the buffer, evicting the least learnable
// tasks beyond its capacity.
func (r *Replay) Admit(tasks []*env.Task) {
	for _, t := range tasks {
		r.taken++
		r.st.Fresh++
		if e := r.byID[t.ID]; e != nil {
			e.last, e.served = r.tick, e.served+1
			continue
		}
		e := &entry{t: t, bin: synth.BinOf(t).Key(), last: r.tick, served: 1}
		r.buf = append(r.buf, e)
		r.byID[t.ID] = e
	}
	r.evict()
}

// evict drops the buffer's tasks beyond its capacity, those of lowest
// expected learnability (retired ones first; among equals the earliest
// buffered). No score changes while it evicts (forgetting a task changes
// no other's), so the scores are computed once, not once a task evicted:
// with thousands of tasks buffered that was most of a simulation's time.
func (r *Replay) evict() {
	over := len(r.buf) - r.cfg.Capacity
	if over <= 0 {
		return
	}
	sc := r.scoring()
	order := r.rank.byScore(len(r.buf), func(i int) float64 {
		if r.buf[i].retired {
			return -1
		}
		return sc.score(r.buf[i])
	})
	gone := make([]bool, len(r.buf))
	for _, x := range order[:over] {
		gone[x.i] = true
		id := r.buf[x.i].t.ID
		delete(r.byID, id)
		delete(r.reqOf, id)
		r.est.Forget(id)
		r.st.Evicted++
	}
	kept := r.buf[:0]
	for i, e := range r.buf {
		if !gone[i] {
			kept = append(kept, e)
		}
	}
	clear(r.buf[len(kept):])
	r.buf = kept
}

// Request asks for fresh tasks. Frontier names the candidate of highest
// value among the bins seen and each knob value seen alone (candidates4): with m = (1 + S)/(2 + S + F) the bin's pooled pass
// rate (S, F its discounted passes and failures in first groups) and
// sd = √(m(1−m)/(3+S+F)) its uncertainty, the value is
// 1 − ((m − a)/max(a, 1 − a))² + sd (an optimistic bound: uncertain bins are
// tried, bins whose evidence has faded are tried again), times
// 1 − f/(10(f + 16)) for the f frontier tasks the buffer holds of it, so
// that requests move on to bins where the frontier is thin, times the
// synthesizer's yield for it (synthYield), so that requests move on from
// bins it cannot make. The aim a is an
// integral controller's: each outcome r of the first group of a fresh task
// of a bin or knob it chose moves it by 0.002·(τ − r), τ the target pass rate
// (0.5), within τ ± 0.2, so that those tasks pass τ of the time even
// though the bins' pooled means lag behind a policy that learns. A share Explore of requests asks for
// any bin, to find bins never seen. Frontier's requests also carry a
// difficulty aimed at τ (a Target) for sources that take only a
// difficulty. The other strategies ask for the synthesizer's own mix.
func (r *Replay) Request() synth.Request {
	r.st.Requests++
	if r.cfg.Strategy != StrategyFrontier {
		return synth.Request{Difficulty: r.cfg.Difficulty, Knobs: &synth.Knobs{}}
	}
	req := synth.Request{Difficulty: r.target.Difficulty(), Knobs: &synth.Knobs{}}
	if r.cfg.Compound > 0 && r.rng.Float64() < r.cfg.Compound {
		if e := r.compoundBase(); e != nil {
			e.compounded++
			r.st.Compounds++
			req.Base = e.t
			return req
		}
	}
	bins := r.est.Bins()
	if len(bins) == 0 || r.rng.Float64() < r.cfg.Explore {
		return req
	}
	cands := r.candidates4(bins)
	tau := r.aim
	best, bestV := -1, math.Inf(-1)
	for i, c := range cands {
		key := c.k.Key()
		v := binValue(c.ev, tau, c.front) * synthYield(r.matched[key], r.requested[key])
		if v > bestV {
			best, bestV = i, v
		}
	}
	r.st.Steered++
	k := cands[best].k
	req.Knobs = &k
	return req
}

// compoundBase is the task a compound request is made of: among the
// buffered tasks tried and not retired, of fewer than MaxCompoundK
// mutations and compounded fewer than MaxCompounds times, whose posterior
// mean is at least one half (one more bug moves it toward the middle),
// the one of highest expected learnability; nil when there is none.
func (r *Replay) compoundBase() *entry {
	var best *entry
	bestS := math.Inf(-1)
	sc := r.scoring()
	for _, e := range r.buf {
		if e.retired || e.compounded >= MaxCompounds || len(e.t.Mutations) == 0 || len(e.t.Mutations) >= MaxCompoundK ||
			r.tries(e) == 0 || sc.mean(e) < 0.5 {
			continue
		}
		if s := sc.score(e); s > bestS {
			best, bestS = e, s
		}
	}
	return best
}

// steerCandidate is a bin, or one knob alone, that a request may name.
type steerCandidate struct {
	k     synth.Knobs
	ev    evidence
	front int
}

// candidates4 are the bins seen, with their pooled evidence, and, for each
// value seen of each knob (the rank where it is known), that knob alone, with the evidence
// of the fresh tasks made when it was asked for alone (none at first: an
// optimistic value, so each is tried): asking for one knob finds bins
// never seen near those that proved learnable.
func (r *Replay) candidates4(bins []string) []steerCandidate {
	front := map[string]int{}
	sc := r.scoring()
	for _, e := range r.buf {
		if r.onFrontier(sc, e) {
			front[e.bin]++
		}
	}
	var out []steerCandidate
	marg := map[synth.Knobs]int{} // index in out
	add := func(k synth.Knobs, f int) {
		i, ok := marg[k]
		if !ok {
			i = len(out)
			c := steerCandidate{k: k}
			if ev := r.reqEv[k.Key()]; ev != nil {
				c.ev = *ev
			}
			out = append(out, c)
			marg[k] = i
		}
		out[i].front += f
	}
	for _, b := range bins {
		k, err := synth.ParseKnobs(b)
		if err != nil {
			continue
		}
		ev, f := *r.est.bins[b], front[b]
		out = append(out, steerCandidate{k: k, ev: ev, front: f})
	}
	for _, b := range bins {
		k, err := synth.ParseKnobs(b)
		if err != nil {
			continue
		}
		f := front[b]
		add(synth.Knobs{Family: k.Family}, f)
		add(synth.Knobs{K: k.K}, f)
		add(synth.Knobs{Locality: k.Locality}, f)
		if k.Rank != "" {
			add(synth.Knobs{Rank: k.Rank}, f)
		}
		add(synth.Knobs{Module: k.Module}, f)
	}
	return out
}

// observeRequest files an outcome of a fresh task's first group under the
// request the task was made for; one of a bin the controller chose also
// moves the controller's aim.
func (r *Replay) observeRequest(id string, reward float64) {
	k, ok := r.reqOf[id]
	if !ok {
		return
	}
	if k == compoundKey {
		r.st.CompoundTried++
		if reward > 0 {
			r.st.CompoundPassed++
		}
		return
	}
	ev := r.reqEv[k]
	if ev == nil {
		ev = new(evidence)
		r.reqEv[k] = ev
	}
	ev.add(reward)
	if kn, err := synth.ParseKnobs(k); err != nil || kn == (synth.Knobs{}) {
		return
	}
	// Only tasks of a bin (or knob) the controller chose feed it: it
	// corrects the lag of the pooled means behind a policy that learns;
	// the exploring requests are not its to correct. Within ±0.2 of the
	// target: no wind-up when no bin can reach it.
	tau := r.target.PassRate
	r.aim = math.Min(tau+0.2, math.Max(tau-0.2, r.aim+aimRate*(tau-reward)))
	r.steeredN++
	if reward > 0 {
		r.steeredPass++
	}
}

// aimRate is the integral controller's step per fresh outcome.
const aimRate = 0.002

// synthYield is the share of the tasks made for a request key that were in
// its bin, matched of made, with two pseudo-tasks that were: a bin the
// synthesizer cannot make (its modules have no such mutants left, or the
// rank it names is rare) loses Request's favour as it keeps failing to.
func synthYield(matched, made int64) float64 {
	return float64(matched+2) / float64(made+2)
}

// binValue is Request's value of a candidate with evidence ev and f
// frontier tasks, at aim tau.
func binValue(ev evidence, tau float64, f int) float64 {
	n := 2 + ev.pass + ev.fail
	m := (1 + ev.pass) / n
	d := (m - tau) / math.Max(tau, 1-tau)
	return (1 - d*d + math.Sqrt(m*(1-m)/(n+1))) * (1 - float64(f)/(10*float64(f+16)))
}

// Synthesized counts what a request yielded, per bin.
func (r *Replay) Synthesized(req synth.Request, tasks []env.Task) {
	if req.Knobs != nil && *req.Knobs != (synth.Knobs{}) {
		key := req.Knobs.Key()
		r.requested[key] += int64(len(tasks))
		for i := range tasks {
			if req.Knobs.Matches(synth.BinOf(&tasks[i])) {
				r.matched[key]++
			}
		}
	}
	for i := range tasks {
		r.yield[synth.BinOf(&tasks[i]).Key()]++
		switch {
		case req.Base != nil && synth.CompoundOf(&tasks[i], req.Base):
			r.st.CompoundTasks++
			r.reqOf[tasks[i].ID] = compoundKey
		case req.Knobs != nil && r.cfg.Strategy == StrategyFrontier:
			r.reqOf[tasks[i].ID] = req.Knobs.Key()
		}
	}
}

// Observe records an outcome; a frontier strategy retires the task when it
// is confidently outside the band.
func (r *Replay) Observe(t *env.Task, reward float64, group uint64) {
	r.t.add(t.Difficulty, reward)
	e := r.byID[t.ID]
	if e == nil {
		// Evicted while its group was in flight (or never admitted):
		// nothing to keep it for, and its provenance is unknown.
		return
	}
	if !e.seen {
		e.seen, e.firstGroup = true, group
	}
	if e.groups == 0 || group != e.lastGroup {
		e.groups++
		e.lastGroup = group
	}
	first := group == e.firstGroup
	if first {
		r.freshN++
		if reward > 0 {
			r.freshPass++
		}
		r.observeRequest(t.ID, reward)
	}
	r.est.Observe(t.ID, e.bin, reward, first)
	r.target.observe(t.Difficulty, reward)
	if !e.retired && r.frontierLike() {
		if h, s := r.outside(e); h || (s && !(r.cfg.Return && e.spread)) {
			e.retired = true
			r.st.RetiredTotal++
		}
	}
}

// ObserveReturn records the return of one completed episode of task t
// (ReturnObserver); it changes nothing unless ReplayConfig.Return is set.
func (r *Replay) ObserveReturn(t *env.Task, ret float64, group uint64) {
	e := r.byID[t.ID]
	if !r.cfg.Return || e == nil {
		return
	}
	if e.retN == 0 || group != e.retGroup {
		e.retGroup, e.retN, e.retFirst, e.retDiffer = group, 0, ret, false
	}
	e.retN++
	e.retDiffer = e.retDiffer || ret != e.retFirst
	if e.retN >= 2 {
		e.spread = e.retDiffer
	}
}

// Advance discounts the evidence by the updates since the last version
// seen, and brings back retired tasks whose posterior is no longer
// confidently outside the band.
func (r *Replay) Advance(version int64) {
	if version <= r.version {
		return
	}
	// An update of B groups changes the policy about as much as B/4
	// updates of 4 groups: the discount is per 4 groups learned from.
	steps := float64(version-r.version) * float64(r.cfg.UpdateGroups) / 4
	r.est.Discount(steps)
	f := math.Pow(r.cfg.Estimate.Discount, steps)
	for _, ev := range r.reqEv {
		ev.scale(f)
	}
	r.version = version
	for _, e := range r.buf {
		if !e.retired {
			continue
		}
		if h, s := r.outside(e); !h && (!s || r.cfg.Return && e.spread) {
			e.retired = false
			r.st.Returned++
		}
	}
}

// tries is r.est.Tries(e.t.ID), read off the entry.
func (r *Replay) tries(e *entry) int64 {
	if e.belief == nil {
		e.belief = r.est.tasks[e.t.ID]
	}
	if e.belief == nil {
		return 0
	}
	return e.belief.tries
}

// outside is r.est.Outside(e.t.ID), its posterior read off the entry.
func (r *Replay) outside(e *entry) (hopeless, saturated bool) {
	if e.belief == nil {
		e.belief = r.est.tasks[e.t.ID]
	}
	if e.belief == nil {
		return false, false
	}
	return r.est.outside(r.scoring().posterior(e))
}

func (r *Replay) onFrontier(sc scoring, e *entry) bool {
	if e.retired || r.tries(e) == 0 {
		return false
	}
	m := sc.mean(e)
	return m >= 0.1 && m <= 0.9
}

// Stats reports the buffer, the frontier, retirement and synthesis.
func (r *Replay) Stats() CurriculumStats {
	st := r.t.stats(r.cfg.Strategy, r.target.Difficulty())
	f := r.st
	f.Strategy = r.cfg.Strategy
	f.Buffer = len(r.buf)
	per := map[string]*BinReport{}
	bin := func(b string) *BinReport {
		if per[b] == nil {
			per[b] = &BinReport{Bin: b, Mean: r.est.BinMean(b), Score: r.est.BinScore(b), Requested: r.requested[b], Yield: r.yield[b]}
		}
		return per[b]
	}
	sc := r.scoring()
	for _, e := range r.buf {
		br := bin(e.bin)
		br.Tasks++
		if e.retired {
			f.Retired++
			continue
		}
		f.Active++
		if r.onFrontier(sc, e) {
			f.Frontier++
			br.Frontier++
		}
		if r.tries(e) > 0 {
			f.MeanHistogram[min(4, int(5*sc.mean(e)))]++
		}
	}
	for b := range r.yield {
		bin(b)
	}
	for b := range r.requested {
		bin(b)
	}
	for _, b := range per {
		f.Bins = append(f.Bins, *b)
	}
	sort.Slice(f.Bins, func(i, j int) bool { return f.Bins[i].Bin < f.Bins[j].Bin })
	f.Aim = r.aim
	f.SteeredTasks, f.SteeredMatched = 0, 0
	for k, n := range r.requested {
		f.SteeredTasks += n
		f.SteeredMatched += r.matched[k]
	}
	if r.steeredN > 0 {
		f.SteeredPassRate = float64(r.steeredPass) / float64(r.steeredN)
	}
	if r.freshN > 0 {
		f.FreshPassRate = float64(r.freshPass) / float64(r.freshN)
	}
	st.Frontier = &f
	return st
}

var _ ReturnObserver = (*Replay)(nil)
