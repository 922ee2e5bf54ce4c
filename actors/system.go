package actors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/frognano/frog/curriculum"
	"github.com/frognano/frog/env"
	"github.com/frognano/frog/policy"
	"github.com/frognano/frog/synth"
)

// Config shapes one run of the actor system.
type Config struct {
	// Run names the run; sandboxes are labelled with it.
	Run string `json:"run,omitempty"`
	// Episodes is the number of episodes to admit; 0 means until Duration
	// passes or the context is cancelled.
	Episodes int64 `json:"episodes"`
	// Duration stops admission after this long (running episodes finish);
	// 0 means no limit.
	Duration time.Duration `json:"duration"`
	// Concurrency is the most episodes running at once.
	Concurrency int `json:"concurrency"`
	// GroupSize is G, the rollouts of one task compared by GRPO.
	GroupSize int `json:"group_size"`
	// GroupsPerUpdate is the learner's batch, in groups; 0 picks the smallest
	// batch with which the staleness bound does not throttle Concurrency.
	GroupsPerUpdate int `json:"groups_per_update"`
	// MaxStaleness is the most policy versions an action may lag behind the
	// learner and still be learned from.
	MaxStaleness int `json:"max_staleness"`
	// MaxAttempts is the most sandboxes one episode may use (1 + retries
	// after infrastructure faults).
	MaxAttempts int `json:"max_attempts"`
	// MaxSteps bounds the actions of one episode, MaxTries the candidates
	// it may try (0: no bound but the steps).
	MaxSteps int `json:"max_steps"`
	MaxTries int `json:"max_tries,omitempty"`
	// MaxBatch and MaxWait shape the policy server's batches; MaxWait 0
	// means natural batching. InferenceWorkers is the most batches run at once.
	MaxBatch         int           `json:"max_batch"`
	MaxWait          time.Duration `json:"max_wait"`
	InferenceWorkers int           `json:"inference_workers"`
	// SynthWorkers is the most synthesizer requests run at once.
	SynthWorkers int `json:"synth_workers"`
	// TaskRefill is the least number of tasks asked of the synthesizer at once.
	TaskRefill int `json:"task_refill"`
	// CloseTimeout bounds the teardown of one sandbox.
	CloseTimeout time.Duration `json:"close_timeout"`
	// MaxUpdateFailures ends the run with ErrLearner after that many
	// consecutive failed learner updates; 0 never does.
	MaxUpdateFailures int `json:"max_update_failures"`
	// CheckpointEvery saves a checkpoint (Deps.Checkpoints) after every
	// that many updates; 0 saves only the last, at the end of the run.
	CheckpointEvery int `json:"checkpoint_every"`
	// RefillZeroVariance drops groups whose rewards are all equal when they
	// close (they teach GRPO nothing), so that every batch holds
	// GroupsPerUpdate groups with signal, and plans new groups in their
	// place; their share is still counted (learner.zero_signal_share).
	RefillZeroVariance bool `json:"refill_zero_variance"`
	// TryCost shapes the returns GRPO compares within a group: a rewarded
	// rollout returns its reward less TryCost for each candidate it tried
	// beyond the first (policy.Return), so that a group whose rollouts all
	// fix their task still says which tried the fix first. 0: the rewards.
	TryCost float64 `json:"try_cost"`
	// CheckpointTries is how many times in a row a checkpoint may fail to
	// be stored (Deps.Checkpoints) before the run ends with ErrCheckpoint:
	// a failed one is tried again at the next update, and at the end of
	// the run at once; 0: 3.
	CheckpointTries int `json:"checkpoint_tries,omitempty"`
	// Start is where a resumed run takes up the counting of the run it
	// continues: its checkpoint's Progress. Episodes and Duration are the
	// whole run's budget: a resumed run plays what is left of them (the
	// episodes an interruption cancelled are played again).
	Start Progress `json:"-"`
}

// DefaultConfig is the configuration `frog sim` starts from.
func DefaultConfig() Config {
	return Config{
		Run:               "frog",
		Episodes:          20000,
		Concurrency:       1000,
		GroupSize:         8,
		MaxStaleness:      4,
		MaxAttempts:       3,
		MaxSteps:          16,
		MaxBatch:          1024,
		InferenceWorkers:  2,
		SynthWorkers:      1,
		TaskRefill:        64,
		CloseTimeout:      30 * time.Second,
		MaxUpdateFailures: 10,
	}
}

// Bounds of a Config's sizes. Beyond them a run's counts would overflow, or
// its queues and batches grow past any machine's memory: a size that large
// is a mistake, refused before anything starts rather than a run that
// never ends.
const (
	MaxConcurrency = 1 << 20 // episodes at once
	MaxGroupSize   = 1 << 16 // rollouts of one task
	MaxSteps       = 1 << 20 // actions of one episode (and tries)
	MaxBatch       = 1 << 20 // groups of one update, requests of one inference batch
	MaxWorkers     = 1 << 16 // synthesizer requests at once
	MaxRetries     = 1000    // sandboxes an episode may retry in
	// MaxStaleness is the largest staleness bound: math.MaxInt32 versions,
	// no bound in practice (an evaluation's frozen policy uses it).
	MaxStaleness = math.MaxInt32
)

// Validate reports the first field out of its range, as a *ConfigError.
func (c Config) Validate() error {
	bad := func(field string, value any, want string, args ...any) error {
		return &ConfigError{Field: field, Value: value, Want: fmt.Sprintf(want, args...)}
	}
	switch {
	case c.Episodes < 0:
		return bad("Episodes", c.Episodes, ">= 0")
	case c.Episodes == 0 && c.Duration <= 0:
		return bad("Episodes", c.Episodes, "> 0 when Duration is 0, or the run would never end")
	case c.Duration < 0:
		return bad("Duration", c.Duration, ">= 0")
	case c.Concurrency < 1 || c.Concurrency > MaxConcurrency:
		return bad("Concurrency", c.Concurrency, "1 to %d", MaxConcurrency)
	case c.GroupSize < 1 || c.GroupSize > MaxGroupSize:
		return bad("GroupSize", c.GroupSize, "1 to %d", MaxGroupSize)
	case c.GroupsPerUpdate < 0 || c.GroupsPerUpdate > MaxBatch:
		return bad("GroupsPerUpdate", c.GroupsPerUpdate, "0 to %d (0 picks one)", MaxBatch)
	case c.MaxStaleness < 0 || c.MaxStaleness > MaxStaleness:
		return bad("MaxStaleness", c.MaxStaleness, "0 to %d", MaxStaleness)
	case c.MaxAttempts < 1 || c.MaxAttempts > MaxRetries+1:
		return bad("MaxAttempts", c.MaxAttempts, "1 to %d", MaxRetries+1)
	case c.MaxSteps < 1 || c.MaxSteps > MaxSteps:
		return bad("MaxSteps", c.MaxSteps, "1 to %d", MaxSteps)
	case c.MaxTries < 0 || c.MaxTries > MaxSteps:
		return bad("MaxTries", c.MaxTries, "0 to %d", MaxSteps)
	case c.MaxBatch < 1 || c.MaxBatch > MaxBatch:
		return bad("MaxBatch", c.MaxBatch, "1 to %d", MaxBatch)
	case c.MaxWait < 0:
		return bad("MaxWait", c.MaxWait, ">= 0")
	case c.InferenceWorkers < 1 || c.InferenceWorkers > MaxConcurrency:
		return bad("InferenceWorkers", c.InferenceWorkers, "1 to %d", MaxConcurrency)
	case c.SynthWorkers < 0 || c.SynthWorkers > MaxWorkers:
		return bad("SynthWorkers", c.SynthWorkers, "1 to %d", MaxWorkers)
	case c.TaskRefill < 0 || c.TaskRefill > MaxBatch:
		return bad("TaskRefill", c.TaskRefill, "1 to %d", MaxBatch)
	case c.MaxUpdateFailures < 0:
		return bad("MaxUpdateFailures", c.MaxUpdateFailures, ">= 0 (0: never end the run)")
	case c.CheckpointEvery < 0:
		return bad("CheckpointEvery", c.CheckpointEvery, ">= 0 (0: only at the end)")
	case !(c.TryCost >= 0 && c.TryCost < 1):
		return bad("TryCost", c.TryCost, "a share in [0, 1)")
	}
	return nil
}

// ConfigError is a Config field out of its range. Commands name their
// flag in its place (Field is the Go name: a Config is not only made from
// flags).
type ConfigError struct {
	Field string
	Value any
	Want  string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("actors.Config.%s %v: want %s", e.Field, e.Value, e.Want)
}

// WithDefaults fills the zero fields that have a derived default.
func (c Config) WithDefaults() Config {
	d := DefaultConfig()
	if c.GroupsPerUpdate == 0 {
		// An episode lives while about Concurrency others complete. Size the
		// batch so that this spans MaxStaleness/2 updates: the staleness gate
		// then never throttles Concurrency, and only stragglers that take
		// twice the typical time grow too stale to learn from.
		per := c.GroupSize * max(c.MaxStaleness, 1)
		c.GroupsPerUpdate = max(1, (2*c.Concurrency+per-1)/per)
	}
	if c.SynthWorkers < 1 {
		c.SynthWorkers = d.SynthWorkers
	}
	if c.TaskRefill < 1 {
		c.TaskRefill = d.TaskRefill
	}
	if c.CloseTimeout <= 0 {
		c.CloseTimeout = d.CloseTimeout
	}
	if c.Run == "" {
		c.Run = d.Run
	}
	if c.CheckpointTries < 1 {
		c.CheckpointTries = 3
	}
	return c
}

// Deps are the parts a run is made of.
type Deps struct {
	Provider   env.Provider
	Learner    policy.Learner
	Source     synth.Source
	Curriculum curriculum.Curriculum
	Log        zerolog.Logger
	// Harness, when set, runs the episodes' test-aware tools and verdicts
	// (real tasks); without one, run_tests is the task's test command.
	Harness env.Harness
	// OnUpdate, when set, is called from the learner actor after every
	// update (to write metrics.jsonl); it must not block for long.
	OnUpdate func(UpdateRecord)
	// OnCurriculum, when set, is called from the curriculum actor with its
	// state each time the policy version it hears of advances (to write
	// metrics.jsonl); it must not block for long.
	OnCurriculum func(CurriculumRecord)
	// OnEpisode, when set, is called from the learner actor with every
	// episode's result as it is filed (to export trajectories, to evaluate);
	// it must not block for long, and must not keep the result's pointers
	// past the call unless it copies them.
	OnEpisode func(*EpisodeResult)
	// Counters, when set, receives the scheduler's tallies as they change.
	Counters *Counters
	// Drain, when set, ends admission when it is closed: running episodes
	// finish and are filed, as when Config.Duration is reached (a caller's
	// own budget, such as test executions).
	Drain <-chan struct{}
	// Checkpoints, when set and the learner can checkpoint
	// (policy.Checkpointer), receives the run's checkpoints: every
	// Config.CheckpointEvery updates and at the end (Run returns only once
	// that last one is stored). The learner actor takes its part between
	// updates and sends it to the curriculum actor, which adds the
	// curriculum's (Checkpoint.Curriculum, Checkpoint.Pool) and hands it
	// to its checkpoint writer: Save is called from that one goroutine,
	// one checkpoint at a time, in order, and may take a file write's
	// time (fsyncs included). A refused checkpoint is logged by the
	// learner and tried again (Config.CheckpointTries); when none of those
	// tries is stored the run ends with ErrCheckpoint.
	Checkpoints CheckpointSink
	// Remote, when set, opens the run to rollout workers on other
	// processes or machines (`frog worker --join`).
	Remote *Remote
	// TaskPool, when set, are fresh tasks the curriculum actor serves
	// before it asks the synthesizer for more: a resumed run's, from its
	// checkpoint (Checkpoint.Pool), with Curriculum restored from the same
	// checkpoint.
	TaskPool []env.Task
}

// CheckpointSink stores checkpoints. Save is called from the curriculum
// actor's checkpoint writer goroutine, one checkpoint at a time, in order
// (see Deps.Checkpoints).
type CheckpointSink interface {
	Save(Checkpoint) error
}

// Checkpoint is a run's state at one version, as plain data: the learner's
// own bytes (policy.Checkpointer), the run's progress, and the curriculum's
// state when the curriculum actor stored the checkpoint, a moment after the
// learner took its part (the outcomes on their way from the learner to the
// curriculum then are in the learner's part only).
type Checkpoint struct {
	Progress
	Learner []byte `json:"learner"`
	// Curriculum is the curriculum's snapshot (curriculum.Snapshotter); empty
	// when the curriculum has none, and in the checkpoints of runs made
	// before checkpoints held it.
	Curriculum json.RawMessage `json:"curriculum,omitempty"`
	// Pool is the fresh tasks the curriculum actor had from the
	// synthesizer and had not served yet (Deps.TaskPool of a resumed run).
	Pool []env.Task `json:"pool,omitempty"`
}

// Progress is how far a run had come when the learner took a checkpoint,
// counted over the whole run (every resumption of it included): the
// episode results the learner had filed, and what came of them. A run
// resumed from the checkpoint takes up its counting there (Config.Start):
// the episodes admitted but not filed by then are played again, so that
// the run's records hold each episode once.
type Progress struct {
	Version int64 `json:"version"`
	Updates int64 `json:"updates"`
	// Results is the episode results filed (the trajectories a run
	// directory kept by then, in the order filed).
	Results int64 `json:"results"`
	// Episodes is the accounting of those results: each one an admitted
	// episode with its outcome. Absent from the checkpoints of older frogs.
	Episodes EpisodeCounts `json:"episodes"`
	// NextEpisode and NextGroup are above the ids of every episode and
	// group filed: a resumed run numbers its own from there.
	NextEpisode uint64 `json:"next_episode"`
	NextGroup   uint64 `json:"next_group"`
	// Seconds is the run's time until then.
	Seconds float64 `json:"elapsed_seconds"`
	// Stats is the learner's tallies then (the checkpoint counted among
	// its Checkpoints); Version, Updates and Results are the fields above.
	Stats LearnerStats `json:"learner_stats"`
}

// Summary is what a run did. Its counters always satisfy
// Admitted = Completed + FailedInfra + Cancelled. A resumed run's episodes,
// elapsed time, learner and curriculum are the whole run's (they go on
// from Config.Start); its Scheduler, PolicyServer, Synth and Sandbox are
// the part it ran.
type Summary struct {
	Episodes          EpisodeCounts              `json:"episodes"`
	ElapsedSeconds    float64                    `json:"elapsed_seconds"`
	EpisodesPerSecond float64                    `json:"episodes_per_second"`
	Scheduler         SchedulerStats             `json:"scheduler"`
	Learner           LearnerStats               `json:"learner"`
	PolicyServer      PolicyServerStats          `json:"policy_server"`
	Curriculum        curriculum.CurriculumStats `json:"curriculum"`
	Synth             SynthStats                 `json:"synth"`
	Sandbox           env.SandboxStats           `json:"sandbox"`
}

// EpisodeCounts is the accounting of a run.
type EpisodeCounts struct {
	Admitted  int64 `json:"admitted"`
	Completed int64 `json:"completed"`
	Solved    int64 `json:"solved"`
	// RewardHackSuspected counts the completed episodes whose verdict
	// judged that the agent's code tried to forge it: rewarded 0, and worth
	// a look (docs/episodes.md, "What the verdict defends").
	RewardHackSuspected int64 `json:"reward_hack_suspected"`
	FailedInfra         int64 `json:"failed_infra"`
	Cancelled           int64 `json:"cancelled"`
	Retries             int64 `json:"retries"`
	// Accounted is Admitted == Completed + FailedInfra + Cancelled.
	Accounted bool `json:"accounted"`
}

// add counts one episode's outcome, as the scheduler counts it.
func (e *EpisodeCounts) add(kind OutcomeKind, reward float64, attempts int, suspected bool) {
	e.Admitted++
	switch kind {
	case Completed:
		e.Completed++
		if reward > 0 {
			e.Solved++
		}
		if suspected {
			e.RewardHackSuspected++
		}
	case FailedInfra:
		e.FailedInfra++
	case Cancelled:
		e.Cancelled++
	}
	if attempts > 1 {
		e.Retries += int64(attempts - 1)
	}
	e.Accounted = e.Admitted == e.Completed+e.FailedInfra+e.Cancelled
}

// ErrAccounting is returned (with the summary) when a run's counters do not
// add up; it would mean an episode was lost.
var ErrAccounting = errors.New("episode accounting does not add up")

// ErrLearner is returned (with the summary) when the learner failed too many
// updates in a row (Config.MaxUpdateFailures).
var ErrLearner = errors.New("learner failed")

// ErrCheckpoint is returned (with the summary) when checkpoints could not be
// stored Config.CheckpointTries times in a row: the run ended rather than
// train on with nothing to resume from.
var ErrCheckpoint = errors.New("checkpoint not saved")

// ErrNoTasks is returned (with the summary) when admission ended before the
// budget was spent because no task was left to play: the task source had
// none left, or failed every time it was asked (SchedulerStats.TasksRanOut
// says which).
var ErrNoTasks = errors.New("no task left to play")

// Run runs the actor system until the episode budget is spent, the duration
// has passed or ctx is cancelled, and returns what happened. Cancelling ctx
// is a graceful shutdown: admission stops, every running episode is
// cancelled, closes its sandbox and is recorded, and Run returns a full
// summary with a nil error. Run returns only when every actor has stopped and
// every goroutine it started has exited.
func Run(ctx context.Context, cfg Config, deps Deps) (Summary, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return Summary{}, err
	}
	if deps.Provider == nil || deps.Learner == nil || deps.Source == nil || deps.Curriculum == nil {
		return Summary{}, errors.New("actors: run needs a provider, a learner, a source and a curriculum")
	}
	log := deps.Log.With().Str("component", "actors").Str("run", cfg.Run).Logger()
	counters := deps.Counters
	if counters == nil {
		counters = new(Counters)
	}
	counters.resume(cfg.Start.Episodes)
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slogHandler{log: log.With().Str("component", "protoactor").Logger()})
	}))
	defer system.Shutdown()
	rem, rstate, err := openRemote(system, cfg, deps)
	if err != nil {
		return Summary{}, err
	}
	if rstate != nil {
		var stop func()
		rstate.decode, stop = decoders(system.Root)
		defer stop()
	}
	if rem != nil {
		// Not graceful: protoactor-go's graceful shutdown writes flags its
		// readers race on, and waits for peers' streams; the run's own
		// farewell has told the workers.
		defer rem.Shutdown(false)
	}

	root := system.Root
	var runners sync.WaitGroup
	pids := spawnServices(ctx, cfg, deps, root, &runners, log)
	done := make(chan struct{})
	start := time.Now()
	pids.scheduler = spawnScheduler(cfg, deps, root, &runners, log, pids, counters, done, rstate)
	log.Info().Int64("episodes", cfg.Episodes).Int("concurrency", cfg.Concurrency).
		Int("group_size", cfg.GroupSize).Int("groups_per_update", cfg.GroupsPerUpdate).Msg("run started")

	awaitEnd(ctx, cfg, deps.Drain, root, pids.scheduler, done, log)
	if rstate != nil {
		sayFarewell(root, pids.scheduler, rstate.cfg.More)
	}
	elapsed := time.Since(start) + time.Duration(cfg.Start.Seconds*float64(time.Second))

	sum, errs := stopActors(root, pids, log)
	runners.Wait()
	errs = append(errs, summarize(&sum, counters, elapsed, deps.Provider)...)
	e := &sum.Episodes
	log.Info().Int64("admitted", e.Admitted).Int64("completed", e.Completed).Int64("failed_infra", e.FailedInfra).
		Int64("cancelled", e.Cancelled).Float64("seconds", sum.ElapsedSeconds).Msg("run finished")
	return sum, errors.Join(errs...)
}

// runActors are a run's long-lived actors.
type runActors struct {
	synth, curriculum, server, learner, scheduler *actor.PID
}

// spawnServices spawns the actors the scheduler relies on: the synthesizer,
// the curriculum (given a resumed run's task pool), the policy server and
// the learner (resumed from cfg.Start, its checkpoints going to the
// curriculum actor when deps has a sink). The goroutines they start are
// counted in runners; ctx is the run's, which the learner's updates heed.
func spawnServices(ctx context.Context, cfg Config, deps Deps, root *actor.RootContext, runners *sync.WaitGroup, log zerolog.Logger) runActors {
	synth, _ := root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor {
		return &synthesizer{src: deps.Source, maxInflight: cfg.SynthWorkers, root: root, runners: runners}
	}), "synth")
	var pool []*env.Task // a resumed run's; the first curriculum actor takes it
	for i := range deps.TaskPool {
		t := deps.TaskPool[i]
		pool = append(pool, &t)
	}
	cur, _ := root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor {
		c := &curriculumActor{cur: deps.Curriculum, synth: synth, refill: cfg.TaskRefill, log: log, onRecord: deps.OnCurriculum,
			sink: deps.Checkpoints, pool: pool}
		pool = nil
		return c
	}), "curriculum")
	var saveTo *actor.PID // where the learner's checkpoints go
	if deps.Checkpoints != nil {
		saveTo = cur
	}
	server, _ := root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor {
		s := &policyServer{pol: deps.Learner.Policy(), maxBatch: cfg.MaxBatch, maxWait: cfg.MaxWait,
			maxInflight: cfg.InferenceWorkers, root: root, runners: runners}
		if deps.Remote != nil {
			s.codec = deps.Remote.Codec
		}
		return s
	}), "policy-server")
	learnerPID, _ := root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor {
		l := &learner{l: deps.Learner, server: server, b: newRefillBatcher(cfg.GroupsPerUpdate, cfg.MaxStaleness, cfg.RefillZeroVariance, cfg.TryCost),
			every: cfg.CheckpointEvery, saveTo: saveTo, saveTries: cfg.CheckpointTries,
			maxFailures: cfg.MaxUpdateFailures, onUpdate: deps.OnUpdate, onEpisode: deps.OnEpisode, log: log,
			root: root, runners: runners, runCtx: ctx}
		l.resume(cfg.Start)
		return l
	}), "learner")
	return runActors{synth: synth, curriculum: cur, server: server, learner: learnerPID}
}

// spawnScheduler spawns the scheduler, which admits the run's episodes
// (going on from cfg.Start), counts them in counters and closes done when
// the run is over.
func spawnScheduler(cfg Config, deps Deps, root *actor.RootContext, runners *sync.WaitGroup, log zerolog.Logger,
	pids runActors, counters *Counters, done chan struct{}, rstate *remoteState) *actor.PID {
	edeps := &episodeDeps{
		run: cfg.Run, provider: deps.Provider, server: pids.server, learner: pids.learner,
		maxAttempts: cfg.MaxAttempts, runOpts: env.RunOptions{MaxSteps: cfg.MaxSteps, MaxTries: cfg.MaxTries, Harness: deps.Harness},
		closeTimeout: cfg.CloseTimeout, root: root, runners: runners, log: log,
	}
	if im, ok := deps.Provider.(env.Immediate); ok && im.Immediate() {
		edeps.inline = true
	}
	localSlots := cfg.Concurrency
	if rstate != nil {
		localSlots = rstate.cfg.LocalSlots
	}
	pid, _ := root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor {
		return &scheduler{remote: rstate, localSlots: localSlots,
			cfg: schedulerConfig{episodes: cfg.Episodes, concurrency: cfg.Concurrency, groupSize: cfg.GroupSize,
				groupsPerUpdate: cfg.GroupsPerUpdate, maxStaleness: cfg.MaxStaleness},
			deps: edeps, curriculum: pids.curriculum, c: counters, log: log, done: done,
			byID: make(map[uint64]*running), maxRestarts: cfg.MaxAttempts - 1,
			planned: cfg.Start.Episodes.Admitted - cfg.Start.Episodes.Cancelled, nextEp: cfg.Start.NextEpisode, firstGroup: cfg.Start.NextGroup,
			version: cfg.Start.Version, startVersion: cfg.Start.Version,
		}
	}), "scheduler")
	return pid
}

// awaitEnd waits until the scheduler closes done, telling it to stop
// admitting when the run's duration (what cfg.Start left of it) has passed
// or drain fires, and to cancel the running episodes when ctx is cancelled.
func awaitEnd(ctx context.Context, cfg Config, drain <-chan struct{}, root *actor.RootContext, sched *actor.PID, done <-chan struct{}, log zerolog.Logger) {
	var timeout <-chan time.Time
	if cfg.Duration > 0 {
		// The whole run's: a resumed run has what its start left.
		t := time.NewTimer(max(cfg.Duration-time.Duration(cfg.Start.Seconds*float64(time.Second)), 0))
		defer t.Stop()
		timeout = t.C
	}
	cancelled := ctx.Done()
	for {
		select {
		case <-done:
			return
		case <-timeout:
			root.Send(sched, &deadline{})
			timeout = nil
		case <-drain:
			root.Send(sched, &deadline{})
			drain = nil
		case <-cancelled:
			// Once: a cancelled context's channel stays ready.
			cancelled = nil
			log.Info().Msg("shutting down: cancelling running episodes")
			root.Send(sched, &shutdown{})
		}
	}
}

// stopActors asks each actor for its statistics (the learner to flush its
// last update first), waits for the episode actors to stop, then stops
// the run's actors. It returns a summary holding the actors' statistics
// and what could not be asked or stopped.
func stopActors(root *actor.RootContext, pids runActors, log zerolog.Logger) (Summary, []error) {
	var sum Summary
	var errs []error
	ask := func(pid *actor.PID, msg any, into any, timeout time.Duration) {
		if err := askStats(root, pid, msg, into, timeout); err != nil {
			errs = append(errs, err)
		}
	}
	// The learner's last update may be long (a GPU batch); the others
	// answer from memory.
	ask(pids.learner, &Flush{}, &sum.Learner, 30*time.Minute)
	ask(pids.server, &GetStats{}, &sum.PolicyServer, time.Minute)
	ask(pids.curriculum, &GetStats{}, &sum.Curriculum, time.Minute)
	ask(pids.synth, &GetStats{}, &sum.Synth, time.Minute)
	ask(pids.scheduler, &GetStats{}, &sum.Scheduler, time.Minute)
	// Every outcome is recorded; the episode actors may still be stopping.
	if _, err := root.RequestFuture(pids.scheduler, &awaitChildren{}, time.Minute).Result(); err != nil {
		log.Warn().Err(err).Msg("episode actors still stopping after a minute")
	}
	for _, pid := range []*actor.PID{pids.scheduler, pids.learner, pids.server, pids.curriculum, pids.synth} {
		if err := root.StopFuture(pid).Wait(); err != nil {
			errs = append(errs, fmt.Errorf("stop %s: %w", pid.Id, err))
		}
	}
	return sum, errs
}

// askStats sends msg to pid and copies the statistics it answers with into
// into, a pointer to the answer's type.
func askStats(root *actor.RootContext, pid *actor.PID, msg any, into any, timeout time.Duration) error {
	res, err := root.RequestFuture(pid, msg, timeout).Result()
	if err != nil {
		return fmt.Errorf("ask %s for statistics: %w", pid.Id, err)
	}
	switch v := res.(type) {
	case *LearnerStats:
		*into.(*LearnerStats) = *v
	case *PolicyServerStats:
		*into.(*PolicyServerStats) = *v
	case *curriculum.CurriculumStats:
		*into.(*curriculum.CurriculumStats) = *v
	case *SynthStats:
		*into.(*SynthStats) = *v
	case *SchedulerStats:
		*into.(*SchedulerStats) = *v
	}
	return nil
}

// summarize completes sum once every actor has stopped: the episodes'
// accounting from counters, the elapsed time and rate, the sandboxes'
// statistics when the provider keeps them. It returns the errors that end
// the run: ErrLearner, ErrCheckpoint, ErrNoTasks, ErrAccounting.
func summarize(sum *Summary, counters *Counters, elapsed time.Duration, prov env.Provider) []error {
	var errs []error
	sum.Episodes = EpisodeCounts{
		Admitted: counters.Admitted.Load(), Completed: counters.Completed.Load(), Solved: counters.Solved.Load(), RewardHackSuspected: counters.Suspected.Load(),
		FailedInfra: counters.FailedInfra.Load(), Cancelled: counters.Cancelled.Load(), Retries: counters.Retries.Load(),
	}
	e := &sum.Episodes
	e.Accounted = e.Admitted == e.Completed+e.FailedInfra+e.Cancelled
	sum.ElapsedSeconds = elapsed.Seconds()
	if elapsed > 0 {
		sum.EpisodesPerSecond = float64(counters.Recorded()) / elapsed.Seconds()
	}
	if s, ok := prov.(env.ProviderStats); ok {
		sum.Sandbox = s.Stats()
	}
	if sum.Learner.Error != "" {
		errs = append(errs, fmt.Errorf("%w: %s", ErrLearner, sum.Learner.Error))
	}
	if sum.Learner.CheckpointError != "" {
		errs = append(errs, fmt.Errorf("%w: %s", ErrCheckpoint, sum.Learner.CheckpointError))
	}
	if r := sum.Scheduler.TasksRanOut; r != "" {
		errs = append(errs, fmt.Errorf("%w after %d episodes: %s", ErrNoTasks, counters.Admitted.Load(), r))
	}
	if !e.Accounted {
		errs = append(errs, fmt.Errorf("%w: admitted %d, completed %d, failed_infra %d, cancelled %d",
			ErrAccounting, e.Admitted, e.Completed, e.FailedInfra, e.Cancelled))
	}
	return errs
}

// slogHandler routes protoactor-go's log/slog output into zerolog. Its
// chatter (system started, dead letters, supervision) is debug-level for frog.
type slogHandler struct {
	log   zerolog.Logger
	attrs []slog.Attr
}

func (h slogHandler) Enabled(_ context.Context, l slog.Level) bool {
	return h.log.GetLevel() <= zerolog.DebugLevel || l >= slog.LevelError
}

func (h slogHandler) Handle(_ context.Context, r slog.Record) error {
	ev := h.log.Debug()
	if r.Level >= slog.LevelError {
		ev = h.log.Warn()
	}
	for _, a := range h.attrs {
		ev = ev.Str(a.Key, a.Value.String())
	}
	r.Attrs(func(a slog.Attr) bool {
		ev = ev.Str(a.Key, a.Value.String())
		return true
	})
	ev.Msg(r.Message)
	return nil
}

func (h slogHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return slogHandler{log: h.log, attrs: append(append([]slog.Attr(nil), h.attrs...), as...)}
}

func (h slogHandler) WithGroup(string) slog.Handler { return h }
