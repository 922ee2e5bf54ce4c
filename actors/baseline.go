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
	var (
		c        Counters
		version  atomic.Int64
		curMu    sync.Mutex
		results  = make(chan *EpisodeResult, cfg.Concurrency)
		requests = make(chan baselineReq, cfg.Concurrency)
		pol      atomic.Pointer[policyBox]
		wg       sync.WaitGroup
		gateMu   sync.Mutex
		gate     = sync.NewCond(&gateMu)
		lst      LearnerStats
		pst      PolicyServerStats
		srcErr   error
	)
	pol.Store(&policyBox{p: deps.Learner.Policy()})

	// Policy goroutine: natural batching, as the policy server does.
	polDone := make(chan struct{})
	go func() {
		defer close(polDone)
		batch := make([]baselineReq, 0, cfg.MaxBatch)
		for r := range requests {
			batch = append(batch[:0], r)
		drain:
			for len(batch) < cfg.MaxBatch {
				select {
				case r, ok := <-requests:
					if !ok {
						break drain
					}
					batch = append(batch, r)
				default:
					break drain
				}
			}
			box := pol.Load()
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
			pst.Batches++
			pst.Requests += int64(len(batch))
			pst.MaxBatch = max(pst.MaxBatch, len(batch))
		}
	}()

	// Learner goroutine: the learner actor's batcher, with each update run
	// in turn on this goroutine.
	b := newBatcher(cfg.GroupsPerUpdate, cfg.MaxStaleness)
	var lversion int64
	cur := deps.Learner.Policy()
	learnDone := make(chan struct{})
	go func() {
		defer close(learnDone)
		for r := range results {
			if b.add(r) {
				if batch := b.fresh(b.take(), lversion); len(batch) == 0 {
					lst.EmptyBatches++
				} else if p, _, err := updateSafely(ctx, deps.Learner, batch); err != nil {
					lst.FailedUpdates++
					lst.DroppedGroups += int64(len(batch))
				} else {
					lst.Updates++
					cur = p
				}
				lversion++
				pol.Store(&policyBox{p: cur, v: lversion})
			}
			if r.Kind == Completed {
				curMu.Lock()
				deps.Curriculum.Observe(r.Task, r.Trajectory.Reward, r.Group)
				curMu.Unlock()
			}
			gateMu.Lock()
			version.Store(lversion)
			gate.Broadcast()
			gateMu.Unlock()
		}
	}()

	// Scheduler: the calling goroutine.
	sem := make(chan struct{}, cfg.Concurrency)
	var planned, groups int64
	var nextEp uint64
	for planned < cfg.Episodes && ctx.Err() == nil {
		gateMu.Lock()
		for groups >= (version.Load()+int64(cfg.MaxStaleness)+1)*int64(cfg.GroupsPerUpdate) {
			gate.Wait()
		}
		gateMu.Unlock()
		curMu.Lock()
		d := deps.Curriculum.Request().Difficulty
		curMu.Unlock()
		tasks, err := deps.Source.Tasks(ctx, 1, d)
		if err == nil && len(tasks) == 0 {
			err = errors.New("the task source gave no task")
		}
		if err != nil {
			if ctx.Err() == nil {
				srcErr = fmt.Errorf("baseline: tasks: %w", err)
			}
			break
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
			c.Admitted.Add(1)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				results <- baselineEpisode(ctx, cfg, deps.Provider, spec, requests, &c)
			}()
		}
	}
	wg.Wait()
	close(requests)
	<-polDone
	close(results)
	<-learnDone

	b.fill(&lst)
	lst.Version = lversion
	sum := Summary{Learner: lst, PolicyServer: pst}
	if pst.Batches > 0 {
		sum.PolicyServer.MeanBatch = float64(pst.Requests) / float64(pst.Batches)
	}
	sum.Episodes = EpisodeCounts{Admitted: c.Admitted.Load(), Completed: c.Completed.Load(), Solved: c.Solved.Load(), RewardHackSuspected: c.Suspected.Load(),
		FailedInfra: c.FailedInfra.Load(), Cancelled: c.Cancelled.Load(), Retries: c.Retries.Load()}
	sum.Episodes.Accounted = sum.Episodes.Admitted == c.Recorded()
	sum.ElapsedSeconds = time.Since(start).Seconds()
	sum.EpisodesPerSecond = float64(c.Recorded()) / sum.ElapsedSeconds
	return sum, srcErr
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
