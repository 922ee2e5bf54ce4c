package cli

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/frognano/frog/actors"
	"github.com/frognano/frog/env"
	"github.com/frognano/frog/env/replay"
	"github.com/frognano/frog/policy"
	"github.com/frognano/frog/policy/neural"
	"github.com/frognano/frog/run"
)

// trainer is what a training run does beside the actors: metrics lines,
// trajectory shards, held-out evaluations.
type trainer struct {
	// ctx is the run's: a periodic evaluation ends with it (Ctrl-C does
	// not wait for one).
	ctx     context.Context
	o       *trainOptions
	dir     *run.Dir
	harness env.Harness
	prov    env.Provider
	heldout []actors.EvalTask
	learner *neural.Learner
	shards  *run.Shards
	log     zerolog.Logger
	// start is when this part of the run started, startEpisodes the
	// episodes the run had recorded by then (a resumed run's checkpoint's).
	start         time.Time
	startEpisodes int64

	counters *actors.Counters
	tries    atomic.Int64
	// recent holds the last 200 rewards, for the live pass rate.
	mu     sync.Mutex
	recent []float64
	evs    []run.Event
	evalWG sync.WaitGroup
	evalOn atomic.Bool
}

func (t *trainer) onEpisode(r *actors.EpisodeResult) {
	rec := run.EpisodeRecord(r)
	if tr := r.Trajectory; tr != nil {
		t.tries.Add(int64(tr.Tries))
		t.mu.Lock()
		t.recent = append(t.recent, tr.Reward)
		if len(t.recent) > 200 {
			t.recent = t.recent[len(t.recent)-200:]
		}
		t.mu.Unlock()
	}
	t.shards.Write(rec)
}

func (t *trainer) passRate() float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.recent) == 0 {
		return 0
	}
	var s float64
	for _, r := range t.recent {
		s += r
	}
	return s / float64(len(t.recent))
}

func (t *trainer) onUpdate(u actors.UpdateRecord) {
	secs := time.Since(t.start).Seconds()
	e := run.UpdateEvent(u)
	e.TrainPassRate = t.passRate()
	if secs > 0 && t.counters != nil {
		e.EpisodesPerSecond = float64(t.counters.Recorded()-t.startEpisodes) / secs
		e.TriesPerSecond = float64(t.tries.Load()) / secs
	}
	if err := t.dir.WriteEvent(e); err != nil {
		t.log.Error().Err(err).Msg("write metrics.jsonl")
	}
	if every := t.o.EvalEvery; every > 0 && u.Update%int64(every) == 0 && len(t.heldout) > 0 && t.evalOn.CompareAndSwap(false, true) {
		// Evaluate a snapshot of this version while training goes on.
		snap := *t.learner.Current()
		t.evalWG.Add(1)
		go func() {
			defer t.evalWG.Done()
			defer t.evalOn.Store(false)
			t.evaluate(t.ctx, u.Update, &snap)
		}()
	}
}

func (t *trainer) waitEval() { t.evalWG.Wait() }

// evaluate plays the held-out tasks with p, greedy, and records the result.
func (t *trainer) evaluate(ctx context.Context, update int64, p *neural.Policy) {
	if len(t.heldout) == 0 {
		return
	}
	g := *p
	g.Greedy = true
	t.record(ctx, "eval", "neural", update, &g)
}

// baselines evaluates the hand-written baselines on the held-out tasks.
func (t *trainer) baselines(ctx context.Context) {
	if len(t.heldout) == 0 {
		return
	}
	for _, name := range t.o.Baselines {
		p, err := evalPolicy(name, t.o.Seed) // a baseline, or an earlier run's checkpoint
		if err != nil {
			t.log.Error().Err(err).Str("policy", name).Msg("baseline left out")
			continue
		}
		if rp, ok := t.harness.(*replay.Env); ok {
			if err := checkReplayable(rp.Table(), name, p); err != nil {
				t.log.Warn().Err(err).Str("policy", name).Msg("baseline left out of the replay")
				continue
			}
		}
		t.record(ctx, "baseline", name, 0, p)
	}
}

func (t *trainer) record(ctx context.Context, kind, name string, update int64, p policy.Policy) {
	cfg := actors.DefaultConfig()
	cfg.Run, cfg.Concurrency, cfg.MaxTries, cfg.MaxSteps = t.o.Name+"-eval", t.o.Run.Concurrency, t.o.EvalTries, env.StepsForTries(t.o.EvalTries)
	if t.o.Replay.Env == envReplay {
		name, cfg.MaxAttempts = replayName(name), 1
	}
	t.log.Info().Str("kind", kind).Str("policy", name).Int64("update", update).Int("tasks", len(t.heldout)).Msg("held-out evaluation started")
	t0 := time.Now()
	rep, err := actors.EvaluateWhole(ctx, actors.EvalConfig{Run: cfg, Tasks: t.heldout}, p,
		actors.Deps{Provider: t.prov, Harness: t.harness, Log: zerolog.Nop()})
	if err != nil {
		if ctx.Err() != nil {
			t.log.Info().Str("policy", name).Int64("update", update).Msg("held-out evaluation cut short: the run is ending; not recorded")
			return
		}
		t.log.Error().Err(err).Str("policy", name).Msg("held-out evaluation failed")
		return
	}
	e := run.Event{Kind: kind, Policy: name, AtUpdate: update, Solved: &rep.Solved, AtTries: rep.AtTries, MRR: &rep.MRR,
		ByFamily: rep.ByFamily, FirstSolves: rep.FirstSolves, Elapsed: time.Since(t0).Seconds()}
	if err := t.dir.WriteEvent(e); err != nil {
		t.log.Error().Err(err).Msg("write metrics.jsonl")
	}
	t.mu.Lock()
	t.evs = append(t.evs, e)
	t.mu.Unlock()
	t.log.Info().Str("kind", kind).Str("policy", name).Int64("update", update).
		Float64("solved", rep.Solved.Rate).Float64("lo", rep.Solved.Lo).Float64("hi", rep.Solved.Hi).Msg("held-out evaluation")
}

// evalDue says whether the policy of this update is one the run evaluates:
// the first, and every --eval-every.
func (t *trainer) evalDue(update int64) bool {
	every := int64(t.o.EvalEvery)
	return update == 0 || every > 0 && update%every == 0
}

// evaluated says whether the run has an evaluation of this kind.
func (t *trainer) evaluated(kind string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, e := range t.evs {
		if e.Kind == kind {
			return true
		}
	}
	return false
}

// evaluatedAt says whether the policy of this update has been evaluated
// already (the last update fell on --eval-every).
func (t *trainer) evaluatedAt(update int64) bool {
	last, ok := t.lastEval()
	return ok && last.AtUpdate == update
}

// lastEval is the newest evaluation of the trained policy.
func (t *trainer) lastEval() (run.Event, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := len(t.evs) - 1; i >= 0; i-- {
		if t.evs[i].Kind == "eval" {
			return t.evs[i], true
		}
	}
	return run.Event{}, false
}

func (t *trainer) evals() []run.Event {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]run.Event(nil), t.evs...)
}

func (t *trainer) progress() (string, int64) {
	c := t.counters
	desc := fmt.Sprintf("train pass %.0f%%", 100*t.passRate())
	if last, ok := t.lastEval(); ok {
		desc += fmt.Sprintf(", held-out %.0f%% @%d", 100*last.Solved.Rate, last.AtUpdate)
	}
	if c == nil {
		return desc, 0
	}
	return desc + fmt.Sprintf(", %d running", c.Running.Load()), c.Recorded()
}
