package actors

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
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
	// (default 1, 5, 10): an episode counts as solved within k tries when
	// it was solved and tried at most k candidates.
	Marks []int
}

// EvalReport is what an evaluation measured. Rates come with their 95%
// Wilson intervals.
type EvalReport struct {
	Policy   string     `json:"policy"`
	Tasks    int        `json:"tasks"`
	Episodes int        `json:"episodes"`
	Solved   Rate       `json:"solved"`
	AtTries  []RateAt   `json:"solved_at_tries"`
	ByModule []RateOf   `json:"by_module"`
	ByFamily []RateOf   `json:"by_family"`
	ByK      []RateOf   `json:"by_k"`
	Cost     EvalCost   `json:"cost"`
	Outcomes EvalCounts `json:"outcomes"`
	Summary  Summary    `json:"run"`
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

// RateOf is the solve rate of one group of tasks.
type RateOf struct {
	Key string `json:"key"`
	Rate
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
	// RewardHackSuspected counts the completed episodes whose verdict
	// suspected a reward hack (rewarded 0).
	RewardHackSuspected int `json:"reward_hack_suspected"`
}

// Evaluate plays every task Samples times with deps' policy, frozen, and
// reports the solve rates. deps.Learner must be nil: the policy is pol.
// deps.OnEpisode, when set, is called with every result too (an export).
func Evaluate(ctx context.Context, cfg EvalConfig, pol policy.Policy, deps Deps) (EvalReport, error) {
	if len(cfg.Tasks) == 0 {
		return EvalReport{}, errors.New("evaluate: no tasks")
	}
	if cfg.Samples <= 0 {
		cfg.Samples = 1
	}
	if len(cfg.Marks) == 0 {
		cfg.Marks = []int{1, 5, 10}
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
// by module, family and k) and costs from the episodes' results.
func (r *EvalReport) tally(results []EpisodeResult, byID map[string]*EvalTask, marks []int) {
	solved, atTries := 0, make([]int, len(marks))
	groups := map[string]map[string][2]int{"module": {}, "family": {}, "k": {}}
	var execs, tries int
	var secs float64
	for _, res := range results {
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
		win := tr != nil && tr.Reward > 0
		if win {
			solved++
			for i, m := range marks {
				if tr.Tries <= m {
					atTries[i]++
				}
			}
		}
		if tr != nil {
			execs += tr.Executions
			tries += tr.Tries
			for _, s := range tr.Steps {
				secs += s.Result.Duration.Seconds()
			}
		}
		et := byID[res.Task.ID]
		if et == nil {
			continue
		}
		for kind, key := range map[string]string{"module": et.Module, "family": et.Family, "k": strconv.Itoa(et.K)} {
			g := groups[kind][key]
			g[1]++
			if win {
				g[0]++
			}
			groups[kind][key] = g
		}
	}
	n := r.Outcomes.Completed
	r.Episodes = n
	r.Solved = NewRate(solved, n)
	for i, m := range marks {
		r.AtTries = append(r.AtTries, RateAt{Tries: m, Rate: NewRate(atTries[i], n)})
	}
	r.ByModule, r.ByFamily, r.ByK = rates(groups["module"]), rates(groups["family"]), rates(groups["k"])
	if n > 0 {
		r.Cost.ExecutionsPerEpisode = float64(execs) / float64(n)
		r.Cost.TriesPerEpisode = float64(tries) / float64(n)
		r.Cost.SecondsPerEpisode = secs / float64(n)
	}
}

func rates(m map[string][2]int) []RateOf {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]RateOf, 0, len(keys))
	for _, k := range keys {
		out = append(out, RateOf{Key: k, Rate: NewRate(m[k][0], m[k][1])})
	}
	return out
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
