package actors

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/frognano/frog/env"
)

// episodeDeps are shared by every episode of a run.
type episodeDeps struct {
	run          string
	provider     env.Provider
	server       *actor.PID // policy server
	learner      *actor.PID
	maxAttempts  int
	runOpts      env.RunOptions
	closeTimeout time.Duration
	root         *actor.RootContext
	// runners owns the episodes' runner goroutines: Run waits for it.
	runners *sync.WaitGroup
	log     zerolog.Logger
	// inline is set when the provider's sandboxes never block
	// (env.Immediate): episodes then step inside Receive, with no runner.
	inline bool
}

// episodeSpec is what one episode is; it does not change across restarts.
type episodeSpec struct {
	id        uint64
	group     uint64
	groupSize int
	task      *env.Task
}

// episodeState survives the restarts of an episode's actor: it lives in the
// producer's closure, not in the actor value the supervisor replaces.
type episodeState struct {
	attempts  int
	cancelled bool
	// done is set once the episode has reported its result.
	done bool
}

// infraFault is what an episode panics with to hand an infrastructure fault
// to its supervisor, which restarts it with a fresh sandbox.
type infraFault struct {
	episode uint64
	attempt int
	err     error
}

func (f *infraFault) Error() string {
	return fmt.Sprintf("episode %d attempt %d: %v", f.episode, f.attempt, f.err)
}

func (f *infraFault) Unwrap() error { return f.err }

// episode is the actor of one episode. It owns one sandbox at a time: a
// runner goroutine opens it, plays the episode with env.Run and closes it on
// every path before reporting back, so Receive never blocks.
type episode struct {
	spec    *episodeSpec
	deps    *episodeDeps
	st      *episodeState
	attempt int
	cancel  context.CancelFunc
	// Inline mode: the open sandbox and the episode's state machine.
	sb env.Sandbox
	ep *env.Episode
	// gone is set when the actor stops; its requests to the policy server
	// carry it (ActRequest.Gone).
	gone atomic.Bool
	// req is the one request an inline episode has with the policy server
	// at a time, reused from step to step (ActRequest says when).
	req ActRequest
}

// inlineDispatcher runs an inline episode's mailbox on the goroutine that
// posts to it: the policy server's inference goroutine applies each action
// right after choosing it, with no goroutine per step or per episode.
var inlineDispatcher = actor.NewSynchronizedDispatcher(300)

// episodeMailbox is an episode's mailbox: unbounded, as the default is,
// on protoactor's lock-free queue rather than its ring buffer. An episode
// receives a handful of messages in its life; the ring buffer takes 230
// bytes of each episode for ten of them up front, the lock-free queue a
// node per message.
var episodeMailbox = actor.UnboundedLockfree()

func newEpisodeProps(spec *episodeSpec, deps *episodeDeps) *actor.Props {
	return episodeProps(spec, deps, &episodeState{})
}

// newEpisodePropsAfter is newEpisodeProps for an episode that already
// used attempts sandboxes (on workers since lost).
func newEpisodePropsAfter(spec *episodeSpec, deps *episodeDeps, attempts int) *actor.Props {
	return episodeProps(spec, deps, &episodeState{attempts: attempts})
}

func episodeProps(spec *episodeSpec, deps *episodeDeps, st *episodeState) *actor.Props {
	producer := func() actor.Actor { return &episode{spec: spec, deps: deps, st: st} }
	if deps.inline {
		return actor.PropsFromProducer(producer, actor.WithDispatcher(inlineDispatcher), actor.WithMailbox(episodeMailbox))
	}
	return actor.PropsFromProducer(producer, actor.WithMailbox(episodeMailbox))
}

func (e *episode) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		e.start(ctx)
	case *runDone:
		e.finish(ctx, m)
	case *ActResponse:
		e.act(ctx, m)
	case *Cancel:
		e.st.cancelled = true
		if e.cancel != nil {
			e.cancel()
		}
		if e.sb != nil {
			e.closeSandbox()
			e.finish(ctx, &runDone{attempt: e.attempt, err: context.Canceled})
		}
	case *actor.Restarting, *actor.Stopping:
		if _, ok := m.(*actor.Stopping); ok {
			e.gone.Store(true)
		}
		if e.cancel != nil {
			e.cancel()
		}
		e.closeSandbox()
	}
}

// start begins a new attempt in a runner goroutine.
func (e *episode) start(ctx actor.Context) {
	e.attempt = e.st.attempts
	e.st.attempts++
	if e.st.cancelled {
		e.report(ctx, Cancelled, nil, context.Canceled)
		return
	}
	if e.deps.inline {
		e.startInline(ctx)
		return
	}
	runCtx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	attempt, d, spec, self := e.attempt, e.deps, e.spec, ctx.Self()
	agent := newRemoteAgent(ctx.ActorSystem(), d.server)
	d.runners.Add(1)
	go func() {
		defer d.runners.Done()
		defer cancel()
		defer agent.close()
		traj, err := runAttempt(runCtx, d, spec, attempt, agent)
		d.root.Send(self, &runDone{attempt: attempt, traj: traj, err: err})
	}()
}

// runAttempt opens a sandbox, plays the episode in it and closes it, also
// when ctx is cancelled. A panic in a backend or an agent is an
// infrastructure fault of this attempt, not a crash of frog.
func runAttempt(ctx context.Context, d *episodeDeps, spec *episodeSpec, attempt int, agent env.Agent) (traj env.Trajectory, err error) {
	err = guard(spec.id, attempt, func() error {
		sb, err := d.provider.Open(ctx, env.OpenOptions{Run: d.run, Episode: spec.id, Attempt: attempt, Task: spec.task})
		if err != nil {
			return fmt.Errorf("open sandbox: %w", err)
		}
		defer func() {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.closeTimeout)
			defer cancel()
			if cerr := sb.Close(cctx); cerr != nil {
				// The episode's result stands; the reaper removes what is left.
				d.log.Warn().Err(cerr).Uint64("episode", spec.id).Msg("close sandbox")
			}
		}()
		opts := d.runOpts
		opts.Episode, opts.Attempt = spec.id, attempt
		traj, err = env.Run(ctx, sb, agent, spec.task, opts)
		return err
	})
	return traj, err
}

// startInline opens a never-blocking sandbox and asks for the first action.
// Every sandbox call of an inline episode happens inside Receive, guarded
// against panics like a runner's.
func (e *episode) startInline(ctx actor.Context) {
	d, spec := e.deps, e.spec
	var sb env.Sandbox
	err := guard(spec.id, e.attempt, func() (err error) {
		sb, err = d.provider.Open(context.Background(), env.OpenOptions{Run: d.run, Episode: spec.id, Attempt: e.attempt, Task: spec.task})
		return err
	})
	if err != nil {
		e.finish(ctx, &runDone{attempt: e.attempt, err: fmt.Errorf("open sandbox: %w", err)})
		return
	}
	opts := d.runOpts
	opts.Episode, opts.Attempt = spec.id, e.attempt
	ep, _ := finishedEpisodes.Get().(*env.Episode)
	if ep == nil {
		ep = new(env.Episode)
	}
	ep.Reset(spec.task, opts)
	e.sb, e.ep = sb, ep
	e.next(ctx)
}

// finishedEpisodes holds the state machines of inline episodes that ended
// with no request at the policy server, for the next episodes to reuse
// (env.Episode.Reset): an episode's state machine is its largest
// allocation. One that ended otherwise (cancelled, stopped, a request
// perhaps in a batch that reads its task view) is left to the collector.
var finishedEpisodes sync.Pool

// recycle hands ep, whose episode is over and has no request out, to the
// next episode; nothing of this actor points into it after.
func (e *episode) recycle(ep *env.Episode) {
	e.req = ActRequest{}
	finishedEpisodes.Put(ep)
}

// next asks for the next action, or finishes the episode.
func (e *episode) next(ctx actor.Context) {
	if obs, ok := e.ep.Observation(); ok {
		e.req = ActRequest{Obs: obs, ReplyTo: ctx.Self(), Gone: &e.gone}
		ctx.Send(e.deps.server, &e.req)
		return
	}
	var traj env.Trajectory
	ep := e.ep
	err := guard(e.spec.id, e.attempt, func() (err error) {
		traj, err = ep.Finish(context.Background(), e.sb)
		return err
	})
	e.closeSandbox()
	e.recycle(ep) // the answer to its last request came: nothing reads it
	e.finish(ctx, &runDone{attempt: e.attempt, traj: traj, err: err})
}

// act applies the policy's answer in the sandbox.
func (e *episode) act(ctx actor.Context, m *ActResponse) {
	if e.ep == nil || m.Attempt != e.attempt {
		return // an answer for an attempt that is over
	}
	err := m.Err
	if err == nil {
		err = guard(e.spec.id, e.attempt, func() error { return e.ep.Apply(context.Background(), e.sb, *m.Action) })
	}
	if err != nil {
		ep := e.ep
		traj := ep.Trajectory()
		e.closeSandbox()
		e.recycle(ep) // m answered its last request
		e.finish(ctx, &runDone{attempt: e.attempt, traj: traj, err: err})
		return
	}
	e.next(ctx)
}

func (e *episode) closeSandbox() {
	if e.sb == nil {
		return
	}
	sb := e.sb
	e.sb, e.ep = nil, nil
	_ = guard(e.spec.id, e.attempt, func() error { return sb.Close(context.Background()) })
}

// guard runs f, turning a panic of a backend into an infrastructure fault.
func guard(episode uint64, attempt int, f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = env.Infra(fmt.Errorf("episode %d attempt %d: panic: %v", episode, attempt, r))
		}
	}()
	return f()
}

// finish decides what an attempt's end means: a result for the learner, or a
// fault for the supervisor.
func (e *episode) finish(ctx actor.Context, m *runDone) {
	if m.attempt != e.attempt || e.st.done {
		return
	}
	e.cancel = nil
	switch {
	case m.err == nil:
		traj := m.traj
		e.report(ctx, Completed, &traj, nil)
	case e.st.cancelled || errors.Is(m.err, context.Canceled):
		e.report(ctx, Cancelled, nil, m.err)
	default:
		// Whatever is not the agent's doing and not a cancellation is the
		// harness's: a sandbox fault, an unreachable policy, a timeout.
		err := env.Infra(m.err)
		if e.st.attempts < e.deps.maxAttempts {
			panic(&infraFault{episode: e.spec.id, attempt: e.attempt, err: err})
		}
		e.report(ctx, FailedInfra, nil, err)
	}
}

// report hands the episode's result to the learner, which records it and
// passes the outcome on to the scheduler, and stops the episode: its work is
// done and its sandbox closed.
func (e *episode) report(ctx actor.Context, kind OutcomeKind, traj *env.Trajectory, err error) {
	e.st.done = true
	ctx.Send(e.deps.learner, &EpisodeResult{
		Episode: e.spec.id, Group: e.spec.group, GroupSize: e.spec.groupSize, Task: e.spec.task,
		Kind: kind, Trajectory: traj, Attempts: e.st.attempts, Err: err, ReportTo: ctx.Parent(),
	})
	ctx.Stop(ctx.Self())
}

// remoteAgent is the env.Agent an episode's runner plays with: each Act is a
// round trip to the policy server. The answers come back to an inbox: a
// process in the actor system's registry, addressed by a PID like any actor,
// that hands them straight to the waiting runner, the way protoactor's own
// futures work. A step thus costs no mailbox and no goroutine of the episode
// actor, and the policy server need not be local.
type remoteAgent struct {
	system  *actor.ActorSystem
	server  *actor.PID
	inbox   *actor.PID
	replies chan *ActResponse
}

func newRemoteAgent(system *actor.ActorSystem, server *actor.PID) *remoteAgent {
	a := &remoteAgent{system: system, server: server, replies: make(chan *ActResponse, 1)}
	a.inbox, _ = system.ProcessRegistry.Add(inbox(a.replies), "inbox"+system.ProcessRegistry.NextId())
	return a
}

func (a *remoteAgent) close() { a.system.ProcessRegistry.Remove(a.inbox) }

func (a *remoteAgent) Act(ctx context.Context, obs env.Observation) (env.Action, error) {
	a.system.Root.Send(a.server, &ActRequest{Obs: obs, ReplyTo: a.inbox})
	for {
		select {
		case r := <-a.replies:
			if r.Step != obs.Step || r.Attempt != obs.Attempt {
				continue
			}
			if r.Err != nil {
				return env.Action{}, r.Err
			}
			return *r.Action, nil
		case <-ctx.Done():
			return env.Action{}, ctx.Err()
		}
	}
}

// inbox is an actor.Process that delivers act responses to a channel. The
// runner has at most one request outstanding, so a buffer of one never
// blocks the sender; anything else is dropped.
type inbox chan *ActResponse

func (in inbox) SendUserMessage(_ *actor.PID, m any) {
	if r, ok := actor.UnwrapEnvelopeMessage(m).(*ActResponse); ok {
		select {
		case in <- r:
		default:
		}
	}
}

func (in inbox) SendSystemMessage(*actor.PID, any) {}
func (in inbox) Stop(*actor.PID)                   {}
