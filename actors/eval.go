package actors

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"

	"github.com/frognano/frog/curriculum"
	"github.com/frognano/frog/env"
	"github.com/frognano/frog/policy"
	"github.com/frognano/frog/synth"
)

// EvalTask is one task of an evaluation, with the labels its results are
// grouped by.
type EvalTask struct {
	Task   env.Task
	Module string
	Family string
	K      int
}

// EvalConfig says what an evaluation runs.
type EvalConfig struct {
	// Run shapes the episodes (concurrency, steps, tries, retries); its
	// Episodes, GroupSize and GroupsPerUpdate are set from the tasks.
	Run   Config
	Tasks []EvalTask
	// Samples is the number of episodes per task (default 1).
	Samples int
	// Marks are the try counts the solve rate is also reported at
	// (default 1, 3, 10: DefaultMarks): an episode counts as solved
	// within k tries when it was solved and tried at most k candidates.
	Marks []int
}

// DefaultMarks are the try counts an evaluation reports the solve rate at
// unless told otherwise: the first try (where a ranking shows first), a
// few, and the ten an episode may try by default.
var DefaultMarks = []int{1, 3, 10}

// EvalReport is what an evaluation measured. Rates come with their 95%
// Wilson intervals, the mean reciprocal rank with its 95% percentile
// bootstrap interval (MRR). ByModule, ByFamily and ByK break all of them
// down by the task's module, the operator family of its bug (whose
// inverse template is the fix) and its number of bugs.
type EvalReport struct {
	Policy   string   `json:"policy"`
	Tasks    int      `json:"tasks"`
	Episodes int      `json:"episodes"`
	Solved   Rate     `json:"solved"`
	AtTries  []RateAt `json:"solved_at_tries"`
	// MRR is the mean reciprocal rank of the first fix: 1/tries of an
	// episode that was solved, 0 of one that was not.
	MRR      Mean       `json:"mrr"`
	ByModule []RateOf   `json:"by_module"`
	ByFamily []RateOf   `json:"by_family"`
	ByK      []RateOf   `json:"by_k"`
	Cost     EvalCost   `json:"cost"`
	Outcomes EvalCounts `json:"outcomes"`
	// FirstSolves are the scored episodes one by one, in task order:
	// what Compare pairs two policies' episodes by.
	FirstSolves []FirstSolve `json:"first_solves"`
	Summary     Summary      `json:"run"`
	// Interrupted says the evaluation was cut short (its context was
	// done): its rates are of the episodes that completed, and Outcomes
	// counts the ones left out.
	Interrupted bool `json:"interrupted,omitempty"`
}

// FirstSolve is one scored episode of an evaluation: its task, which of
// the task's episodes it was (0, 1, … in the order they were admitted:
// an infrastructure failure keeps its number), and the try that first
// solved it (its tries when solved, at least 1; 0 when not solved).
type FirstSolve struct {
	Task   string `json:"task"`
	Sample int    `json:"sample"`
	Rank   int    `json:"rank"`
}

// Mean is a mean over episodes with its 95% interval.
type Mean struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean"`
	Lo   float64 `json:"lo"`
	Hi   float64 `json:"hi"`
}

// NewMRR is the mean reciprocal rank of ranks (a rank of 0: not solved,
// reciprocal 0) with its 95% percentile bootstrap interval: 2,000
// resamplings drawn from a fixed seed, so that the same ranks give the
// same interval. The interval of fewer than two ranks is [mean, mean].
func NewMRR(ranks []int) Mean {
	xs := make([]float64, len(ranks))
	for i, r := range ranks {
		if r > 0 {
			xs[i] = 1 / float64(r)
		}
	}
	m := Mean{N: len(xs), Mean: policy.Mean(xs)}
	m.Lo, m.Hi = policy.BootstrapMean(xs, 2000, rand.New(rand.NewPCG(1, 2)))
	return m
}

// Rate is a proportion with its 95% Wilson interval.
type Rate struct {
	K    int     `json:"k"`
	N    int     `json:"n"`
	Rate float64 `json:"rate"`
	Lo   float64 `json:"lo"`
	Hi   float64 `json:"hi"`
}

// NewRate makes the Rate of k in n.
func NewRate(k, n int) Rate {
	r := Rate{K: k, N: n}
	if n > 0 {
		r.Rate = float64(k) / float64(n)
	}
	r.Lo, r.Hi = policy.Wilson(k, n)
	return r
}

// RateAt is the solve rate within a number of tries.
type RateAt struct {
	Tries int `json:"tries"`
	Rate
}

// RateOf is the solve rate of one group of tasks, within each of the
// evaluation's marks too, and the mean reciprocal rank of its first fixes.
type RateOf struct {
	Key string `json:"key"`
	Rate
	AtTries []RateAt `json:"solved_at_tries"`
	MRR     Mean     `json:"mrr"`
}

// EvalCost is what the episodes cost, per episode that completed.
type EvalCost struct {
	ExecutionsPerEpisode float64 `json:"test_executions_per_episode"`
	TriesPerEpisode      float64 `json:"tries_per_episode"`
	SecondsPerEpisode    float64 `json:"sandbox_seconds_per_episode"`
	WallSeconds          float64 `json:"wall_seconds"`
}

// EvalCounts are the episodes by outcome. Only completed ones are scored.
type EvalCounts struct {
	Completed   int `json:"completed"`
	FailedInfra int `json:"failed_infra"`
	Cancelled   int `json:"cancelled"`
	// Unplayed counts the episodes an evaluation cut short never
	// started: with Cancelled, what its rates leave out.
	Unplayed int `json:"unplayed,omitempty"`
	// RewardHackSuspected counts the completed episodes whose verdict
	// suspected a reward hack (rewarded 0).
	RewardHackSuspected int `json:"reward_hack_suspected"`
}

// Evaluate plays every task Samples times with deps' policy, frozen, and
// reports the solve rates. deps.Learner must be nil: the policy is pol.
// deps.OnEpisode, when set, is called with every result too (an export).
// When ctx is done before every episode has run, Evaluate stops and
// reports the episodes that completed, marked Interrupted.
func Evaluate(ctx context.Context, cfg EvalConfig, pol policy.Policy, deps Deps) (EvalReport, error) {
	if len(cfg.Tasks) == 0 {
		return EvalReport{}, errors.New("evaluate: no tasks")
	}
	if cfg.Samples <= 0 {
		cfg.Samples = 1
	}
	if len(cfg.Marks) == 0 {
		cfg.Marks = DefaultMarks
	}
	byID := map[string]*EvalTask{}
	tasks := make([]env.Task, len(cfg.Tasks))
	for i := range cfg.Tasks {
		tasks[i] = cfg.Tasks[i].Task
		if byID[tasks[i].ID] != nil {
			// It would be played, and counted, twice.
			return EvalReport{}, fmt.Errorf("evaluate: task %s is listed twice", tasks[i].ID)
		}
		byID[tasks[i].ID] = &cfg.Tasks[i]
	}
	run := cfg.Run
	run.Episodes = int64(len(tasks) * cfg.Samples)
	// The policy is frozen: no staleness bound should throttle admission
	// (with one group per update and the default bound, no more than five
	// groups would run at once, whatever the concurrency).
	run.GroupSize, run.GroupsPerUpdate, run.MaxStaleness = cfg.Samples, 1, MaxStaleness
	var mu sync.Mutex
	var results []EpisodeResult
	also := deps.OnEpisode
	deps.OnEpisode = func(r *EpisodeResult) {
		mu.Lock()
		results = append(results, *r)
		mu.Unlock()
		if also != nil {
			also(r)
		}
	}
	deps.Learner = frozen{pol}
	deps.Source = &listSource{tasks: tasks}
	deps.Curriculum = &curriculum.Fixed{}
	sum, err := Run(ctx, run, deps)
	rep := EvalReport{Tasks: len(tasks), Summary: sum}
	rep.Cost.WallSeconds = sum.ElapsedSeconds
	rep.tally(results, byID, cfg.Marks)
	rep.Outcomes.Unplayed = max(len(tasks)*cfg.Samples-len(results), 0)
	rep.Interrupted = ctx.Err() != nil
	return rep, err
}

// EvaluateWhole is Evaluate for callers that keep whole evaluations only
// (frog train's held-out evaluations, an experiment's held-out points):
// an evaluation cut short by ctx is ctx's error, not the rate of
// whichever tasks finished first (Evaluate reports those, cancelled
// episodes counted apart).
func EvaluateWhole(ctx context.Context, cfg EvalConfig, pol policy.Policy, deps Deps) (EvalReport, error) {
	rep, err := Evaluate(ctx, cfg, pol, deps)
	if err == nil {
		err = ctx.Err()
	}
	return rep, err
}

// tally fills r's outcomes, solve rates (overall, at each of marks tries,
// by module, family and k), mean reciprocal ranks, first solves and costs
// from the episodes' results.
func (r *EvalReport) tally(results []EpisodeResult, byID map[string]*EvalTask, marks []int) {
	results = slices.Clone(results)
	slices.SortFunc(results, func(a, b EpisodeResult) int { return cmp.Compare(a.Episode, b.Episode) })
	samples := map[string]int{}
	var all []int
	groups := map[string]map[string][]int{"module": {}, "family": {}, "k": {}}
	var execs, tries int
	var secs float64
	for _, res := range results {
		var id string
		if res.Task != nil {
			id = res.Task.ID
		}
		sample := samples[id]
		samples[id]++
		switch res.Kind {
		case FailedInfra:
			r.Outcomes.FailedInfra++
			continue
		case Cancelled:
			r.Outcomes.Cancelled++
			continue
		}
		r.Outcomes.Completed++
		tr := res.Trajectory
		if tr != nil && tr.RewardHackSuspected != "" {
			r.Outcomes.RewardHackSuspected++
		}
		rank := 0
		if tr != nil && tr.Reward > 0 {
			rank = max(tr.Tries, 1) // solved by an edit of its own: the first try
		}
		all = append(all, rank)
		r.FirstSolves = append(r.FirstSolves, FirstSolve{Task: id, Sample: sample, Rank: rank})
		if tr != nil {
			execs += tr.Executions
			tries += tr.Tries
			for _, s := range tr.Steps {
				secs += s.Result.Duration.Seconds()
			}
		}
		et := byID[id]
		if et == nil {
			continue
		}
		for kind, key := range map[string]string{"module": et.Module, "family": et.Family, "k": strconv.Itoa(et.K)} {
			groups[kind][key] = append(groups[kind][key], rank)
		}
	}
	slices.SortStableFunc(r.FirstSolves, func(a, b FirstSolve) int {
		return cmp.Or(cmp.Compare(a.Task, b.Task), cmp.Compare(a.Sample, b.Sample))
	})
	n := r.Outcomes.Completed
	r.Episodes = n
	g := rankRates("", all, marks)
	r.Solved, r.AtTries, r.MRR = g.Rate, g.AtTries, g.MRR
	r.ByModule, r.ByFamily, r.ByK = rates(groups["module"], marks), rates(groups["family"], marks), rates(groups["k"], marks)
	if n > 0 {
		r.Cost.ExecutionsPerEpisode = float64(execs) / float64(n)
		r.Cost.TriesPerEpisode = float64(tries) / float64(n)
		r.Cost.SecondsPerEpisode = secs / float64(n)
	}
}

// rankRates is what ranks (first solves, 0 for none) measure: the solve
// rate, within each of marks tries, and the mean reciprocal rank.
func rankRates(key string, ranks []int, marks []int) RateOf {
	solved, within := 0, make([]int, len(marks))
	for _, rank := range ranks {
		if rank == 0 {
			continue
		}
		solved++
		for i, m := range marks {
			if rank <= m {
				within[i]++
			}
		}
	}
	g := RateOf{Key: key, Rate: NewRate(solved, len(ranks)), MRR: NewMRR(ranks)}
	for i, m := range marks {
		g.AtTries = append(g.AtTries, RateAt{Tries: m, Rate: NewRate(within[i], len(ranks))})
	}
	return g
}

func rates(m map[string][]int, marks []int) []RateOf {
	out := make([]RateOf, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, rankRates(k, m[k], marks))
	}
	return out
}

// Paired is a paired comparison of two evaluations, A and B, at one number
// of tries: of the episodes both scored (the same task and sample), how
// many both solved within Tries, A only, B only, and the two-sided p of
// McNemar's exact test on the discordant ones (policy.McNemar).
type Paired struct {
	Tries int     `json:"tries"`
	Pairs int     `json:"pairs"`
	Both  int     `json:"both_solved"`
	AOnly int     `json:"a_only"`
	BOnly int     `json:"b_only"`
	P     float64 `json:"p"`
}

// Comparison is two evaluations of the same tasks compared pair by pair.
// With more than one episode a task, the pairs of one task are not
// independent and P understates the doubt: Approximate says so.
type Comparison struct {
	A           string   `json:"a"`
	B           string   `json:"b"`
	AtTries     []Paired `json:"at_tries"`
	Approximate bool     `json:"approximate,omitempty"`
}

// Compare pairs a's and b's scored episodes by task and sample and tests,
// at each of marks tries, whether one solves what the other does not more
// often than chance would. Episodes scored in one evaluation only (an
// infrastructure failure in the other, a task the other did not play)
// are left out of the pairs.
func Compare(a, b EvalReport, marks []int) Comparison {
	type key struct {
		task   string
		sample int
	}
	ranks := make(map[key]int, len(b.FirstSolves))
	for _, f := range b.FirstSolves {
		ranks[key{f.Task, f.Sample}] = f.Rank
	}
	c := Comparison{A: a.Policy, B: b.Policy}
	for _, m := range marks {
		p := Paired{Tries: m}
		for _, f := range a.FirstSolves {
			rb, ok := ranks[key{f.Task, f.Sample}]
			if !ok {
				continue
			}
			if f.Sample > 0 {
				c.Approximate = true
			}
			p.Pairs++
			sa, sb := f.Rank > 0 && f.Rank <= m, rb > 0 && rb <= m
			switch {
			case sa && sb:
				p.Both++
			case sa:
				p.AOnly++
			case sb:
				p.BOnly++
			}
		}
		p.P = policy.McNemar(p.AOnly, p.BOnly)
		c.AtTries = append(c.AtTries, p)
	}
	return c
}

// frozen is a learner that never changes its policy: evaluation.
type frozen struct{ p policy.Policy }

func (f frozen) Policy() policy.Policy { return f.p }

func (f frozen) Update(ctx context.Context, batch []policy.Group) (policy.Policy, policy.UpdateStats, error) {
	return f.p, policy.UpdateStats{Groups: len(batch)}, ctx.Err()
}

// listSource serves a fixed list of tasks in order, each once.
type listSource struct {
	mu    sync.Mutex
	tasks []env.Task
	next  int
}

func (s *listSource) Tasks(_ context.Context, n int, _ float64) ([]env.Task, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.next >= len(s.tasks) {
		return nil, fmt.Errorf("evaluate: all %d tasks served: %w", len(s.tasks), synth.ErrExhausted)
	}
	end := min(s.next+n, len(s.tasks))
	out := slices.Clone(s.tasks[s.next:end])
	s.next = end
	return out, nil
}
