package actors

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/protobuf/proto"

	"github.com/frognano/frog/actors/wire"
	"github.com/frognano/frog/env"
)

// Remote opens a run to rollout workers (`frog worker --join`): the run
// listens on protoactor-go's remote, admits episodes onto its own slots and
// onto the joined workers' by their free capacity, and re-admits the
// episodes of a worker that dies or falls silent elsewhere, within
// Config.MaxAttempts. Config.Concurrency stays the most episodes running at
// once, all processes together.
type Remote struct {
	// Listen is the host:port the run listens on; port 0 picks a free one.
	Listen string
	// Advertise is the host:port workers reach the run at, when it is not
	// Listen's (needed when Listen's host is 0.0.0.0 or ::).
	Advertise string
	// LocalSlots is how many of Config.Concurrency episodes this process
	// runs itself; 0 runs every episode on workers.
	LocalSlots int
	// Workers is how many workers must have joined before the first
	// episode is admitted (0: start at once).
	Workers int
	// Build is this binary's version; a worker of another is refused.
	Build string
	// Codec encodes the policy and the tasks for workers.
	Codec Codec
	// Env and EnvConfig tell a worker what to play (RunSpec.env).
	Env       string
	EnvConfig []byte
	// Heartbeat is how often each side says it is alive (0: 1 s); a
	// worker silent for DeadAfter (0: 5 s) is counted as lost.
	Heartbeat time.Duration
	DeadAfter time.Duration
	// OnListen, when set, is told the address workers join at, once the
	// run listens.
	OnListen func(addr string)
	// More says another run follows on the same address (frog eval plays
	// one run a policy): at this run's end the workers are told to join
	// again rather than to end.
	More bool
}

func (r Remote) withDefaults() Remote {
	if r.Heartbeat <= 0 {
		r.Heartbeat = time.Second
	}
	if r.DeadAfter <= 0 {
		r.DeadAfter = 5 * r.Heartbeat
	}
	return r
}

func (r Remote) validate(cfg Config) error {
	switch {
	case r.Codec == nil:
		return errors.New("actors: a remote run needs a codec")
	case r.LocalSlots < 0 || r.LocalSlots > cfg.Concurrency:
		return &ConfigError{Field: "Remote.LocalSlots", Value: r.LocalSlots, Want: fmt.Sprintf("0 to Concurrency (%d)", cfg.Concurrency)}
	case r.Workers < 0 || r.Workers > MaxWorkers:
		return &ConfigError{Field: "Remote.Workers", Value: r.Workers, Want: fmt.Sprintf("0 to %d", MaxWorkers)}
	case r.DeadAfter <= r.Heartbeat:
		return &ConfigError{Field: "Remote.DeadAfter", Value: r.DeadAfter, Want: "more than Heartbeat"}
	}
	return nil
}

// RemoteStats is a remote run's part of a summary: the workers that joined
// and what crossed each link. Bytes count the frog messages' encoded size,
// not gRPC's framing.
type RemoteStats struct {
	Address string `json:"address"`
	Joined  int    `json:"joined"`
	Refused int    `json:"refused"`
	Lost    int    `json:"lost"`
	// WaitedSeconds is how long admission waited for Remote.Workers to
	// join (part of the run's elapsed time).
	WaitedSeconds float64 `json:"waited_seconds"`
	// Readmitted counts episodes re-admitted after their worker was lost.
	Readmitted int64         `json:"readmitted"`
	Local      int64         `json:"local_episodes"`
	Workers    []WorkerStats `json:"workers"`
}

// WorkerStats is one joined worker's link, as the trainer saw it.
type WorkerStats struct {
	Name     string `json:"name"`
	Address  string `json:"address"`
	Slots    int    `json:"slots"`
	Episodes int64  `json:"episodes"`
	Done     int64  `json:"done"`
	// Lost says why the trainer stopped counting on the worker, if it did.
	Lost     string `json:"lost,omitempty"`
	MsgsOut  int64  `json:"messages_out"`
	BytesOut int64  `json:"bytes_out"`
	MsgsIn   int64  `json:"messages_in"`
	BytesIn  int64  `json:"bytes_in"`
}

// startRemote starts protoactor-go's remote on system, listening at
// listen, and returns the address the system's PIDs now carry.
func startRemote(system *actor.ActorSystem, listen, advertise string) (r *remote.Remote, addr string, err error) {
	host, port, err := splitHostPort(listen)
	if err != nil {
		return nil, "", err
	}
	if ip := net.ParseIP(host); advertise == "" && (host == "" || ip != nil && ip.IsUnspecified()) {
		return nil, "", fmt.Errorf("listen on %q: name the address the other side dials (advertise): %q is no address to reach", listen, host)
	}
	var opts []remote.ConfigOption
	if advertise != "" {
		opts = append(opts, remote.WithAdvertisedHost(advertise))
	}
	cfg := remote.Configure(host, port, opts...)
	// One try to connect to a peer (each failed try blocks its endpoint
	// for 2 s, and a stop waits for it): a peer that does not answer is
	// gone, and the heartbeat and the join retry on their own.
	cfg.MaxRetryCount = 1
	r = remote.NewRemote(system, cfg)
	defer func() {
		// Start panics when it cannot listen.
		if p := recover(); p != nil {
			r, addr, err = nil, "", fmt.Errorf("listen on %s: %v", listen, p)
		}
	}()
	r.Start()
	return r, system.Address(), nil
}

func splitHostPort(hostport string) (string, int, error) {
	host, p, err := net.SplitHostPort(hostport)
	if err != nil {
		return "", 0, fmt.Errorf("address %q: %w (want host:port)", hostport, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("address %q: port %q is not 0 to 65535", hostport, p)
	}
	return host, port, nil
}

// traffic counts what crossed one trainer–worker link. The scheduler
// counts what it sends, the worker's link actor what it receives, hence
// the atomics.
type traffic struct {
	msgsOut, bytesOut, msgsIn, bytesIn atomic.Int64
}

func (l *traffic) out(m proto.Message) {
	l.msgsOut.Add(1)
	l.bytesOut.Add(int64(proto.Size(m)))
}

func (l *traffic) in(m proto.Message) {
	l.msgsIn.Add(1)
	l.bytesIn.Add(int64(proto.Size(m)))
}

// workerRef is a joined worker as the scheduler keeps it.
type workerRef struct {
	pid *actor.PID
	// link is the worker's link actor on the trainer: the sender of its
	// RunBatches, where it sends its DoneBatches.
	link      *actor.PID
	name      string
	joinID    uint64 // the join_id of the Join accepted
	slots     int
	running   int
	episodes  int64
	done      atomic.Int64
	lastHeard time.Time
	lost      string
	left      bool // told that the run is over
	traffic   traffic
	// batch is what this admission round placed on the worker, sent when
	// the round ends (flush); batchTask the task of its last TaskRecord.
	batch     *wire.RunBatch
	batchTask *env.Task
	// tasks are the tasks placed on it lately (pick prefers it for them).
	tasks recentTasks
}

// remoteState is the scheduler's part of a remote run.
type remoteState struct {
	cfg        Remote
	addr       string
	spec       *wire.RunSpec
	workers    map[string]*workerRef // joined and not lost, by pidKey
	all        []*workerRef          // every worker that joined, in order
	ready      bool
	started    time.Time     // when the scheduler started
	waited     time.Duration // until ready
	refused    int
	lost       int
	readmit    int64
	local      int64
	stopped    bool // no more heartbeat ticks
	farewelled bool // the workers were told the run is over
	// decode is where links hand their worker's results (decoders).
	decode chan<- decodeJob
	// placed holds the episodes on workers, by placement; lastPlacement
	// is the last placement given.
	placed        *placements
	lastPlacement uint64
	// dirty are the workers with a batch to send.
	dirty []*workerRef
	// The last task encoded: a group's episodes are admitted in a row.
	lastTask   *env.Task
	lastRecord *wire.TaskRecord
	// localTasks are the tasks placed on this process lately.
	localTasks recentTasks
}

// placed is an episode placed on a worker, until its result is filed or
// the scheduler re-admits it elsewhere.
type placed struct {
	spec *episodeSpec
	w    *workerRef
	// cancelled says the scheduler asked for the cancellation: a cancelled
	// result is then the episode's, not the worker's leaving.
	cancelled atomic.Bool
}

// placements are the episodes on workers by placement, shared by the
// scheduler and the decoders. Whoever takes a placement out ends its
// episode: a decoder filing the worker's result, or the scheduler
// re-admitting the episode elsewhere. The other finds it gone and does
// nothing, so that an episode has one result.
type placements struct {
	mu sync.Mutex
	m  map[uint64]*placed
}

func (p *placements) add(id uint64, e *placed) {
	p.mu.Lock()
	p.m[id] = e
	p.mu.Unlock()
}

func (p *placements) get(id uint64) *placed {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.m[id]
}

// take removes the placement and reports whether it was there.
func (p *placements) take(id uint64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.m[id]
	delete(p.m, id)
	return ok
}

func pidKey(p *actor.PID) string { return p.Address + "/" + p.Id }

// heartbeatTick tells the scheduler to send heartbeats and look for silent
// workers.
type heartbeatTick struct{}

// freeSlots is how many more episodes may be placed now.
func (s *scheduler) freeSlots() int {
	free := s.cfg.concurrency - len(s.byID)
	if s.remote == nil {
		return free
	}
	if !s.remote.ready {
		return 0
	}
	slots := s.localSlots - s.localRunning
	for _, w := range s.remote.workers {
		slots += w.slots - w.running
	}
	return min(free, slots)
}

// remoteReceive handles the messages of a remote run (s.remote is set);
// it reports whether m was one.
func (s *scheduler) remoteReceive(ctx actor.Context, m any) bool {
	switch m := m.(type) {
	case *wire.Join:
		if s.remote.farewelled {
			// Not answered: a worker told to join the next run asks
			// again until that run listens.
			return true
		}
		ctx.Respond(s.join(ctx, m))
	case *wire.Heartbeat:
		if w := s.remote.workers[pidKey(ctx.Sender())]; ctx.Sender() != nil && w != nil {
			w.traffic.in(m)
			w.lastHeard = time.Now()
		}
	case *wire.Leave:
		if w := s.remote.workers[pidKey(ctx.Sender())]; ctx.Sender() != nil && w != nil {
			w.traffic.in(m)
			s.workerLost(ctx, w, "left: "+m.Reason, false)
			ctx.Respond(&wire.Leave{Reason: "heard"})
		}
	case *heartbeatTick:
		s.heartbeat(ctx)
	case *readmitEpisode:
		if r := s.byID[m.episode]; r != nil && r.placement == m.placement {
			s.readmit(r, max(m.attempts, r.attempts+1), "its worker cancelled it")
			s.pump(ctx)
		}
	case *farewell:
		s.remote.farewelled = true
		var pids []*actor.PID
		for _, w := range s.workersInOrder() {
			// Its connection ends when it goes: not a loss.
			w.left = true
			delete(s.remote.workers, pidKey(w.pid))
			ctx.Unwatch(w.pid)
			pids = append(pids, w.pid)
		}
		ctx.Respond(pids)
	case *actor.Terminated:
		w := s.remote.workers[pidKey(m.Who)]
		if w == nil {
			return false
		}
		s.workerLost(ctx, w, "its connection ended ("+m.Why.String()+")", false)
	case *actor.Stopping:
		s.remote.stopped = true
	default:
		return false
	}
	return true
}

// join answers a worker's Join: refused with a reason a person can act on,
// or accepted with what the worker must know of the run.
func (s *scheduler) join(ctx actor.Context, m *wire.Join) *wire.JoinAnswer {
	refuse := func(format string, args ...any) *wire.JoinAnswer {
		s.remote.refused++
		reason := fmt.Sprintf(format, args...)
		s.log.Warn().Str("worker", m.Name).Str("reason", reason).Msg("worker refused")
		return &wire.JoinAnswer{Reason: reason, Schema: wire.Schema, Build: s.remote.cfg.Build, JoinId: m.JoinId}
	}
	switch {
	case ctx.Sender() == nil:
		return refuse("a join must be sent as a request")
	case m.Schema != wire.Schema:
		return refuse("the worker speaks wire schema %d, this trainer %d: run the same frog on both", m.Schema, wire.Schema)
	case m.Build != s.remote.cfg.Build:
		return refuse("the worker runs frog %s, this trainer frog %s: run the same build on both", m.Build, s.remote.cfg.Build)
	case m.Slots < 1 || m.Slots > MaxConcurrency:
		return refuse("the worker offers %d slots: want 1 to %d", m.Slots, MaxConcurrency)
	case s.draining:
		return refuse("the run is ending")
	}
	key := pidKey(ctx.Sender())
	if old := s.remote.workers[key]; old != nil {
		if m.JoinId != 0 && m.JoinId == old.joinID {
			// The worker asked again before its answer came: the same
			// worker, its episodes still its own.
			old.traffic.in(m)
			old.lastHeard = time.Now()
			return s.accepted(old)
		}
		s.workerLost(ctx, old, "it joined again", false)
	}
	w := &workerRef{pid: ctx.Sender(), name: cmp.Or(m.Name, key), joinID: m.JoinId, slots: int(m.Slots), lastHeard: time.Now()}
	w.traffic.in(m)
	decode, placed, sched, learner := s.remote.decode, s.remote.placed, s.self, s.deps.learner
	w.link = s.deps.root.Spawn(actor.PropsFromProducer(func() actor.Actor {
		return &workerLink{w: w, decode: decode, placed: placed, sched: sched, learner: learner}
	}))
	s.remote.workers[key] = w
	s.remote.all = append(s.remote.all, w)
	ctx.Watch(w.pid)
	s.log.Info().Str("worker", w.name).Str("address", w.pid.Address).Int("slots", w.slots).Int("workers", len(s.remote.workers)).Msg("worker joined")
	if !s.remote.ready && len(s.remote.workers) >= s.remote.cfg.Workers {
		s.remote.ready = true
		s.remote.waited = time.Since(s.remote.started)
		s.log.Info().Int("workers", len(s.remote.workers)).Msg("workers ready: admitting episodes")
	}
	ctx.Send(s.self, &pumpNow{})
	return s.accepted(w)
}

// accepted is the answer to w's accepted Join, counted in its traffic.
func (s *scheduler) accepted(w *workerRef) *wire.JoinAnswer {
	ans := &wire.JoinAnswer{Accepted: true, Schema: wire.Schema, Build: s.remote.cfg.Build, Run: s.remote.spec, JoinId: w.joinID}
	w.traffic.out(ans)
	return ans
}

// heartbeat tells every worker the trainer is alive and counts those
// silent for longer than DeadAfter as lost.
func (s *scheduler) heartbeat(ctx actor.Context) {
	now := time.Now()
	for _, w := range s.workersInOrder() {
		if silent := now.Sub(w.lastHeard); silent > s.remote.cfg.DeadAfter {
			s.workerLost(ctx, w, fmt.Sprintf("silent for %s", silent.Round(time.Millisecond)), true)
			continue
		}
		hb := &wire.Heartbeat{UnixNano: now.UnixNano(), Running: int32(w.running)}
		w.traffic.out(hb)
		ctx.Send(w.pid, hb)
	}
	s.tickLater()
}

// tickLater asks for the next heartbeatTick.
func (s *scheduler) tickLater() {
	if s.remote.stopped {
		return
	}
	root, self := s.deps.root, s.self
	time.AfterFunc(s.remote.cfg.Heartbeat, func() { root.Send(self, &heartbeatTick{}) })
}

func (s *scheduler) workersInOrder() []*workerRef {
	ws := make([]*workerRef, 0, len(s.remote.workers))
	for _, w := range s.remote.all {
		if w.lost == "" && !w.left {
			ws = append(ws, w)
		}
	}
	return ws
}

// workerLost stops counting on w: its running episodes are re-admitted
// elsewhere (their attempt on w counted as one sandbox used), or recorded
// as failed or cancelled when no attempt is left or the run is being
// cancelled. tell sends w a Leave, so that a worker that was only silent
// cancels what it runs and joins again.
func (s *scheduler) workerLost(ctx actor.Context, w *workerRef, reason string, tell bool) {
	if w.lost != "" {
		return
	}
	w.lost = reason
	s.remote.lost++
	delete(s.remote.workers, pidKey(w.pid))
	ctx.Unwatch(w.pid)
	// Its late results are not read: the placements are gone.
	s.deps.root.Stop(w.link)
	if tell {
		leave := &wire.Leave{Reason: wireText("the trainer counted this worker as lost: " + reason), Rejoin: true}
		w.traffic.out(leave)
		ctx.Send(w.pid, leave)
	}
	var ids []uint64
	for id, r := range s.byID {
		if r.w == w {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	s.log.Warn().Str("worker", w.name).Str("reason", reason).Int("episodes", len(ids)).Msg("worker lost: re-admitting its episodes")
	for _, id := range ids {
		s.readmit(s.byID[id], s.byID[id].attempts+1, fmt.Sprintf("worker %s lost (%s)", w.name, reason))
	}
	s.pump(ctx)
}

// readmit takes an episode off its worker, which will not report it:
// the episode is placed again once a slot is free, or recorded as failed
// (no attempt left) or cancelled (the run is being cancelled). attempts is
// the sandboxes it has used. An episode whose proxy already reported it is
// left alone: its outcome is on its way.
func (s *scheduler) readmit(r *running, attempts int, why string) {
	if r.w == nil || !s.remote.placed.take(r.placement) {
		return
	}
	id := r.spec.id
	s.release(r)
	delete(s.byID, id)
	switch {
	case s.cancelling:
		s.endUnplaced(r.spec, Cancelled, attempts, fmt.Errorf("episode %d: %s while the run was cancelled: %w", id, why, context.Canceled))
	case attempts >= s.deps.maxAttempts:
		s.endUnplaced(r.spec, FailedInfra, attempts, env.Infra(fmt.Errorf("episode %d: %s on its last attempt", id, why)))
	default:
		s.remote.readmit++
		s.restarts++
		s.retry = append(s.retry, &running{spec: r.spec, attempts: attempts})
	}
}

// readmitEpisode is a decoder's word that a worker cancelled the episode
// of a placement on its own (the worker is leaving): the episode is
// re-admitted.
type readmitEpisode struct {
	episode   uint64
	placement uint64
	attempts  int
}

// endUnplaced records an episode that no actor holds any more: the
// scheduler counts it and tells the learner, so that its group can close.
func (s *scheduler) endUnplaced(spec *episodeSpec, kind OutcomeKind, attempts int, err error) {
	s.count(kind, 0, attempts)
	s.deps.root.Send(s.deps.learner, &EpisodeResult{
		Episode: spec.id, Group: spec.group, GroupSize: spec.groupSize, Task: spec.task,
		Kind: kind, Attempts: attempts, Err: err,
	})
}

// placeRemote adds an episode to worker w's batch and returns its
// placement; the batch is sent when the admission round ends (flush).
func (s *scheduler) placeRemote(spec *episodeSpec, w *workerRef, attempts int) (uint64, error) {
	r := s.remote
	if spec.task != r.lastTask {
		rec, or, err := r.cfg.Codec.EncodeTask(spec.task)
		if err != nil {
			return 0, fmt.Errorf("episode %d: encode task %s: %w", spec.id, spec.task.ID, err)
		}
		r.lastTask, r.lastRecord = spec.task, &wire.TaskRecord{Record: rec, Oracle: or}
	}
	if w.batch == nil {
		w.batch, w.batchTask = &wire.RunBatch{}, nil
		r.dirty = append(r.dirty, w)
	}
	if w.batchTask != spec.task {
		w.batch.Tasks = append(w.batch.Tasks, r.lastRecord)
		w.batchTask = spec.task
	}
	r.lastPlacement++
	id := r.lastPlacement
	w.batch.Runs = append(w.batch.Runs, &wire.RunEpisode{Episode: spec.id, Group: spec.group, GroupSize: int32(spec.groupSize),
		Attempts: int32(attempts), PolicyVersion: s.version, Placement: id, Task: int32(len(w.batch.Tasks) - 1)})
	r.placed.add(id, &placed{spec: spec, w: w})
	w.running++
	w.episodes++
	return id, nil
}

// flush sends each worker the batch this admission round placed on it,
// from its link. A worker lost meanwhile is skipped: its episodes were
// re-admitted.
func (s *scheduler) flush(ctx actor.Context) {
	for _, w := range s.remote.dirty {
		b := w.batch
		w.batch, w.batchTask = nil, nil
		if w.lost != "" || w.left {
			continue
		}
		w.traffic.out(b)
		ctx.RequestWithCustomSender(w.pid, b, w.link)
	}
	clear(s.remote.dirty)
	s.remote.dirty = s.remote.dirty[:0]
}

// cancelRemote asks an episode's worker to cancel it.
func (s *scheduler) cancelRemote(ctx actor.Context, r *running) {
	if e := s.remote.placed.get(r.placement); e != nil {
		e.cancelled.Store(true)
	}
	c := &wire.CancelEpisode{Episode: r.spec.id}
	r.w.traffic.out(c)
	ctx.Send(r.w.pid, c)
}

// decodeJob is a worker's batch of results, from its link, for a decoder
// to file.
type decodeJob struct {
	batch *wire.DoneBatch
	link  *workerLink
}

// decoders decode workers' results on long-lived goroutines, one a CPU,
// off the links' mailboxes: decoding a trajectory is the trainer's main
// cost an episode. The returned func closes the queue and waits for them.
func decoders(root *actor.RootContext) (chan<- decodeJob, func()) {
	jobs := make(chan decodeJob, 1024)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for j := range jobs {
				j.file(root)
			}
		})
	}
	return jobs, func() {
		close(jobs)
		wg.Wait()
	}
}

// file hands each result of the batch to the learner as a local episode's
// would be, once: a result whose placement is gone (re-admitted, or from a
// worker since lost) is dropped. A cancellation the scheduler did not ask
// for means the worker is leaving: the scheduler re-admits the episode.
func (j *decodeJob) file(root *actor.RootContext) {
	l := j.link
	for _, d := range j.batch.Done {
		e := l.placed.get(d.Placement)
		if e == nil || e.w != l.w {
			continue
		}
		if d.Outcome == wire.Outcome_OUTCOME_CANCELLED && !e.cancelled.Load() {
			root.Send(l.sched, &readmitEpisode{episode: e.spec.id, placement: d.Placement, attempts: int(d.Attempts)})
			continue
		}
		if !l.placed.take(d.Placement) {
			continue
		}
		l.w.done.Add(1)
		r := episodeResult(e.spec, d)
		r.ReportTo = l.sched
		root.Send(l.learner, r)
	}
}

// workerLink is a joined worker's end on the trainer: the worker sends
// its results here, and the link hands them to the decoders.
type workerLink struct {
	w       *workerRef
	decode  chan<- decodeJob
	placed  *placements
	sched   *actor.PID
	learner *actor.PID
}

func (l *workerLink) Receive(ctx actor.Context) {
	if b, ok := ctx.Message().(*wire.DoneBatch); ok {
		l.w.traffic.in(b)
		l.decode <- decodeJob{batch: b, link: l}
	}
}

// remoteStats is the summary's view of the remote run.
func (r *remoteState) stats() *RemoteStats {
	st := &RemoteStats{Address: r.addr, Joined: len(r.all), Refused: r.refused, Lost: r.lost, Readmitted: r.readmit, Local: r.local,
		WaitedSeconds: r.waited.Seconds()}
	for _, w := range r.all {
		st.Workers = append(st.Workers, WorkerStats{Name: w.name, Address: w.pid.Address, Slots: w.slots, Episodes: w.episodes,
			Done: w.done.Load(), Lost: w.lost, MsgsOut: w.traffic.msgsOut.Load(), BytesOut: w.traffic.bytesOut.Load(),
			MsgsIn: w.traffic.msgsIn.Load(), BytesIn: w.traffic.bytesIn.Load()})
	}
	return st
}

// answerPull answers a worker's PullPolicy with the policy server's
// current policy, encoded once per version.
func (s *policyServer) answerPull(ctx actor.Context) {
	if s.codec == nil || ctx.Sender() == nil {
		return
	}
	if s.blob == nil || s.blob.Version != s.version {
		kind, weights, err := s.codec.EncodePolicy(s.pol)
		if err != nil {
			ctx.Respond(&wire.Leave{Reason: wireText(fmt.Sprintf("the trainer cannot encode policy version %d: %v", s.version, err))})
			return
		}
		s.blob = &wire.PolicyBlob{Version: s.version, Kind: kind, Weights: weights}
	}
	ctx.Respond(s.blob)
}

// openRemote starts the run's remote (Deps.Remote) on system and returns
// the scheduler's state for it; nil without a Remote.
func openRemote(system *actor.ActorSystem, cfg Config, deps Deps) (*remote.Remote, *remoteState, error) {
	if deps.Remote == nil {
		return nil, nil, nil
	}
	rc := deps.Remote.withDefaults()
	if err := rc.validate(cfg); err != nil {
		return nil, nil, err
	}
	rem, addr, err := startRemote(system, rc.Listen, rc.Advertise)
	if err != nil {
		return nil, nil, err
	}
	spec := &wire.RunSpec{Run: cfg.Run, MaxSteps: int32(cfg.MaxSteps), MaxTries: int32(cfg.MaxTries), MaxAttempts: int32(cfg.MaxAttempts),
		CloseTimeoutMs: cfg.CloseTimeout.Milliseconds(), MaxBatch: int32(cfg.MaxBatch), InferenceWorkers: int32(cfg.InferenceWorkers),
		Env: rc.Env, EnvConfig: rc.EnvConfig, HeartbeatMs: rc.Heartbeat.Milliseconds(), DeadAfterMs: rc.DeadAfter.Milliseconds()}
	if rc.OnListen != nil {
		rc.OnListen(addr)
	}
	return rem, &remoteState{cfg: rc, addr: addr, spec: spec, workers: make(map[string]*workerRef), ready: rc.Workers == 0,
		placed: &placements{m: make(map[uint64]*placed)}}, nil
}

// farewell asks the scheduler for the workers still joined (a
// []*actor.PID), to tell them the run is over.
type farewell struct{}

// sayFarewell tells every joined worker that the run is over (and, with
// more, to join the next one) and waits, at most farewellWait, until each
// has acknowledged or its connection has ended (a worker told to finish
// answers and exits at once, and its answer may go down with it), so that
// the message is not lost when the remote shuts down right after.
func sayFarewell(root *actor.RootContext, sched *actor.PID, more bool) {
	res, err := root.RequestFuture(sched, &farewell{}, 5*time.Second).Result()
	if err != nil {
		return
	}
	pids, _ := res.([]*actor.PID)
	if len(pids) == 0 {
		return
	}
	done := make(chan struct{})
	pid := root.Spawn(actor.PropsFromProducer(func() actor.Actor {
		return &farewells{pids: pids, more: more, waiting: make(map[string]bool), done: done}
	}))
	defer root.Stop(pid)
	select {
	case <-done:
	case <-time.After(farewellWait):
	}
}

// farewellWait bounds how long a run's end waits for its workers'
// acknowledgements.
const farewellWait = 2 * time.Second

// farewells sends the run's Leave to each worker and closes done once
// every worker answered or its connection ended.
type farewells struct {
	pids    []*actor.PID
	more    bool
	waiting map[string]bool
	done    chan struct{}
}

func (f *farewells) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		for _, pid := range f.pids {
			key := pidKey(pid)
			f.waiting[key] = true
			ctx.Watch(pid)
			// An answer carries no sender: each is awaited on its own.
			fut := ctx.RequestFuture(pid, &wire.Leave{Reason: "the run is over", Rejoin: f.more}, farewellWait)
			ctx.ReenterAfter(fut, func(_ any, err error) {
				if err == nil {
					f.heard(key)
				}
			})
		}
	case *actor.Terminated:
		f.heard(pidKey(m.Who))
	}
}

func (f *farewells) heard(key string) {
	if !f.waiting[key] {
		return
	}
	delete(f.waiting, key)
	if len(f.waiting) == 0 {
		close(f.done)
	}
}
