package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/frognano/frog/actors"
	"github.com/frognano/frog/env"
	envsim "github.com/frognano/frog/env/sim"
	"github.com/frognano/frog/gotask"
	"github.com/frognano/frog/policy"
	"github.com/frognano/frog/policy/baseline"
	"github.com/frognano/frog/policy/neural"
	"github.com/frognano/frog/policy/openai"
	policysim "github.com/frognano/frog/policy/sim"
)

// remoteOptions are the flags that open a run to rollout workers.
type remoteOptions struct {
	Listen       string `json:"listen,omitempty"`
	Advertise    string `json:"advertise,omitempty"`
	LocalSlots   int    `json:"local_slots,omitempty"`
	AwaitWorkers int    `json:"await_workers,omitempty"`
}

func (r *remoteOptions) flags(f *pflag.FlagSet) {
	f.StringVar(&r.Listen, "listen", "", "open the run to rollout workers (frog worker --join) at HOST:PORT (port 0 picks one; the address is logged); remote runs trust their network: no TLS, no authentication")
	f.StringVar(&r.Advertise, "advertise", "", "the HOST:PORT workers dial, when it is not --listen's (needed with --listen 0.0.0.0:PORT)")
	f.IntVar(&r.LocalSlots, "local-slots", -1, "with --listen: how many of --concurrency episodes run in this process (0: all on workers; -1: as many as --concurrency)")
	f.IntVar(&r.AwaitWorkers, "await-workers", 0, "with --listen: admit no episode before this many workers have joined")
}

// remote is the run's actors.Remote, nil without --listen.
func (r remoteOptions) remote(concurrency int, envName string, envConfig any, codec actors.Codec, log func(addr string)) (*actors.Remote, error) {
	if r.Listen == "" {
		if r.Advertise != "" || r.LocalSlots != -1 || r.AwaitWorkers != 0 {
			return nil, usagef("--advertise, --local-slots and --await-workers need --listen")
		}
		return nil, nil
	}
	local := r.LocalSlots
	if local == -1 {
		local = concurrency
	}
	if local < 0 || local > concurrency {
		return nil, usagef("--local-slots %d: want 0 to --concurrency (%d), or -1", r.LocalSlots, concurrency)
	}
	if r.AwaitWorkers < 0 {
		return nil, usagef("--await-workers %d: want >= 0", r.AwaitWorkers)
	}
	cfg, err := json.Marshal(envConfig)
	if err != nil {
		return nil, err
	}
	return &actors.Remote{Listen: r.Listen, Advertise: r.Advertise, LocalSlots: local, Workers: r.AwaitWorkers,
		Build: version(), Codec: codec, Env: envName, EnvConfig: cfg, OnListen: log}, nil
}

// simWorkerEnv is what a worker of `frog sim --listen` plays: simulated
// sandboxes with the trainer's latencies and faults (RunSpec.env "sim").
type simWorkerEnv struct {
	Seed      uint64  `json:"seed"`
	TimeScale float64 `json:"time_scale"`
	FaultRate float64 `json:"fault_rate"`
}

// realWorkerEnv is what a worker of `frog train --listen` plays: real
// tasks in its own sandboxes and workspaces, judged by its own harness
// (RunSpec.env "real"). Locals are the trainer's --local directories: a
// worker on another machine needs them at the same paths.
type realWorkerEnv struct {
	Run     string         `json:"run"`
	Sandbox sandboxOptions `json:"sandbox"`
	Locals  []string       `json:"locals,omitempty"`
	NoCache bool           `json:"no_outcome_cache,omitempty"`
	NoServe bool           `json:"no_try_server,omitempty"`
	Restore int            `json:"restore_stmt,omitempty"`
}

// realCodec carries real tasks (their records) and the policy to workers:
// the built-in network's weights, or an LLM policy's configuration (the
// worker calls the model servers itself).
type realCodec struct {
	actors.JSONTasks
}

func (realCodec) EncodePolicy(p policy.Policy) (string, []byte, error) {
	switch p.(type) {
	case *openai.Policy:
		return openai.PolicyCodec{}.EncodePolicy(p)
	case *baseline.Policy:
		return baseline.PolicyCodec{}.EncodePolicy(p)
	}
	return neural.PolicyCodec{}.EncodePolicy(p)
}

func (realCodec) DecodePolicy(kind string, b []byte) (policy.Policy, error) {
	switch kind {
	case openai.PolicyKind:
		return openai.PolicyCodec{}.DecodePolicy(kind, b)
	case baseline.PolicyKind:
		return baseline.PolicyCodec{}.DecodePolicy(kind, b)
	}
	return neural.PolicyCodec{}.DecodePolicy(kind, b)
}

// remoteSeries hands out the Remote of each run of a command that plays
// several runs one after the other on one address (frog eval, a run a
// policy): each run but the last tells its workers to join the next, and
// a --listen port of 0 becomes the first run's port for the rest.
type remoteSeries struct {
	base       *actors.Remote
	runs, done int
	port       string
}

// next is the next run's Remote; nil without --listen.
func (s *remoteSeries) next() *actors.Remote {
	if s == nil || s.base == nil {
		return nil
	}
	r := *s.base
	s.done++
	r.More = s.done < s.runs
	if s.port != "" {
		host, _, _ := net.SplitHostPort(r.Listen)
		r.Listen = net.JoinHostPort(host, s.port)
	}
	if s.done == 1 {
		r.OnListen = func(addr string) {
			if _, port, err := net.SplitHostPort(addr); err == nil && s.base.Advertise == "" {
				s.port = port
			}
			s.base.OnListen(addr)
		}
	} else {
		r.OnListen = nil
	}
	return &r
}

// trainRemote is `frog train --listen`'s actors.Remote: its workers play
// real tasks with the run's policy, the built-in one or an LLM.
func (o *trainOptions) trainRemote(log zerolog.Logger) (*actors.Remote, error) {
	if o.Remote.Listen != "" && o.Replay.Env == envReplay {
		return nil, usagef("--listen plays real tasks on workers: not with --env replay")
	}
	return o.Remote.realRemote(o.Run.Concurrency, o.Name, o.Sandbox, o.TaskOpts, log)
}

// realRemote is the actors.Remote of a run of real tasks under --listen
// (nil without): its workers lay the tasks out, open sandboxes of the
// run's kind and judge with harnesses of their own.
func (r remoteOptions) realRemote(concurrency int, run string, sandbox sandboxOptions, t taskOptions, log zerolog.Logger) (*actors.Remote, error) {
	return r.remote(concurrency, "real", realWorkerEnv{Run: run, Sandbox: sandbox, Locals: t.Locals, NoCache: t.NoCache,
		NoServe: t.NoServe, Restore: t.RestoreList}, realCodec{}, listening(log))
}

// listening logs the address workers join at.
func listening(log zerolog.Logger) func(string) {
	return func(addr string) {
		log.Info().Str("address", addr).Msg("listening for rollout workers: frog worker --join " + addr)
	}
}

type workerOptions struct {
	Join        string
	Listen      string
	Advertise   string
	Name        string
	Slots       int
	JoinTimeout time.Duration
	JSON        bool
	// Build overrides the build the worker claims (tests of the refusal).
	Build string
	// Workspaces is where real tasks' workspaces are laid out here.
	Workspaces string
	Unsafe     bool
}

func newWorkerCmd(g *globals) *cobra.Command {
	o := &workerOptions{}
	c := &cobra.Command{
		Use:   "worker",
		Short: "Run episodes for a trainer on another process or machine (frog train, sim, eval or rollout --listen)",
		Long: `worker joins a run that listens for rollout workers (frog train --listen
ADDR, frog sim, frog eval or frog rollout --listen ADDR) and plays the
episodes it is sent: it hosts their actors, its own sandboxes (the kind the
trainer runs with), task workspaces (--workspaces) and harness caches, and a
replica of the policy (inference stays here; the policy is pulled once per
version), and sends the results back. The trainer admits episodes onto its
own slots and the workers' by their free capacity.

A worker of another frog build is refused at join. When a worker dies or
falls silent, the trainer re-admits its running episodes elsewhere, within
the run's retries; when the trainer dies or falls silent, the worker cancels
its episodes, closes their sandboxes and exits 1. At the end of the run it
exits 0 (frog eval plays a run a policy: the worker joins each in turn and
exits after the last). Interrupting it (Ctrl-C) tells the trainer it leaves:
its episodes are played again elsewhere.

A worker plays real tasks with the built-in policy or with an LLM (frog train
--policy openai, frog rollout: the worker calls the model servers itself,
with the API key in its own environment variable that the trainer's
--api-key-env names), and frog sim's simulated sandboxes and agent
(docs/cluster.md).`,
		Example: `  frog train --listen 127.0.0.1:7450 --concurrency 8 --local-slots 0 --await-workers 2 --sandbox process
  frog worker --join 127.0.0.1:7450 --slots 4
  frog sim --listen 127.0.0.1:7450 --local-slots 0 --await-workers 2 --episodes 200000 --concurrency 2000
  frog worker --join 127.0.0.1:7450 --slots 1000
  frog worker --join trainer.lan:7450 --listen 0.0.0.0:7451 --advertise worker1.lan:7451 --slots 1000`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return runWorker(c.Context(), g, o) },
	}
	f := c.Flags()
	f.StringVar(&o.Join, "join", "", "the trainer's address, HOST:PORT (its --listen or --advertise)")
	f.StringVar(&o.Listen, "listen", "127.0.0.1:0", "this worker's HOST:PORT, which the trainer connects back to (port 0 picks one)")
	f.StringVar(&o.Advertise, "advertise", "", "the HOST:PORT the trainer dials, when it is not --listen's (needed with --listen 0.0.0.0:PORT)")
	f.StringVar(&o.Name, "name", "", "the worker's name in the trainer's logs and summary (default HOST:PID)")
	f.IntVar(&o.Slots, "slots", 1000, "most episodes this worker runs at once")
	f.DurationVar(&o.JoinTimeout, "join-timeout", time.Minute, "how long to keep asking to join before giving up")
	f.BoolVar(&o.JSON, "json", false, "print the worker's summary as one JSON object")
	f.StringVar(&o.Workspaces, "workspaces", gotask.DefaultWorkspaceRoot(), "directory of the tasks' workspace templates on this worker (frog train --listen's real tasks)")
	unsafeFlag(f, &o.Unsafe)
	f.StringVar(&o.Build, "build", "", "claim this build instead of frog's own (to test the trainer's refusal)")
	_ = f.MarkHidden("build")
	return c
}

func runWorker(ctx context.Context, g *globals, o *workerOptions) error {
	if o.Join == "" {
		return usagef("frog worker needs --join HOST:PORT, the trainer's address")
	}
	if o.Slots < 1 || o.Slots > actors.MaxConcurrency {
		return usagef("--slots %d: want 1 to %d", o.Slots, actors.MaxConcurrency)
	}
	log, err := g.logger()
	if err != nil {
		return err
	}
	if o.Name == "" {
		host, _ := os.Hostname()
		o.Name = fmt.Sprintf("%s:%d", host, os.Getpid())
	}
	if o.Build == "" {
		o.Build = version()
	}
	we := &workerEnv{o: o, log: log}
	defer we.close()
	sum, err := actors.Work(ctx, actors.WorkerConfig{Join: o.Join, Listen: o.Listen, Advertise: o.Advertise, Name: o.Name,
		Slots: o.Slots, Build: o.Build, JoinTimeout: o.JoinTimeout},
		actors.WorkerDeps{Codec: we, Open: we.open, Log: log})
	var cfgErr *actors.ConfigError
	if errors.As(err, &cfgErr) {
		return usagef("%v", err)
	}
	if o.JSON {
		if jerr := json.NewEncoder(g.stdout).Encode(sum); jerr != nil {
			return errors.Join(err, jerr)
		}
	} else {
		fmt.Fprintf(g.stdout, "worker %s: %d joins, %d episodes (%d completed, %d failed_infra, %d cancelled), %d policy versions pulled; ended: %s\n",
			o.Name, sum.Joins, sum.Episodes, sum.Completed, sum.FailedInfra, sum.Cancelled, sum.PolicyPulls, sum.Ended)
	}
	return err
}

// workerEnv is what a worker plays, once the trainer has said what (its
// open), and the codec that goes with it: the simulated agent's for frog
// sim, the built-in policy and real tasks for frog train.
type workerEnv struct {
	o       *workerOptions
	log     zerolog.Logger
	codec   actors.Codec
	release func()
}

// open opens what a trainer's run names for its workers (actors.WorkerDeps.Open).
func (w *workerEnv) open(name string, config []byte) (env.Provider, env.Harness, error) {
	switch name {
	case "sim":
		var c simWorkerEnv
		if err := json.Unmarshal(config, &c); err != nil {
			return nil, nil, fmt.Errorf("sim environment: %w", err)
		}
		cfg := envsim.DefaultConfig()
		cfg.Seed, cfg.TimeScale, cfg.FaultRate = c.Seed, c.TimeScale, c.FaultRate
		p, err := envsim.New(cfg)
		w.codec = policysim.Codec{Oracle: policysim.NewOracle()}
		return p, nil, err
	case "real":
		var c realWorkerEnv
		if err := json.Unmarshal(config, &c); err != nil {
			return nil, nil, fmt.Errorf("real environment: %w", err)
		}
		c.Sandbox.Unsafe = c.Sandbox.Unsafe || w.o.Unsafe
		topts := taskOptions{Workspaces: w.o.Workspaces, Locals: c.Locals, NoCache: c.NoCache, NoServe: c.NoServe, RestoreList: c.Restore}
		tenv, prov, release, err := openTaskEnv(context.Background(), topts, sandboxSpec{sandboxOptions: c.Sandbox, Run: c.Run, Concurrency: w.o.Slots}, w.log)
		if err != nil {
			return nil, nil, err
		}
		w.codec, w.release = realCodec{}, release
		return prov, tenv.Harness, nil
	}
	return nil, nil, fmt.Errorf("environment %q: this frog's workers play sim and real", name)
}

func (w *workerEnv) close() {
	if w.release != nil {
		w.release()
	}
}

// The codec is the environment's: the worker decodes nothing before
// open has returned (actors.WorkerDeps.Codec).
func (w *workerEnv) EncodePolicy(p policy.Policy) (string, []byte, error) {
	return w.get().EncodePolicy(p)
}
func (w *workerEnv) DecodePolicy(kind string, b []byte) (policy.Policy, error) {
	return w.get().DecodePolicy(kind, b)
}
func (w *workerEnv) EncodeTask(t *env.Task) ([]byte, []byte, error) { return w.get().EncodeTask(t) }
func (w *workerEnv) DecodeTask(rec, or []byte) (*env.Task, error)   { return w.get().DecodeTask(rec, or) }

func (w *workerEnv) get() actors.Codec {
	if w.codec == nil {
		return realCodec{}
	}
	return w.codec
}

// printRemote prints a remote run's workers and what crossed each link.
func printRemote(w io.Writer, rs *actors.RemoteStats) {
	if rs == nil {
		return
	}
	fmt.Fprintf(w, "remote\t%s\t%d workers joined, %d refused, %d lost\t%d episodes re-admitted\t%d episodes here\n",
		rs.Address, rs.Joined, rs.Refused, rs.Lost, rs.Readmitted, rs.Local)
	for _, wk := range rs.Workers {
		per := func(n int64) string {
			if wk.Done == 0 {
				return "-"
			}
			return fmt.Sprintf("%.0f", float64(n)/float64(wk.Done))
		}
		lost := ""
		if wk.Lost != "" {
			lost = "lost: " + wk.Lost
		}
		fmt.Fprintf(w, "worker %s\t%d slots, %d episodes, %d results\tmessages %d out, %d in\tbytes a result: %s out, %s in\t%s\n",
			wk.Name, wk.Slots, wk.Episodes, wk.Done, wk.MsgsOut, wk.MsgsIn, per(wk.BytesOut), per(wk.BytesIn), lost)
	}
}
