package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/env/docker"
	"github.com/frognano/frog/env/process"
	envsim "github.com/frognano/frog/env/sim"
	"github.com/frognano/frog/gotask"
	"github.com/frognano/frog/run/taskenv"
)

// sandboxOptions choose and shape the sandbox backend: the flags of
// taskenv.SandboxOptions, which config.json records.
type sandboxOptions taskenv.SandboxOptions

// unsafeUsage is --unsafe-process-sandbox's help.
const unsafeUsage = "where process sandboxes cannot contain their commands (bubblewrap missing, or the kernel refuses it), run them uncontained instead of refusing: " +
	"test code then runs as you, reads and writes what you can (your files, the task templates and caches, so one episode can change later verdicts) and reaches the network and the Docker socket; for code you trust only"

// unsafeFlag adds --unsafe-process-sandbox to f.
func unsafeFlag(f *pflag.FlagSet, unsafe *bool) {
	f.BoolVar(unsafe, "unsafe-process-sandbox", false, unsafeUsage)
}

func (s *sandboxOptions) flags(f *pflag.FlagSet, def string) {
	f.StringVar(&s.Kind, "sandbox", def, "sandbox backend: sim, docker, process (each command in a bubblewrap sandbox of its own), or auto (docker when a daemon answers, else process)")
	f.StringVar(&s.Image, "image", "", "sandbox image for --sandbox docker (default frog-sandbox:<version>, built if missing)")
	f.IntVar(&s.Pool, "pool", 8, "warm containers kept started ahead of demand (docker)")
	f.IntVar(&s.Reuse, "reuse", 0, fmt.Sprintf("episodes one container serves, one after the other, reset between them: no process left, workspace, /tmp and /dev/shm emptied (docker; 0: the default, %d; 1: a fresh container for each episode)", docker.DefaultConfig().Reuse))
	unsafeFlag(f, &s.Unsafe)
}

func (s *sandboxOptions) validate() error {
	if err := checkSandbox(s.Kind, "sim", "docker", "process", "auto"); err != nil {
		return err
	}
	return s.checkCounts()
}

// checkCounts is the usage error for a negative --pool or --reuse.
func (s *sandboxOptions) checkCounts() error {
	if s.Pool < 0 {
		return usagef("--pool %d: want >= 0", s.Pool)
	}
	if s.Reuse < 0 {
		return usagef("--reuse %d: want >= 0 episodes a container", s.Reuse)
	}
	return nil
}

// checkSandbox is the usage error for a --sandbox value that is not among
// the backends a command offers.
func checkSandbox(kind string, kinds ...string) error {
	if slices.Contains(kinds, kind) {
		return nil
	}
	last := len(kinds) - 1
	return usagef("--sandbox %q: want %s or %s", kind, strings.Join(kinds[:last], ", "), kinds[last])
}

// sandboxSpec is what a sandbox backend is opened with: the flags, the
// run's name (containers are labelled with it), how many sandboxes may be
// open at once, and for the simulated backend its seed and model.
type sandboxSpec struct {
	sandboxOptions
	Run         string
	Concurrency int
	Seed        uint64
	TimeScale   float64
	FaultRate   float64
	// Workspaces lays out real tasks' workspaces; nil for runs of
	// simulated tasks (and validation, which copies modules itself).
	Workspaces *gotask.Workspaces
	// Validation says the sandboxes validate synthesized tasks: no agent's
	// code runs in them, and a process sandbox's commands may share one
	// build cache layer (process.Config.SandboxLayer).
	Validation bool
}

// openSandboxes opens the backend spec.Kind names; it returns the provider
// and what must be called to release it. Backends are wired here and
// nowhere else.
func openSandboxes(ctx context.Context, spec sandboxSpec, log zerolog.Logger) (env.Provider, func(), error) {
	switch spec.Kind {
	case "sim":
		cfg := envsim.DefaultConfig()
		cfg.Seed, cfg.TimeScale, cfg.FaultRate = spec.Seed, spec.TimeScale, spec.FaultRate
		p, err := envsim.New(cfg)
		return p, func() {}, err
	case "docker":
		return openDocker(ctx, spec, log)
	case "process":
		return openProcess(spec, log)
	case "auto":
		p, release, err := openDocker(ctx, spec, log)
		if errors.Is(err, docker.ErrNoDaemon) {
			log.Warn().Err(err).Msg("no Docker daemon answers; falling back to process sandboxes")
			return openProcess(spec, log)
		}
		return p, release, err
	}
	return nil, nil, fmt.Errorf("unknown sandbox backend %q", spec.Kind)
}

func openDocker(ctx context.Context, spec sandboxSpec, log zerolog.Logger) (env.Provider, func(), error) {
	cli, err := docker.NewClient(ctx)
	if err != nil {
		return nil, nil, err
	}
	cfg := docker.DefaultConfig()
	cfg.Run = spec.Run
	if spec.Workspaces != nil {
		cfg.Workspaces, cfg.WorkspaceRoot = spec.Workspaces, spec.Workspaces.Root()
	}
	cfg.PoolSize = min(spec.Pool, spec.Concurrency)
	if spec.Reuse > 0 {
		cfg.Reuse = spec.Reuse
	}
	if spec.Image != "" {
		cfg.Image = spec.Image
	} else {
		log.Info().Str("image", docker.DefaultImage).Msg("ensuring the sandbox image")
		if cfg.Image, err = docker.EnsureImage(ctx, cli, docker.BuildOptions{}); err != nil {
			cli.Close()
			return nil, nil, fmt.Errorf("sandbox image: %w", err)
		}
	}
	p, err := docker.New(ctx, cli, cfg, log.With().Str("component", "docker").Logger())
	if err != nil {
		cli.Close()
		return nil, nil, err
	}
	release := func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		if err := p.Close(ctx); err != nil {
			log.Error().Err(err).Msg("close docker provider")
		}
		cli.Close()
	}
	return env.Limit(p, spec.Concurrency), release, nil
}

// openProcess opens process sandboxes that contain their commands; where
// they cannot, it refuses, or with spec.Unsafe warns and opens them
// uncontained.
func openProcess(spec sandboxSpec, log zerolog.Logger) (env.Provider, func(), error) {
	cfg := process.DefaultConfig()
	if spec.Workspaces != nil {
		cfg.Workspaces = spec.Workspaces
	}
	cfg.SandboxLayer = spec.Validation
	plog := log.With().Str("component", "process").Logger()
	p, err := process.New(cfg, plog)
	if errors.Is(err, process.ErrUncontained) {
		if !spec.Unsafe {
			return nil, nil, fmt.Errorf("%w; install bubblewrap (Debian: apt-get install bubblewrap; make deps does), "+
				"use --sandbox docker, or pass --unsafe-process-sandbox to run tests uncontained (for code you trust only)", err)
		}
		log.Warn().Err(err).Msg("--unsafe-process-sandbox: commands run uncontained")
		cfg.Contain = false
		p, err = process.New(cfg, plog) // warns how weak that is
	}
	if err != nil {
		return nil, nil, err
	}
	return p, func() {}, nil
}

// taskOptions are the flags of commands that play real tasks
// (taskenv.Options).
type taskOptions taskenv.Options

func (t *taskOptions) flags(f *pflag.FlagSet) {
	f.StringVar(&t.Workspaces, "workspaces", gotask.DefaultWorkspaceRoot(), "directory of the tasks' workspace templates (each task's module with its bug), made once and reused")
	f.StringSliceVar(&t.Locals, "local", nil, "a local module directory that stored tasks were made from (repeatable); tasks of modules with a version are fetched through the module proxy")
	f.BoolVar(&t.NoCache, "no-outcome-cache", false, "run every test again instead of answering repeated states from the outcome cache")
	f.IntVar(&t.RestoreList, "restore-stmt", 0, "add up to this many restore-stmt candidates to a candidate list (a removed statement put back, borrowed from the package; docs/episodes.md); 0 leaves them out")
	f.BoolVar(&t.NoServe, "no-try-server", false, "start a test process for every try instead of serving an episode's tries from one (process sandboxes)")
}

// openTaskEnv opens the sandboxes spec names, laying out real tasks from
// o.Workspaces (taskenv.Open). The func releases the sandboxes.
func openTaskEnv(ctx context.Context, o taskOptions, spec sandboxSpec, log zerolog.Logger) (*taskenv.Env, env.Provider, func(), error) {
	sb := taskenv.Sandboxes{SandboxOptions: taskenv.SandboxOptions(spec.sandboxOptions), Run: spec.Run, Concurrency: spec.Concurrency}
	return taskenv.Open(ctx, taskenv.Options(o), sb, sandboxOpener(spec, log), log)
}

// sandboxOpener opens the sandboxes of a task env (taskenv.Opener) with
// openSandboxes: those it is asked for, with the rest of base (the
// simulated backend's model, Validation).
func sandboxOpener(base sandboxSpec, log zerolog.Logger) taskenv.Opener {
	return func(ctx context.Context, s taskenv.Sandboxes) (env.Provider, func(), error) {
		spec := base
		spec.sandboxOptions, spec.Run, spec.Concurrency, spec.Workspaces = sandboxOptions(s.SandboxOptions), s.Run, s.Concurrency, s.Workspaces
		return openSandboxes(ctx, spec, log)
	}
}

func newImageCmd(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "image",
		Short: "Manage the sandbox image",
	}
	var tag string
	var force bool
	build := &cobra.Command{
		Use:   "build",
		Short: "Build the sandbox image frog-sandbox:<version> with no registry",
		Long: `build makes frog's sandbox image FROM scratch on the local Docker daemon:
frog's in-container agent, compiled by the go command (its modules come from
the module cache or the module proxy), which is also the image's shell and
tools, and the mount points for the host's Go toolchain, module cache and a
shared build cache. No host package is needed and nothing is pulled. It is a
no-op when the image exists, unless --force.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cli, err := docker.NewClient(c.Context())
			if err != nil {
				return err
			}
			defer cli.Close()
			var progress io.Writer
			if g.logLevel == "debug" || g.logLevel == "trace" {
				progress = g.stderr
			}
			img, err := docker.BuildImage(c.Context(), cli, docker.BuildOptions{Tag: tag, Force: force, Progress: progress})
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(g.stdout, img)
			return err
		},
	}
	build.Flags().StringVar(&tag, "tag", "", "image tag (default "+docker.DefaultImage+")")
	build.Flags().BoolVar(&force, "force", false, "rebuild even when the image exists")
	c.AddCommand(build)
	return c
}

func newGCCmd(g *globals) *cobra.Command {
	var o docker.ReapOptions
	var asJSON bool
	c := &cobra.Command{
		Use:   "gc",
		Short: "Remove the sandboxes that dead frog runs left behind",
		Long: `gc removes the containers labelled frog.run whose frog process is gone (killed,
crashed, or from before a reboot). Containers of live runs, and of runs on
other hosts, are kept unless --force. frog also does this whenever it opens
Docker sandboxes.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cli, err := docker.NewClient(c.Context())
			if err != nil {
				return err
			}
			defer cli.Close()
			rep, err := docker.Reap(c.Context(), cli, o)
			if err != nil {
				return err
			}
			if asJSON {
				return json.NewEncoder(g.stdout).Encode(rep)
			}
			verb := "removed"
			if o.DryRun {
				verb = "would remove"
			}
			_, err = fmt.Fprintf(g.stdout, "%s %d containers; kept %d of live runs and %d of other hosts\n", verb, len(rep.Removed), rep.Alive, rep.Foreign)
			return err
		},
	}
	f := c.Flags()
	f.StringVar(&o.Run, "run", "", "only the containers of this run")
	f.BoolVar(&o.Force, "force", false, "also remove containers of live runs and of other hosts")
	f.BoolVar(&o.DryRun, "dry-run", false, "list what would be removed; remove nothing")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	return c
}

func newBenchSandboxCmd(g *globals) *cobra.Command {
	var o docker.BenchOptions
	var asJSON bool
	var image string
	c := &cobra.Command{
		Use:   "sandbox",
		Short: "Benchmark Docker sandboxes: cold start, warm acquire, exec, concurrency",
		Long: `sandbox measures, in one run on the local daemon: cold start p50/p95 against
'docker run --rm <image> true' through the CLI; warm-pool acquire p50/p95;
command exec p50/p95 through frog's in-container agent against 'docker exec';
and the most concurrent containers held without errors (up to --max-concurrent).`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			ctx := c.Context()
			cli, err := docker.NewClient(ctx)
			if err != nil {
				return err
			}
			defer cli.Close()
			cfg := docker.DefaultConfig()
			if image != "" {
				cfg.Image = image
			} else if cfg.Image, err = docker.EnsureImage(ctx, cli, docker.BuildOptions{}); err != nil {
				return err
			}
			res, err := docker.Bench(ctx, cli, cfg, o)
			if err != nil {
				return err
			}
			if asJSON {
				return json.NewEncoder(g.stdout).Encode(res)
			}
			data, err := json.MarshalIndent(res, "", "  ")
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintf(tw, "%s\n", data)
			return tw.Flush()
		},
	}
	f := c.Flags()
	f.IntVar(&o.Samples, "samples", 20, "samples of each start measurement")
	f.IntVar(&o.ExecSamples, "exec-samples", 200, "samples of each command measurement through the agent")
	f.IntVar(&o.MaxConcurrent, "max-concurrent", 64, "containers the concurrency test tries to hold at once")
	f.StringVar(&image, "image", "", "image (default frog-sandbox:<version>, built if missing)")
	f.BoolVar(&asJSON, "json", false, "print the result as one JSON object")
	return c
}
