package docker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/client"
	"github.com/rs/zerolog"

	"github.com/frognano/frog/env"
)

// Provider opens sandboxes, one container each, from a warm pool when it has
// one ready and by a cold start otherwise. It is safe for concurrent use.
// It owns the pool's goroutines; Close stops them and removes every
// container it still holds.
type Provider struct {
	api dockerAPI
	cfg Config
	log zerolog.Logger

	mu     sync.Mutex
	live   map[*Sandbox]struct{}
	pools  map[string]*pool
	closed bool
	done   chan struct{}
	wg     sync.WaitGroup
	// life is cancelled by Close: the pool's container starts run under it.
	life     context.Context
	stopLife context.CancelFunc

	opened, closedN atomic.Int64
	faultsMu        sync.Mutex
	faults          map[string]int64
}

var (
	_ env.Provider      = (*Provider)(nil)
	_ env.ProviderStats = (*Provider)(nil)
)

// New checks the daemon and the image, reaps the containers of dead frog
// runs when cfg.Reap is set, and starts filling the warm pool. cli is
// usually NewClient's; the caller keeps owning it (close it after the
// provider). Faults of the daemon wrap env.ErrInfra.
func New(ctx context.Context, cli *client.Client, cfg Config, log zerolog.Logger) (*Provider, error) {
	return newProvider(ctx, cli, cfg, log)
}

func newProvider(ctx context.Context, api dockerAPI, cfg Config, log zerolog.Logger) (*Provider, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if _, err := api.Ping(ctx); err != nil {
		return nil, infra(fmt.Errorf("%w: %w", ErrNoDaemon, err), "ping")
	}
	if err := checkRoot(cfg); err != nil {
		return nil, err
	}
	if err := checkImage(ctx, api, cfg.Image, cfg.PullTimeout); err != nil {
		return nil, err
	}
	p := &Provider{
		api:    api,
		cfg:    cfg,
		log:    log.With().Str("component", "docker").Logger(),
		live:   map[*Sandbox]struct{}{},
		pools:  map[string]*pool{},
		done:   make(chan struct{}),
		faults: map[string]int64{},
	}
	p.life, p.stopLife = context.WithCancel(context.WithoutCancel(ctx))
	if err := p.warmCache(ctx); err != nil {
		p.log.Warn().Err(err).Str("volume", cfg.BuildCacheVolume).Msg("warming the shared build cache failed; sandboxes compile what it lacks")
	}
	if cfg.Reap {
		rep, err := reap(ctx, api, ReapOptions{})
		if err != nil {
			p.log.Warn().Err(err).Msg("reap of dead runs failed")
		} else if len(rep.Removed) > 0 {
			p.log.Info().Int("removed", len(rep.Removed)).Msg("reaped containers of dead runs")
		}
	}
	if cfg.PoolSize > 0 {
		p.pool(cfg.Image)
	}
	return p, nil
}

// Open returns a started container with a ready agent: an idle one from the
// warm pool when there is one (new, or reset after an earlier episode: see
// Config.Reuse), else one started now. A pooled container is
// renamed after its episode (its frog.episode label says "pool").
//
// For a real task (opts.Task.Real()) Open first asks Config.Workspaces for
// the task's template, then has the agent copy it into the workspace (see
// Layout). A real task without Workspaces is an error, never an empty
// workspace. Errors of Template keep their category: a machine fault wraps
// env.ErrInfra, a task that cannot be laid out does not (retrying it would
// not help; an episode runner that counts every error at Open as the
// harness's still records it as an infrastructure failure, after its
// retries, never as a reward). The same holds for a template outside
// Config.WorkspaceRoot and one whose entries the agent refuses (a link
// leaving it, a device); a fault of the agent or of its file systems while
// copying wraps env.ErrInfra.
func (p *Provider) Open(ctx context.Context, opts env.OpenOptions) (env.Sandbox, error) {
	var tmpl taskTemplate
	if opts.Task != nil && opts.Task.Real() {
		var err error
		// Before taking a container: preparing a template the first time
		// may take long, and a task that cannot be laid out costs none.
		if tmpl, err = p.template(ctx, opts.Task); err != nil {
			return nil, err
		}
	}
	s, err := p.acquire(ctx, opts)
	if err != nil {
		return nil, err
	}
	if tmpl.task != nil {
		if err := s.layout(ctx, tmpl); err != nil {
			return nil, errors.Join(err, s.Close(ctx))
		}
	}
	return s, nil
}

// acquire takes a container from the warm pool, or starts one.
func (p *Provider) acquire(ctx context.Context, opts env.OpenOptions) (*Sandbox, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, env.Infra(errors.New("docker: provider closed"))
	}
	pl := p.pools[p.cfg.Image]
	p.mu.Unlock()
	if pl != nil {
		if s := pl.take(); s != nil {
			p.rename(ctx, s, opts)
			p.adopt(s)
			return s, nil
		}
		pl.coldStarts.Add(1)
	}
	run := opts.Run
	if run == "" {
		run = p.cfg.Run
	}
	s, err := p.create(ctx, p.cfg.Image, run, strconv.FormatUint(opts.Episode, 10), strconv.Itoa(opts.Attempt), episodeName(run, opts))
	if err != nil {
		return nil, err
	}
	p.adopt(s)
	if pl != nil {
		pl.lend(s)
	}
	return s, nil
}

func episodeName(run string, opts env.OpenOptions) string {
	return fmt.Sprintf("frog-%s-e%d-a%d-%s", sanitize(run), opts.Episode, opts.Attempt, randHex(3))
}

// rename gives a pooled container its episode's name, best effort (the name
// is for people reading `docker ps`; nothing depends on it).
func (p *Provider) rename(ctx context.Context, s *Sandbox, opts env.OpenOptions) {
	run := opts.Run
	if run == "" {
		run = p.cfg.Run
	}
	name := episodeName(run, opts)
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := p.api.ContainerRename(rctx, s.id, name); err != nil {
		p.log.Debug().Err(err).Str("container", s.name).Msg("rename of pooled container failed")
		return
	}
	s.name = name
}

func (p *Provider) adopt(s *Sandbox) {
	p.mu.Lock()
	p.live[s] = struct{}{}
	p.mu.Unlock()
	p.opened.Add(1)
}

// release forgets a closed sandbox.
func (p *Provider) release(s *Sandbox) {
	p.mu.Lock()
	_, ok := p.live[s]
	delete(p.live, s)
	p.mu.Unlock()
	if ok {
		p.closedN.Add(1)
	}
}

func (p *Provider) fault(kind string) {
	p.faultsMu.Lock()
	p.faults[kind]++
	p.faultsMu.Unlock()
}

// Stats counts the sandboxes handed out and the faults seen, by kind
// (create, start, attach, hello, agent, remove).
func (p *Provider) Stats() env.SandboxStats {
	o, c := p.opened.Load(), p.closedN.Load()
	p.faultsMu.Lock()
	f := maps.Clone(p.faults)
	p.faultsMu.Unlock()
	return env.SandboxStats{Opened: o, Closed: c, Live: o - c, Faults: f}
}

// create makes, starts and attaches to one container and waits for its
// agent's hello, all within cfg.StartTimeout. On failure it removes what it
// made.
func (p *Provider) create(ctx context.Context, img, run, episode, attempt, name string) (*Sandbox, error) {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.StartTimeout)
	defer cancel()
	cfg, hc := p.containerConfig(img, run, episode, attempt)
	// The daemon finishes a create whose request was cancelled, and its
	// container would leak: create under a detached, bounded context.
	cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), p.cfg.StartTimeout)
	defer ccancel()
	created, err := p.api.ContainerCreate(cctx, cfg, hc, nil, nil, name)
	if err != nil {
		p.fault("create")
		return nil, infra(err, "create container for %s", img)
	}
	id := created.ID
	fail := func(kind string, err error) (*Sandbox, error) {
		p.fault(kind)
		rerr := p.remove(ctx, id)
		return nil, errors.Join(infra(err, "%s container %.12s", kind, id), rerr)
	}
	// Attach before start: nothing the agent writes is lost.
	hj, err := p.api.ContainerAttach(ctx, id, container.AttachOptions{Stream: true, Stdin: true, Stdout: true, Stderr: true})
	if err != nil {
		return fail("attach", err)
	}
	conn := newAgentConn(hj)
	if err := p.api.ContainerStart(ctx, id, container.StartOptions{}); err != nil {
		conn.close()
		return fail("start", err)
	}
	if err := conn.waitHello(ctx); err != nil {
		conn.close()
		if t := strings.TrimSpace(conn.stderr.String()); t != "" {
			err = fmt.Errorf("%w; agent stderr: %s", err, t)
		}
		return fail("hello", err)
	}
	return &Sandbox{p: p, id: id, name: name, conn: conn, uses: 1}, nil
}

func (p *Provider) containerConfig(img, run, episode, attempt string) (*container.Config, *container.HostConfig) {
	c := p.cfg
	labels := maps.Clone(identity())
	labels[LabelRun] = run
	labels[LabelEpisode] = episode
	labels[LabelAttempt] = attempt
	cfg := &container.Config{
		Image:        img,
		User:         c.User,
		Cmd:          agentCmd(c),
		WorkingDir:   Workspace,
		Labels:       labels,
		OpenStdin:    true,
		AttachStdin:  true,
		AttachStdout: true,
		AttachStderr: true,
	}
	uid, gid, _ := strings.Cut(c.User, ":")
	if gid == "" {
		gid = uid
	}
	tmpfs := func(size int64, mode string, owned bool) string {
		o := "rw,exec,nosuid,nodev,mode=" + mode
		if size > 0 {
			o += ",size=" + strconv.FormatInt(size, 10)
		}
		if owned {
			o += ",uid=" + uid + ",gid=" + gid
		}
		return o
	}
	init := true
	hc := &container.HostConfig{
		NetworkMode:    container.NetworkMode(c.Network),
		CapDrop:        []string{"ALL"},
		ReadonlyRootfs: c.ReadOnlyRootfs,
		Tmpfs: map[string]string{
			Workspace: tmpfs(c.WorkspaceBytes, "0755", true),
			"/tmp":    tmpfs(c.TmpBytes, "1777", false),
		},
		Init:      &init,
		LogConfig: container.LogConfig{Type: "none"},
	}
	if c.NoNewPrivileges {
		hc.SecurityOpt = []string{"no-new-privileges"}
	}
	if c.Memory > 0 {
		hc.Memory, hc.MemorySwap = c.Memory, c.Memory
	}
	if c.CPUs > 0 {
		hc.NanoCPUs = int64(c.CPUs * 1e9)
	}
	if c.Pids > 0 {
		pids := c.Pids
		hc.PidsLimit = &pids
	}
	if c.GoRoot != "" {
		hc.Mounts = append(hc.Mounts, mount.Mount{Type: mount.TypeBind, Source: c.GoRoot, Target: "/usr/local/go", ReadOnly: true})
	}
	if c.GoModCache != "" {
		hc.Mounts = append(hc.Mounts, mount.Mount{Type: mount.TypeBind, Source: c.GoModCache, Target: "/go/pkg/mod", ReadOnly: true})
	}
	if c.BuildCacheVolume != "" {
		// Read-only: the harness alone writes it (warmCache).
		hc.Mounts = append(hc.Mounts, mount.Mount{Type: mount.TypeVolume, Source: c.BuildCacheVolume, Target: "/cache", ReadOnly: true})
	}
	if c.WorkspaceRoot != "" {
		// Every container, pooled ones too: the pool is filled before the
		// tasks are known. Read-only: templates are shared by every episode.
		hc.Mounts = append(hc.Mounts, mount.Mount{Type: mount.TypeBind, Source: c.WorkspaceRoot, Target: TasksDir, ReadOnly: true})
	}
	return cfg, hc
}

// Where the build cache lives in a sandbox: the shared volume's cache, and
// the directory where the agent makes each command's own layer.
const (
	sharedCache = "/cache/go-build"
	layersDir   = "/tmp/.frog-gocache"
)

// agentCmd is the agent's command line: each command gets a build cache
// layer of its own under layersDir, over the shared cache when there is one.
func agentCmd(c Config) []string {
	cmd := []string{AgentPath, "-root", Workspace, "-gocache-layers", layersDir}
	if c.BuildCacheVolume != "" {
		cmd = append(cmd, "-gocache-shared", sharedCache)
	}
	if c.WorkspaceRoot != "" {
		cmd = append(cmd, "-tasks", TasksDir)
	}
	return cmd
}

// Close stops the warm pool and removes every container the provider still
// holds: the pool's and those of sandboxes not closed yet (which then fail
// with env.ErrClosed). It is idempotent and runs under a detached context.
func (p *Provider) Close(ctx context.Context) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	close(p.done)
	p.stopLife()
	pools := make([]*pool, 0, len(p.pools))
	for _, pl := range p.pools {
		pools = append(pools, pl)
	}
	live := make([]*Sandbox, 0, len(p.live))
	for s := range p.live {
		live = append(live, s)
	}
	p.mu.Unlock()
	p.wg.Wait()
	var idle []*Sandbox
	for _, pl := range pools {
		idle = append(idle, pl.drain()...)
	}
	var (
		errMu sync.Mutex
		errs  []error
		wg    sync.WaitGroup
		sem   = make(chan struct{}, 8)
	)
	closeOne := func(s *Sandbox) {
		defer wg.Done()
		sem <- struct{}{}
		defer func() { <-sem }()
		s.closed.Store(true)
		s.conn.close()
		if err := p.remove(ctx, s.id); err != nil {
			errMu.Lock()
			errs = append(errs, err)
			errMu.Unlock()
		}
		p.release(s)
	}
	for _, s := range append(idle, live...) {
		wg.Add(1)
		go closeOne(s)
	}
	wg.Wait()
	return errors.Join(errs...)
}

func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			b[i] = '_'
		}
	}
	if len(b) > 40 {
		b = b[:40]
	}
	if len(b) == 0 {
		return "run"
	}
	return string(b)
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
