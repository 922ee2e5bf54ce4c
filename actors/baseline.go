package actors

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/policy"
)

// RunBaseline does the per-episode work of Run with plain goroutines and
// channels and no actors: the same task source and curriculum, one goroutine
// per episode playing env.Run in a sandbox of the same provider, a batching
// policy goroutine, a learner goroutine forming the same GRPO groups and
// calling the same learner (one update at a time, on that goroutine), the
// same staleness gate and retries. It exists to measure what the actor
// runtime costs (`frog bench`); it has no supervision and no graceful
// cancellation of running episodes beyond ctx. A failure of the task source
// ends admission and is returned with the summary.
func RunBaseline(ctx context.Context, cfg Config, deps Deps) (Summary, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return Summary{}, err
	}
	if cfg.Episodes <= 0 {
		return Summary{}, errors.New("baseline: needs an episode budget")
	}
	start := time.Now()
	bl := &baseline{
		cfg: cfg, deps: deps,
		results:  make(chan *EpisodeResult, cfg.Concurrency),
		requests: make(chan baselineReq, cfg.Concurrency),
		b:        newBatcher(cfg.GroupsPerUpdate, cfg.MaxStaleness),
	}
	bl.gate = sync.NewCond(&bl.gateMu)
	bl.pol.Store(&policyBox{p: deps.Learner.Policy()})
	polDone := make(chan struct{})
	go func() { defer close(polDone); bl.servePolicy(ctx) }()
	learnDone := make(chan struct{})
	go func() { defer close(learnDone); bl.learn(ctx) }()

	srcErr := bl.admit(ctx)
	close(bl.requests)
	<-polDone
	close(bl.results)
	<-learnDone
	return bl.summary(start), srcErr
}

// baseline is RunBaseline's state, shared by its goroutines: the calling
// goroutine admits episodes (admit), one goroutine per episode plays it,
// one answers the policy's requests (servePolicy) and one learns (learn).
type baseline struct {
	cfg  Config
	deps Deps
	c    Counters

	results  chan *EpisodeResult // episodes to the learner; closed after the last
	requests chan baselineReq    // episodes to the policy; closed after the last
	pol      atomic.Pointer[policyBox]
	curMu    sync.Mutex // guards deps.Curriculum

	// The staleness gate: admission waits on gate until the learner's
	// version lets another group in.
	version atomic.Int64
	gateMu  sync.Mutex
	gate    *sync.Cond

	pst      PolicyServerStats // servePolicy's
	b        *batcher          // learn's, as are lst and lversion
	lst      LearnerStats
	lversion int64
}

// servePolicy answers the episodes' requests in batches until requests is
// closed: whatever is waiting, up to MaxBatch, goes to the current policy
// in one call (natural batching, as the policy server does).
func (bl *baseline) servePolicy(ctx context.Context) {
	batch := make([]baselineReq, 0, bl.cfg.MaxBatch)
	for r := range bl.requests {
		batch = append(batch[:0], r)
	drain:
		for len(batch) < bl.cfg.MaxBatch {
			select {
			case r, ok := <-bl.requests:
				if !ok {
					break drain
				}
				batch = append(batch, r)
			default:
				break drain
			}
		}
		box := bl.pol.Load()
		obs := make([]env.Observation, len(batch))
		for i := range batch {
			obs[i] = batch[i].obs
		}
		acts := make([]env.Action, len(batch))
		err := box.p.Act(ctx, obs, acts)
		for i := range batch {
			acts[i].Version = box.v
			batch[i].reply <- baselineResp{act: acts[i], err: err}
		}
		bl.pst.Batches++
		bl.pst.Requests += int64(len(batch))
		bl.pst.MaxBatch = max(bl.pst.MaxBatch, len(batch))
	}
}

// learn takes the episodes' results until results is closed: the learner
// actor's batcher, with each update run in turn on this goroutine, the
// curriculum told of each completed episode, and the staleness gate opened
// after each result.
func (bl *baseline) learn(ctx context.Context) {
	cur := bl.deps.Learner.Policy()
	for r := range bl.results {
		if bl.b.add(r) {
			if batch := bl.b.fresh(bl.b.take(), bl.lversion); len(batch) == 0 {
				bl.lst.EmptyBatches++
			} else if p, _, err := updateSafely(ctx, bl.deps.Learner, batch); err != nil {
				bl.lst.FailedUpdates++
				bl.lst.DroppedGroups += int64(len(batch))
			} else {
				bl.lst.Updates++
				cur = p
			}
			bl.lversion++
			bl.pol.Store(&policyBox{p: cur, v: bl.lversion})
		}
		if r.Kind == Completed {
			bl.curMu.Lock()
			bl.deps.Curriculum.Observe(r.Task, r.Trajectory.Reward, r.Group)
			bl.curMu.Unlock()
		}
		bl.gateMu.Lock()
		bl.version.Store(bl.lversion)
		bl.gate.Broadcast()
		bl.gateMu.Unlock()
	}
}

// admit is the scheduler, on the calling goroutine: group by group, as the
// staleness gate allows, it asks the source for a task at the curriculum's
// difficulty and starts the group's episodes, at most Concurrency at once,
// until the budget is spent, ctx is cancelled or the source fails. It
// returns when every episode it started has sent its result, with the
// source's failure (nil when ctx was cancelled).
func (bl *baseline) admit(ctx context.Context) error {
	cfg := bl.cfg
	var wg sync.WaitGroup
	defer wg.Wait()
	sem := make(chan struct{}, cfg.Concurrency)
	var planned, groups int64
	var nextEp uint64
	for planned < cfg.Episodes && ctx.Err() == nil {
		bl.gateMu.Lock()
		for groups >= (bl.version.Load()+int64(cfg.MaxStaleness)+1)*int64(cfg.GroupsPerUpdate) {
			bl.gate.Wait()
		}
		bl.gateMu.Unlock()
		bl.curMu.Lock()
		d := bl.deps.Curriculum.Request().Difficulty
		bl.curMu.Unlock()
		tasks, err := bl.deps.Source.Tasks(ctx, 1, d)
		if err == nil && len(tasks) == 0 {
			err = errors.New("the task source gave no task")
		}
		if err != nil {
			if ctx.Err() == nil {
				return fmt.Errorf("baseline: tasks: %w", err)
			}
			return nil
		}
		task := &tasks[0]
		n := min(int64(cfg.GroupSize), cfg.Episodes-planned)
		g := uint64(groups)
		groups++
		planned += n
		for range n {
			sem <- struct{}{}
			spec := &episodeSpec{id: nextEp, group: g, groupSize: int(n), task: task}
			nextEp++
			bl.c.Admitted.Add(1)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				bl.results <- baselineEpisode(ctx, cfg, bl.deps.Provider, spec, bl.requests, &bl.c)
			}()
		}
	}
	return nil
}

// summary is the run's summary once every goroutine has exited.
func (bl *baseline) summary(start time.Time) Summary {
	c := &bl.c
	bl.b.fill(&bl.lst)
	bl.lst.Version = bl.lversion
	sum := Summary{Learner: bl.lst, PolicyServer: bl.pst}
	if bl.pst.Batches > 0 {
		sum.PolicyServer.MeanBatch = float64(bl.pst.Requests) / float64(bl.pst.Batches)
	}
	sum.Episodes = EpisodeCounts{Admitted: c.Admitted.Load(), Completed: c.Completed.Load(), Solved: c.Solved.Load(), RewardHackSuspected: c.Suspected.Load(),
		FailedInfra: c.FailedInfra.Load(), Cancelled: c.Cancelled.Load(), Retries: c.Retries.Load()}
	sum.Episodes.Accounted = sum.Episodes.Admitted == c.Recorded()
	sum.ElapsedSeconds = time.Since(start).Seconds()
	sum.EpisodesPerSecond = float64(c.Recorded()) / sum.ElapsedSeconds
	return sum
}

type policyBox struct {
	p policy.Policy
	v int64
}

type baselineReq struct {
	obs   env.Observation
	reply chan baselineResp
}

type baselineResp struct {
	act env.Action
	err error
}

type chanAgent struct {
	requests chan<- baselineReq
	reply    chan baselineResp
}

func (a *chanAgent) Act(ctx context.Context, obs env.Observation) (env.Action, error) {
	a.requests <- baselineReq{obs: obs, reply: a.reply}
	select {
	case r := <-a.reply:
		return r.act, r.err
	case <-ctx.Done():
		return env.Action{}, ctx.Err()
	}
}

// baselineEpisode plays one episode with bounded retries, like an episode
// actor under its supervisor.
func baselineEpisode(ctx context.Context, cfg Config, prov env.Provider, spec *episodeSpec, requests chan<- baselineReq, c *Counters) *EpisodeResult {
	res := &EpisodeResult{Episode: spec.id, Group: spec.group, GroupSize: spec.groupSize, Task: spec.task}
	agent := &chanAgent{requests: requests, reply: make(chan baselineResp, 1)}
	d := &episodeDeps{provider: prov, runOpts: env.RunOptions{MaxSteps: cfg.MaxSteps, MaxTries: cfg.MaxTries}, closeTimeout: cfg.CloseTimeout, log: zerolog.Nop()}
	for attempt := 0; attempt < cfg.MaxAttempts; attempt++ {
		res.Attempts = attempt + 1
		traj, err := runAttempt(ctx, d, spec, attempt, agent)
		switch {
		case err == nil:
			res.Kind, res.Trajectory = Completed, &traj
			c.Completed.Add(1)
			if traj.Reward > 0 {
				c.Solved.Add(1)
			}
			if traj.RewardHackSuspected != "" {
				c.Suspected.Add(1)
			}
			c.Retries.Add(int64(attempt))
			return res
		case ctx.Err() != nil:
			res.Kind, res.Err = Cancelled, err
			c.Cancelled.Add(1)
			return res
		}
		res.Err = err
	}
	res.Kind = FailedInfra
	c.FailedInfra.Add(1)
	c.Retries.Add(int64(cfg.MaxAttempts - 1))
	return res
}
