package experiment

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/frognano/frog/actors"
	"github.com/frognano/frog/cuda"
	"github.com/frognano/frog/env"
	"github.com/frognano/frog/env/replay"
	"github.com/frognano/frog/policy"
	"github.com/frognano/frog/policy/neural"
	"github.com/frognano/frog/run"
	"github.com/frognano/frog/run/taskenv"
)

// Replay runs the strategies of Mode "replay": frog's neural policy
// trained by GRPO, as in Mode "real", against a replay table of real
// verdicts (frog tabulate's) instead of sandboxes, and evaluated on a
// held-out table. Its budget counts episodes: a replayed verdict runs no
// test. It is what every run shares: the replay of both tables and the
// tensor backend.
type Replay struct {
	o       Options
	deps    Deps
	rp      *replay.Env
	train   *replay.Table
	heldout []actors.EvalTask
	backend cuda.Backend
	// start holds the held-out point of each seed's initial policy.
	start map[uint64]HeldoutPoint
}

var _ Runner = (*Replay)(nil)

// OpenReplay reads the training and held-out tables of o.Tables (the
// first o.Heldout tasks of the held-out one), which must be of one
// protocol and share no task, and opens the tensor backend (deps.Tensor).
// Close releases it. That the learner's protocol is the tables' is the
// caller's to check.
func OpenReplay(o Options, deps Deps) (*Replay, error) {
	t := o.Tables
	train, err := readTable("--table", t.Table)
	if err != nil {
		return nil, err
	}
	held, err := readTable("--heldout-table", t.HeldoutTable)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(train.Header.Settings.Protocol, held.Header.Settings.Protocol) {
		return nil, run.Usagef("--heldout-table %s: made for another protocol than --table's", t.HeldoutTable)
	}
	heldout := taskenv.TableTasks(held, o.Heldout)
	all := &replay.Table{Header: train.Header, Records: append([]replay.Record(nil), train.Records...)}
	in := map[string]bool{}
	for _, r := range train.Records {
		in[r.Task.ID] = true
	}
	for _, r := range held.Records[:len(heldout)] {
		if in[r.Task.ID] {
			return nil, run.Usagef("--heldout-table: task %s is in --table too: held-out tasks are never trained on", r.Task.ID)
		}
		all.Records = append(all.Records, r)
	}
	rp, err := replay.New(all)
	if err != nil {
		return nil, run.Usagef("--table: %v", err)
	}
	backend, why, err := deps.Tensor(t.Device)
	if err != nil {
		return nil, &run.UsageError{Err: err}
	}
	deps.Log.Info().Str("backend", backend.Name()).Str("why", why).Str("table", t.Table).Int("tasks", len(train.Records)).
		Str("heldout_table", t.HeldoutTable).Int("heldout", len(heldout)).Msg("replaying: every verdict looked up in the tables, none run")
	return &Replay{o: o, deps: deps, rp: rp, train: train, heldout: heldout, backend: backend, start: map[uint64]HeldoutPoint{}}, nil
}

// readTable reads the replay table at path, named by flag in errors.
func readTable(flag, path string) (*replay.Table, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, run.Usagef("%s: %v", flag, err)
	}
	defer f.Close()
	t, err := replay.Decode(f, path)
	if err != nil {
		return nil, run.Usagef("%s: %v", flag, err)
	}
	if len(t.Records) == 0 {
		return nil, run.Usagef("%s %s: no task to replay", flag, path)
	}
	return t, nil
}

// Close releases the tensor backend.
func (x *Replay) Close() { x.backend.Close() }

// Run runs one strategy with one seed: the neural policy trained on the
// training table, the curriculum choosing its tasks, for o.Budget
// episodes; then the policy of each point of the curve (every
// Budget/Points episodes) is evaluated, greedy, on the held-out tasks. A
// call the tables cannot answer (an episode not replayable) is an error:
// its episode was not scored, and the run would not be a replay's.
func (x *Replay) Run(ctx context.Context, a Arm, seed uint64) (Result, error) {
	o, start := x.o, time.Now()
	strategy := a.Name
	name := fmt.Sprintf("exp-replay-%s-%d", strategy, seed)
	before := x.rp.Report("").Unanswered()
	src, err := taskenv.TableSource(x.train, seed)
	if err != nil {
		return Result{}, run.Usagef("--table %s: %v", o.Tables.Table, err)
	}
	cur, err := x.deps.Curriculum(a, seed, 4)
	if err != nil {
		return Result{}, err
	}
	lcfg := o.Tables.Learner
	lcfg.Seed = seed
	learner, err := neural.NewLearner(x.backend, lcfg)
	if err != nil {
		return Result{}, err
	}
	defer learner.Close()

	pts := newPoints(o.Budget, o.Points, learner.Current)
	var episodes atomic.Int64
	tasks := newDistinct()
	cfg := actors.DefaultConfig()
	cfg.Run, cfg.Episodes, cfg.Concurrency, cfg.GroupSize, cfg.GroupsPerUpdate, cfg.TaskRefill = name, o.Budget, o.Concurrency, o.GroupSize, o.GroupsPer, o.TaskRefill
	cfg.MaxTries, cfg.MaxSteps, cfg.RefillZeroVariance, cfg.TryCost = o.Tables.Tries, env.StepsForTries(o.Tables.Tries), o.refill(a), o.Tables.TryCost
	cfg.MaxAttempts = 1 // a call the table cannot answer fails alike again
	deps := actors.Deps{
		Provider: x.rp, Harness: x.rp, Learner: learner, Source: src, Curriculum: cur,
		Log:       x.deps.Log.Level(zerolog.WarnLevel).With().Str("env", "replay").Logger(),
		OnEpisode: func(r *actors.EpisodeResult) { episodes.Add(1); tasks.add(r) },
		OnUpdate:  func(actors.UpdateRecord) { pts.reach(episodes.Load(), nil) },
	}
	sum, err := runWhole(ctx, cfg, deps)
	if err != nil {
		return Result{}, err
	}
	xs, snaps := pts.rest()
	r := newResult(o, x.deps.Version, strategy, seed, episodes.Load(), sum, len(x.heldout))
	r.Distinct = tasks.n()
	r.TrainSeconds = time.Since(start).Seconds()
	err = measureCurve(o, x.start, seed, &r, snaps, xs, func(p *neural.Policy) (HeldoutPoint, error) { return x.evaluate(ctx, name, p) })
	if err != nil {
		return Result{}, err
	}
	if n := x.rp.Report("").Unanswered() - before; n > 0 {
		return Result{}, fmt.Errorf("%d calls asked what the tables do not hold (not replayable): the run is no replay's", n)
	}
	r.Final = r.CurveY[len(r.CurveY)-1]
	r.AUC = policy.Mean(r.CurveY)
	r.Seconds = time.Since(start).Seconds()
	return r, nil
}

// evaluate plays the held-out tasks with p, greedy, against the held-out
// table.
func (x *Replay) evaluate(ctx context.Context, name string, p *neural.Policy) (HeldoutPoint, error) {
	g := *p
	g.Greedy = true
	cfg := actors.DefaultConfig()
	cfg.Run, cfg.Concurrency, cfg.MaxTries, cfg.MaxSteps, cfg.MaxAttempts = name+"-eval", x.o.Concurrency, x.o.Tables.EvalTries, env.StepsForTries(x.o.Tables.EvalTries), 1
	rep, err := actors.EvaluateWhole(ctx, actors.EvalConfig{Run: cfg, Tasks: x.heldout}, &g, actors.Deps{Provider: x.rp, Harness: x.rp, Log: zerolog.Nop()})
	if err != nil {
		return HeldoutPoint{}, fmt.Errorf("held-out evaluation: %w", err)
	}
	return heldoutPoint(rep), nil
}
