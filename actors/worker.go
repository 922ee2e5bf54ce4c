package actors

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/frognano/frog/actors/wire"
	"github.com/frognano/frog/env"
)

// WorkerConfig shapes a rollout worker (`frog worker --join`).
type WorkerConfig struct {
	// Join is the trainer's address (its Remote.Listen or Advertise).
	Join string
	// Listen is this worker's host:port (port 0 picks a free one), and
	// Advertise the address the trainer reaches it at, when it is not
	// Listen's.
	Listen    string
	Advertise string
	// Name names the worker in the trainer's logs and summary.
	Name string
	// Slots is the most episodes the worker runs at once.
	Slots int
	// Build is this binary's version; the trainer refuses another.
	Build string
	// JoinTimeout is how long the worker keeps asking to join before it
	// gives up (0: one minute).
	JoinTimeout time.Duration
}

// WorkerDeps are what a worker plays with.
type WorkerDeps struct {
	// Codec must be the trainer's. The worker calls it only after Open
	// has returned, so a codec may depend on what Open opened.
	Codec Codec
	// Open makes the environment the trainer's run names (RunSpec.env and
	// env_config): the sandboxes and, for real tasks, the harness. It is
	// called once, at the first accepted join, off the worker's actor.
	Open func(envName string, config []byte) (env.Provider, env.Harness, error)
	Log  zerolog.Logger
}

// WorkerSummary is what a worker did.
type WorkerSummary struct {
	Address string `json:"address"`
	// Joins counts accepted joins (a worker dropped after a silence joins
	// again).
	Joins       int   `json:"joins"`
	Episodes    int64 `json:"episodes"`
	Completed   int64 `json:"completed"`
	FailedInfra int64 `json:"failed_infra"`
	Cancelled   int64 `json:"cancelled"`
	// PolicyPulls counts the policy versions pulled; Version is the last.
	PolicyPulls int    `json:"policy_pulls"`
	Version     int64  `json:"version"`
	Ended       string `json:"ended"`
}

// ErrRefused is returned by Work when the trainer refused the worker; the
// error says why.
var ErrRefused = errors.New("the trainer refused this worker")

// ErrNoTrainer is returned by Work when no trainer answered the join.
var ErrNoTrainer = errors.New("no trainer answered")

// ErrTrainerLost is returned by Work when the trainer died or fell silent
// during the run: the worker cancelled its episodes and closed their
// sandboxes.
var ErrTrainerLost = errors.New("the trainer was lost")

// Work joins the trainer at cfg.Join and runs the episodes it is sent
// until the trainer's run is over (nil), the trainer is lost
// (ErrTrainerLost), it is refused (ErrRefused), no trainer answers
// (ErrNoTrainer) or ctx is cancelled (nil: the worker tells the trainer it
// leaves, and the trainer re-admits its episodes elsewhere). On every path
// its episodes end and close their sandboxes before Work returns.
func Work(ctx context.Context, cfg WorkerConfig, deps WorkerDeps) (WorkerSummary, error) {
	if err := cfg.validate(deps); err != nil {
		return WorkerSummary{}, err
	}
	if cfg.JoinTimeout <= 0 {
		cfg.JoinTimeout = time.Minute
	}
	log := deps.Log.With().Str("component", "worker").Logger()
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slogHandler{log: log.With().Str("component", "protoactor").Logger()})
	}))
	rem, addr, err := startRemote(system, cfg.Listen, cfg.Advertise)
	if err != nil {
		return WorkerSummary{}, err
	}
	var runners sync.WaitGroup
	done := make(chan workerEnd, 1)
	encode, stopEncoders := encoders(system.Root, log)
	w := &worker{cfg: cfg, deps: deps, log: log, root: system.Root, runners: &runners, done: done, encode: encode,
		trainer: actor.NewPID(cfg.Join, "scheduler"), policySrc: actor.NewPID(cfg.Join, "policy-server"),
		eps: make(map[uint64]*workerEpisode), sum: WorkerSummary{Address: addr}}
	pid, _ := system.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return w }), "worker")
	log.Info().Str("address", addr).Str("join", cfg.Join).Int("slots", cfg.Slots).Msg("worker started")
	var end workerEnd
	select {
	case end = <-done:
	case <-ctx.Done():
		system.Root.Send(pid, &stopWorker{})
		end = <-done
	}
	_ = system.Root.StopFuture(pid).Wait()
	stopEncoders()
	runners.Wait()
	// Not graceful: protoactor-go's graceful shutdown writes flags its
	// readers race on; the trainer has been told (Leave) or is gone.
	rem.Shutdown(false)
	system.Shutdown()
	log.Info().Str("ended", end.sum.Ended).Int64("episodes", end.sum.Episodes).Msg("worker finished")
	return end.sum, end.err
}

func (c WorkerConfig) validate(deps WorkerDeps) error {
	switch {
	case c.Join == "":
		return errors.New("actors: a worker needs the trainer's address")
	case c.Slots < 1 || c.Slots > MaxConcurrency:
		return &ConfigError{Field: "WorkerConfig.Slots", Value: c.Slots, Want: fmt.Sprintf("1 to %d", MaxConcurrency)}
	case deps.Codec == nil || deps.Open == nil:
		return errors.New("actors: a worker needs a codec and an environment")
	}
	if _, _, err := splitHostPort(c.Join); err != nil {
		return err
	}
	return nil
}

// workerEnd is how a worker's actor ended.
type workerEnd struct {
	sum WorkerSummary
	err error
}

// stopWorker tells the worker that its process is stopping.
type stopWorker struct{}

// workerTick tells the worker to send a heartbeat, try a join again, or
// notice a silent trainer.
type workerTick struct{}

type workerEpisode struct {
	pid *actor.PID
	to  replyTo
}

// replyTo is where an episode's result goes: the worker's link on the
// trainer, and the episode's placement.
type replyTo struct {
	link      *actor.PID
	placement uint64
}

// pendingRun is a RunEpisode with its task's record, as it came, or
// waiting for the worker to be ready.
type pendingRun struct {
	run  *wire.RunEpisode
	task *wire.TaskRecord // nil: the batch had no such task
	link *actor.PID
}

// worker is the actor of a rollout worker: it joins the trainer, hosts the
// episodes it is sent (their supervisor, as the scheduler is on the
// trainer) with a local replica of the policy, and sends the results
// back, in batches, to its link on the trainer.
type worker struct {
	cfg       WorkerConfig
	deps      WorkerDeps
	log       zerolog.Logger
	root      *actor.RootContext
	runners   *sync.WaitGroup
	done      chan workerEnd
	trainer   *actor.PID // the trainer's scheduler
	policySrc *actor.PID // the trainer's policy server

	spec    *wire.RunSpec
	prov    env.Provider // the environment opened, once
	harness env.Harness
	edeps   *episodeDeps
	server  *actor.PID // the local policy server
	version int64
	pulled  int64 // the newest version asked for
	havePol bool
	// heldPolicy is the newest policy that came before the environment
	// was open: the codec may depend on what Open opened, so nothing is
	// decoded before it returns.
	heldPolicy *wire.PolicyBlob
	waiting    []pendingRun
	eps        map[uint64]*workerEpisode
	joined     bool
	// The last task decoded, and its record: a group's episodes share
	// one, and come in a row. tasks keeps the tasks decoded lately, for
	// the groups that come back (a curriculum replays its tasks).
	lastRecord  *wire.TaskRecord
	lastTask    *env.Task
	lastTaskErr error
	tasks       decodedTasks
	// encode is where results go to be encoded and sent (encoders).
	encode chan<- encodeJob
	// joinStart is when this worker set out to join, joinID the id every
	// Join it sends until answered repeats (wire.Join's join_id).
	joinStart time.Time
	joinID    uint64
	lastHeard time.Time
	lastTick  time.Time
	// ending, once set, says why the worker is ending; rejoin that it
	// joins again once its episodes have ended instead.
	ending   string
	endErr   error
	leaving  bool // told the trainer it leaves; waits for its answer
	rejoin   bool
	finished bool
	sum      WorkerSummary
}

func (w *worker) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		w.setOut()
		w.askJoin(ctx)
		w.tickLater(ctx, time.Second)
	case *wire.JoinAnswer:
		w.joinAnswer(ctx, m)
	case *envOpened:
		w.envOpened(ctx, m)
	case *wire.PolicyBlob:
		w.policy(ctx, m)
	case *wire.RunBatch:
		w.runBatch(ctx, m, ctx.Sender())
	case *wire.CancelEpisode:
		if e := w.eps[m.Episode]; e != nil {
			ctx.Send(e.pid, &Cancel{})
		}
	case *EpisodeResult:
		w.episodeEnded(ctx, m)
	case *wire.Heartbeat:
		w.lastHeard = time.Now()
	case *wire.Leave:
		if w.leaving {
			// The trainer heard this worker leave (or it is leaving too).
			w.end(ctx, "stopped", nil, false)
			return
		}
		if ctx.Sender() != nil {
			ctx.Respond(&wire.Heartbeat{UnixNano: time.Now().UnixNano()})
		}
		w.end(ctx, "the trainer said: "+m.Reason, nil, m.Rejoin)
	case *workerTick:
		w.tick(ctx)
	case *stopWorker:
		if !w.joined || w.ending != "" {
			w.end(ctx, "stopped", nil, false)
			return
		}
		// Tell the trainer first, so that it re-admits this worker's
		// episodes rather than count them cancelled; end once it has
		// heard (its answer is a Leave) or after a second.
		w.leaving = true
		ctx.Request(w.trainer, &wire.Leave{Reason: "the worker is stopping"})
		root, self := w.root, ctx.Self()
		time.AfterFunc(time.Second, func() { root.Send(self, &wire.Leave{Reason: "no answer to the leave"}) })
	case *actor.Terminated:
		// Not between runs: the trainer of a run that is over may go.
		if w.joined && m.Who.Equal(w.trainer) {
			w.end(ctx, "the trainer's connection ended ("+m.Why.String()+")", ErrTrainerLost, false)
		}
	}
}

// setOut starts a join: its clock, and the id its Joins repeat so that
// the trainer knows a repeat from a worker that joins anew.
func (w *worker) setOut() {
	w.joinStart = time.Now()
	w.joinID = rand.Uint64() | 1
}

func (w *worker) askJoin(ctx actor.Context) {
	ctx.Request(w.trainer, &wire.Join{Schema: wire.Schema, Build: w.cfg.Build, Name: w.cfg.Name, Slots: int32(w.cfg.Slots), JoinId: w.joinID})
}

func (w *worker) tickLater(ctx actor.Context, d time.Duration) {
	root, self := w.root, ctx.Self()
	time.AfterFunc(d, func() { root.Send(self, &workerTick{}) })
}

// tick asks to join again until answered, or sends the trainer a heartbeat
// and ends the worker when the trainer has been silent too long.
func (w *worker) tick(ctx actor.Context) {
	if w.finished {
		return
	}
	defer func() { w.lastTick = time.Now() }()
	every := time.Second
	switch {
	case w.ending != "":
	case !w.joined:
		if time.Since(w.joinStart) > w.cfg.JoinTimeout {
			w.end(ctx, "no trainer answered", fmt.Errorf("%w at %s within %s", ErrNoTrainer, w.cfg.Join, w.cfg.JoinTimeout), false)
			return
		}
		w.askJoin(ctx)
	default:
		every = time.Duration(w.spec.HeartbeatMs) * time.Millisecond
		deadAfter := time.Duration(w.spec.DeadAfterMs) * time.Millisecond
		if now := time.Now(); now.Sub(w.lastTick) > deadAfter {
			// This worker was itself stopped (SIGSTOP) or starved: the
			// trainer's silence is not the trainer's. It gets a fresh
			// period to be heard from.
			w.lastHeard = now
		}
		if silent := time.Since(w.lastHeard); silent > deadAfter {
			w.end(ctx, fmt.Sprintf("the trainer has been silent for %s", silent.Round(time.Millisecond)), ErrTrainerLost, false)
			return
		}
		// As requests: the trainer knows a worker by the sender.
		ctx.Request(w.trainer, &wire.Heartbeat{UnixNano: time.Now().UnixNano(), Running: int32(len(w.eps))})
	}
	w.tickLater(ctx, every)
}

// joinAnswer opens the run's environment at the first accepted join, pulls
// the policy, and watches the trainer.
func (w *worker) joinAnswer(ctx actor.Context, m *wire.JoinAnswer) {
	if w.joined || w.ending != "" {
		return
	}
	if m.JoinId != 0 && m.JoinId != w.joinID {
		return // a late answer to a join made before this one
	}
	if !m.Accepted {
		w.end(ctx, "refused", fmt.Errorf("%w: %s", ErrRefused, m.Reason), false)
		return
	}
	if m.Run == nil || m.Run.MaxAttempts < 1 || m.Run.MaxSteps < 1 || m.Run.HeartbeatMs < 1 || m.Run.DeadAfterMs < 1 {
		w.end(ctx, "refused", fmt.Errorf("%w: the trainer's run spec is incomplete", ErrRefused), false)
		return
	}
	switch {
	case w.spec == nil:
		// Opening sandboxes may take long (a Docker pool, an image
		// check): it runs off the actor, which keeps its heartbeat.
		w.spec = m.Run
		spec, open, root, self := m.Run, w.deps.Open, w.root, ctx.Self()
		w.runners.Add(1)
		go func() {
			defer w.runners.Done()
			prov, harness, err := open(spec.Env, spec.EnvConfig)
			root.Send(self, &envOpened{prov: prov, harness: harness, err: err})
		}()
	case m.Run.Env != w.spec.Env || !bytes.Equal(m.Run.EnvConfig, w.spec.EnvConfig):
		// A run after the one this worker opened its environment for
		// (frog eval's next policy) must play the same.
		reason := "the trainer's run plays another environment than the one this worker opened: start the worker again"
		ctx.Request(ctx.Sender(), &wire.Leave{Reason: reason})
		w.end(ctx, "refused", fmt.Errorf("%w: %s", ErrRefused, reason), false)
		return
	default:
		w.spec = m.Run
		if w.prov != nil {
			w.edeps = w.episodeDeps(ctx)
		}
	}
	w.joined = true
	w.sum.Joins++
	w.lastHeard = time.Now()
	ctx.Watch(w.trainer)
	w.pull(ctx, -1)
	w.log.Info().Str("run", m.Run.Run).Str("env", m.Run.Env).Msg("joined the trainer")
}

// envOpened is the environment the run names, opened.
type envOpened struct {
	prov    env.Provider
	harness env.Harness
	err     error
}

func (w *worker) envOpened(ctx actor.Context, m *envOpened) {
	if m.err != nil {
		ctx.Request(w.trainer, &wire.Leave{Reason: wireText("the worker cannot open environment " + w.spec.Env + ": " + m.err.Error())})
		w.end(ctx, "environment", fmt.Errorf("open environment %q: %w", w.spec.Env, m.err), false)
		return
	}
	w.prov, w.harness = m.prov, m.harness
	w.edeps = w.episodeDeps(ctx)
	if held := w.heldPolicy; held != nil {
		w.heldPolicy = nil
		w.policy(ctx, held) // starts the waiting episodes too
		return
	}
	w.startWaiting(ctx)
}

// episodeDeps is what the worker's episodes play with: the run's spec,
// the environment opened and the local policy server.
func (w *worker) episodeDeps(ctx actor.Context) *episodeDeps {
	d := &episodeDeps{run: w.spec.Run, provider: w.prov, learner: ctx.Self(), maxAttempts: int(w.spec.MaxAttempts),
		runOpts:      env.RunOptions{MaxSteps: int(w.spec.MaxSteps), MaxTries: int(w.spec.MaxTries), Harness: w.harness},
		closeTimeout: time.Duration(w.spec.CloseTimeoutMs) * time.Millisecond, root: w.root, runners: w.runners, log: w.log,
		server: w.server}
	if im, ok := w.prov.(env.Immediate); ok && im.Immediate() {
		d.inline = true
	}
	return d
}

// ready says the worker can start episodes: its environment is open and
// it has a policy.
func (w *worker) ready() bool { return w.edeps != nil && w.server != nil }

// startWaiting starts the episodes that came before the worker was ready.
func (w *worker) startWaiting(ctx actor.Context) {
	if !w.ready() {
		return
	}
	waiting := w.waiting
	w.waiting = nil
	for _, p := range waiting {
		w.runEpisode(ctx, p)
	}
}

// pull asks the trainer's policy server for its policy, once per version.
func (w *worker) pull(ctx actor.Context, version int64) {
	if w.havePol && version <= w.pulled {
		return
	}
	w.pulled = max(w.pulled, version)
	ctx.Request(w.policySrc, &wire.PullPolicy{Version: version})
}

// policy installs a pulled policy; the first one starts the local policy
// server and the episodes that waited for it.
func (w *worker) policy(ctx actor.Context, m *wire.PolicyBlob) {
	if w.havePol && m.Version <= w.version {
		return
	}
	if w.prov == nil {
		if w.heldPolicy == nil || m.Version > w.heldPolicy.Version {
			w.heldPolicy = m
		}
		return
	}
	pol, err := w.deps.Codec.DecodePolicy(m.Kind, m.Weights)
	if err != nil {
		ctx.Request(w.trainer, &wire.Leave{Reason: wireText("the worker cannot decode the policy: " + err.Error())})
		w.end(ctx, "policy", fmt.Errorf("decode policy version %d: %w", m.Version, err), false)
		return
	}
	w.sum.PolicyPulls++
	w.version, w.sum.Version = m.Version, m.Version
	if w.server == nil {
		spec := w.spec
		w.server = ctx.Spawn(actor.PropsFromProducer(func() actor.Actor {
			return &policyServer{pol: pol, version: m.Version, maxBatch: max(int(spec.MaxBatch), 1),
				maxInflight: max(int(spec.InferenceWorkers), 1), root: w.root, runners: w.runners}
		}))
		if w.edeps != nil {
			w.edeps.server = w.server
		}
	} else {
		ctx.Send(w.server, &PolicyUpdate{Version: m.Version, Policy: pol})
	}
	w.havePol = true
	w.startWaiting(ctx)
}

// runBatch starts the episodes of a batch the trainer sent from link.
func (w *worker) runBatch(ctx actor.Context, b *wire.RunBatch, link *actor.PID) {
	if link == nil {
		return
	}
	for _, m := range b.Runs {
		p := pendingRun{run: m, link: link}
		if i := int(m.Task); i >= 0 && i < len(b.Tasks) {
			p.task = b.Tasks[i]
		}
		w.runEpisode(ctx, p)
	}
}

// runEpisode starts an episode the trainer sent, as a child whose result
// comes back to the worker (its learner, here) as an *EpisodeResult.
func (w *worker) runEpisode(ctx actor.Context, p pendingRun) {
	m, to := p.run, replyTo{link: p.link, placement: p.run.Placement}
	if w.ending != "" || !w.joined {
		w.answer(to, &EpisodeResult{Episode: m.Episode, Kind: Cancelled, Attempts: int(m.Attempts),
			Err: fmt.Errorf("the worker is ending (%s): %w", w.ending, context.Canceled)})
		return
	}
	if !w.ready() {
		// The environment decides how tasks are read: wait for it.
		w.waiting = append(w.waiting, p)
		return
	}
	task, err := w.task(p.task)
	if err != nil {
		w.answer(to, &EpisodeResult{Episode: m.Episode, Kind: FailedInfra, Attempts: int(m.Attempts),
			Err: env.Infra(fmt.Errorf("episode %d: decode task: %w", m.Episode, err))})
		return
	}
	if m.PolicyVersion > w.version {
		w.pull(ctx, m.PolicyVersion)
	}
	spec := &episodeSpec{id: m.Episode, group: m.Group, groupSize: int(m.GroupSize), task: task}
	pid := ctx.Spawn(newEpisodePropsAfter(spec, w.edeps, int(m.Attempts)))
	w.eps[m.Episode] = &workerEpisode{pid: pid, to: to}
	w.sum.Episodes++
}

// task decodes a task's record, once for the episodes of a batch that
// share it, and once for as long as the worker keeps it decoded.
func (w *worker) task(rec *wire.TaskRecord) (*env.Task, error) {
	if rec == nil {
		return nil, errors.New("the batch has no such task")
	}
	if rec != w.lastRecord {
		w.lastRecord = rec
		if w.lastTask = w.tasks.get(rec); w.lastTask != nil {
			w.lastTaskErr = nil
		} else if w.lastTask, w.lastTaskErr = w.deps.Codec.DecodeTask(rec.Record, rec.Oracle); w.lastTaskErr == nil {
			w.tasks.add(rec, w.lastTask)
		}
	}
	return w.lastTask, w.lastTaskErr
}

// decodedTasks keeps the last decodedTasksKept tasks a worker decoded,
// by their record's bytes (the record and the oracle both), so that a
// task that comes back is not decoded again. The worker's actor alone
// uses it.
type decodedTasks struct {
	byRecord map[string]decodedTask
	ring     []string // the keys in the order they came; next is the oldest
	next     int
}

type decodedTask struct {
	oracle []byte
	task   *env.Task
}

// decodedTasksKept bounds decodedTasks.
const decodedTasksKept = 1024

// get is the task decoded from rec's bytes, or nil.
func (d *decodedTasks) get(rec *wire.TaskRecord) *env.Task {
	if e, ok := d.byRecord[string(rec.Record)]; ok && bytes.Equal(e.oracle, rec.Oracle) {
		return e.task
	}
	return nil
}

// add keeps t as the task decoded from rec, forgetting the oldest kept
// once the bound is reached.
func (d *decodedTasks) add(rec *wire.TaskRecord, t *env.Task) {
	key := string(rec.Record)
	if d.byRecord == nil {
		d.byRecord = make(map[string]decodedTask)
	}
	if _, ok := d.byRecord[key]; !ok {
		if len(d.ring) < decodedTasksKept {
			d.ring = append(d.ring, key)
		} else {
			delete(d.byRecord, d.ring[d.next])
			d.ring[d.next] = key
			d.next = (d.next + 1) % decodedTasksKept
		}
	}
	d.byRecord[key] = decodedTask{oracle: bytes.Clone(rec.Oracle), task: t}
}

func (w *worker) episodeEnded(ctx actor.Context, r *EpisodeResult) {
	e := w.eps[r.Episode]
	if e == nil {
		return
	}
	delete(w.eps, r.Episode)
	w.answer(e.to, r)
	if w.ending != "" && len(w.eps) == 0 {
		w.ended(ctx)
	}
}

// answer queues an episode's result for the encoders, which send it to
// the episode's link on the trainer.
func (w *worker) answer(to replyTo, r *EpisodeResult) {
	switch r.Kind {
	case Completed:
		w.sum.Completed++
	case FailedInfra:
		w.sum.FailedInfra++
	case Cancelled:
		w.sum.Cancelled++
	}
	w.encode <- encodeJob{to: to, result: r}
}

// encodeJob is an episode's result to encode and send.
type encodeJob struct {
	to     replyTo
	result *EpisodeResult
}

// maxDoneBatch is the most results one DoneBatch carries.
const maxDoneBatch = 256

// encoders encode results on long-lived goroutines, one a CPU, so that
// the worker's actor, which every episode's start and end goes through,
// does not also encode every trajectory. Each sends what is queued when it
// is free, up to maxDoneBatch results, as one DoneBatch a link: under load
// the batches grow, and a lone result goes at once. The returned func
// closes the queue and waits until every result queued has been sent.
func encoders(root *actor.RootContext, log zerolog.Logger) (chan<- encodeJob, func()) {
	jobs := make(chan encodeJob, 1024)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			var batch []encodeJob
			for j := range jobs {
				batch = append(batch[:0], j)
			more:
				for len(batch) < maxDoneBatch {
					select {
					case j, ok := <-jobs:
						if !ok {
							break more
						}
						batch = append(batch, j)
					default:
						break more
					}
				}
				sendDone(root, log, batch)
			}
		})
	}
	return jobs, func() {
		close(jobs)
		wg.Wait()
	}
}

// sendDone encodes the results and sends them, one DoneBatch a link.
func sendDone(root *actor.RootContext, log zerolog.Logger, jobs []encodeJob) {
	type out struct {
		link  *actor.PID
		batch *wire.DoneBatch
	}
	var outs []out
	for _, j := range jobs {
		d, err := episodeDone(j.result, j.to.placement)
		if err != nil {
			log.Error().Err(err).Msg("result not sent; the trainer will count the episode as lost")
			continue
		}
		i := slices.IndexFunc(outs, func(o out) bool { return o.link == j.to.link })
		if i < 0 {
			i = len(outs)
			outs = append(outs, out{link: j.to.link, batch: &wire.DoneBatch{Done: make([]*wire.EpisodeDone, 0, len(jobs))}})
		}
		outs[i].batch.Done = append(outs[i].batch.Done, d)
	}
	for _, o := range outs {
		root.Send(o.link, o.batch)
	}
}

// end cancels every episode; once they have ended, the worker joins again
// (rejoin) or Work returns err.
func (w *worker) end(ctx actor.Context, reason string, err error, rejoin bool) {
	if w.ending != "" {
		return
	}
	w.ending, w.endErr, w.rejoin = reason, err, rejoin
	w.log.Info().Str("reason", reason).Int("running", len(w.eps)).Bool("rejoin", rejoin).Msg("worker ending its episodes")
	for _, e := range w.eps {
		ctx.Send(e.pid, &Cancel{})
	}
	for _, p := range w.waiting {
		w.answer(replyTo{link: p.link, placement: p.run.Placement}, &EpisodeResult{Episode: p.run.Episode, Kind: Cancelled, Attempts: int(p.run.Attempts),
			Err: fmt.Errorf("the worker is ending (%s): %w", reason, context.Canceled)})
	}
	w.waiting = nil
	if len(w.eps) == 0 {
		w.ended(ctx)
	}
}

// ended is called once no episode runs after end: the worker joins again
// or finishes.
func (w *worker) ended(ctx actor.Context) {
	if w.rejoin {
		w.log.Info().Msg("joining the trainer again")
		ctx.Unwatch(w.trainer)
		w.ending, w.endErr, w.rejoin, w.joined = "", nil, false, false
		// The next run may play another policy, from version 0.
		if w.server != nil {
			ctx.Stop(w.server)
			w.server = nil
			if w.edeps != nil {
				w.edeps.server = nil
			}
		}
		w.havePol, w.version, w.pulled = false, 0, 0
		w.setOut()
		w.askJoin(ctx)
		return
	}
	if w.finished {
		return
	}
	if w.joined {
		ctx.Unwatch(w.trainer)
	}
	w.finished = true
	w.sum.Ended = w.ending
	w.done <- workerEnd{sum: w.sum, err: w.endErr}
}

// HandleFailure supervises the worker's episodes as the scheduler does on
// the trainer: an infrastructure fault restarts the episode in a fresh
// sandbox while attempts are left; a crash ends it as an infrastructure
// failure, reported to its link.
func (w *worker) HandleFailure(_ *actor.ActorSystem, sup actor.Supervisor, child *actor.PID, rs *actor.RestartStatistics, reason, _ any) {
	if _, ok := reason.(*infraFault); ok && w.edeps != nil && rs.FailureCount() < w.edeps.maxAttempts-1 {
		rs.Fail()
		sup.RestartChildren(child)
		return
	}
	sup.StopChildren(child)
	for id, e := range w.eps {
		if e.pid.Equal(child) {
			w.log.Error().Uint64("episode", id).Interface("reason", reason).Msg("episode actor crashed; reported as an infrastructure failure")
			w.root.Send(w.edeps.learner, &EpisodeResult{Episode: id, Kind: FailedInfra,
				Err: env.Infra(fmt.Errorf("episode %d: actor crashed: %v", id, reason))})
			return
		}
	}
}
