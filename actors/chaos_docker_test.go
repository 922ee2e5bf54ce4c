package actors

import (
	"context"
	mrand "math/rand/v2"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/env/docker"
	"github.com/frognano/frog/env/docker/dockertest"
	"github.com/frognano/frog/env/envtest"
)

// TestChaosDocker runs episodes in real Docker sandboxes while another
// process (the docker CLI, driven by a goroutine of the test) kills about one
// in five of the running episodes' containers at random moments. No episode
// may be lost, every attempt whose container was killed under it must end as
// an infrastructure fault (retried, or recorded as failed_infra after the
// last attempt), the learner must never learn from such an attempt, and
// nothing may be left on the daemon. The simulated agent takes 300 ms to
// choose each action, as a model would take a while, so that a container
// spends most of its life under a running attempt.
//
// It needs a Docker daemon: it skips, saying so, when none answers, except
// under CI=true, where it fails.
func TestChaosDocker(t *testing.T) {
	const (
		episodes    = 96
		concurrency = 16
		killShare   = 0.2
	)
	dockerCLI(t)
	run := dockertest.RunName(t)
	dcfg := docker.DefaultConfig()
	dcfg.Run, dcfg.PoolSize = run, 8
	// A container per attempt: the killer picks its victims among the
	// containers as they appear, one attempt each (env/docker's TestReuse
	// covers containers that serve several episodes).
	dcfg.Reuse = 1
	prov := dockertest.Provider(t, dcfg)
	// The deadline only guards against a hang: alone here the run takes
	// about 80 s, but CI runs it beside other packages' Docker tests (one
	// such run took 4 minutes for 150 episodes), so it is generous.
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()

	deps, _, _ := simDeps(t, simSetup{seed: 13})
	clock := &opClock{think: 300 * time.Millisecond, last: map[[2]uint64]time.Time{}}
	ledger := newLedger(env.Limit(prov, concurrency))
	clock.Provider = ledger
	rec := &recordingLearner{Learner: deps.Learner}
	deps.Provider, deps.Learner = clock, rec
	cfg := testConfig(episodes, concurrency)
	cfg.Run = run

	k := &killer{run: run, share: killShare, maxDelay: 400 * time.Millisecond,
		rng: mrand.New(mrand.NewPCG(13, 0xc4a05)), seen: map[string]bool{}}
	kctx, stopKiller := context.WithCancel(ctx)
	killerDone := make(chan struct{})
	go func() {
		defer close(killerDone)
		k.loop(kctx)
	}()
	start := time.Now()
	sum, runErr := Run(ctx, cfg, deps)
	elapsed := time.Since(start)
	stopKiller()
	<-killerDone
	// Close before the checks: what the provider leaves is checked below.
	if err := prov.Close(context.Background()); err != nil {
		t.Errorf("close provider: %v", err)
	}
	if runErr != nil {
		t.Fatalf("run: %v", runErr)
	}
	if ctx.Err() != nil {
		t.Fatalf("the run did not finish in time: %+v", sum.Episodes)
	}

	checkAccounting(t, sum, episodes)
	e := sum.Episodes
	if e.Cancelled != 0 {
		t.Errorf("cancelled %d episodes in a run nobody cancelled", e.Cancelled)
	}
	if st := prov.Stats(); st.Live != 0 || st.Opened != st.Closed {
		t.Errorf("docker sandboxes leaked: opened %d, closed %d, live %d", st.Opened, st.Closed, st.Live)
	}
	if sum.Scheduler.Restarts != e.Retries {
		t.Errorf("supervisor restarts %d, retries %d", sum.Scheduler.Restarts, e.Retries)
	}

	ledger.mu.Lock()
	clock.mu.Lock()
	defer clock.mu.Unlock()
	// Every attempt either completed or ended with an infrastructure fault,
	// and every faulted attempt was retried or was its episode's last,
	// recorded as failed_infra.
	faulted := int64(len(ledger.faulted))
	if got, want := e.Admitted+e.Retries, e.Completed+faulted; got != want {
		t.Errorf("attempts: admitted+retries = %d, completed+faulted attempts = %d", got, want)
	}
	// Every kill that landed before its attempt's last sandbox operation
	// returned made that attempt fault; a kill after it (while the episode
	// was evaluating or closing) rightly leaves the result standing.
	hit, late := 0, 0
	for _, kl := range k.kills {
		key := [2]uint64{kl.episode, uint64(kl.attempt)}
		if ledger.faulted[key] {
			hit++
			continue
		}
		if last, ok := clock.last[key]; ok && last.After(kl.done) {
			t.Errorf("episode %d attempt %d: container %s killed by %v, yet a sandbox operation succeeded at %v",
				kl.episode, kl.attempt, kl.name, kl.done.Sub(start), last.Sub(start))
		}
		late++
	}
	if int64(hit) > e.Retries+e.FailedInfra {
		t.Errorf("%d kills hit running attempts, but only %d retries and %d infra failures", hit, e.Retries, e.FailedInfra)
	}
	killedKeys := map[[2]uint64]bool{}
	for _, kl := range k.kills {
		killedKeys[[2]uint64{kl.episode, uint64(kl.attempt)}] = true
	}
	for key := range ledger.faulted {
		if !killedKeys[key] {
			t.Logf("episode %d attempt %d faulted without a kill (counted as an infrastructure fault all the same)", key[0], key[1])
		}
	}
	ledger.mu.Unlock()
	checkLearnedOnlyCleanAttempts(t, ledger, rec, sum)
	if hit == 0 || len(k.kills) < episodes/10 {
		t.Errorf("%d kills, %d of them under a running attempt: the chaos proves nothing", len(k.kills), hit)
	}
	if left := dockerPS(t, run); left != "" {
		t.Errorf("containers of run %s left behind:\n%s", run, left)
	}
	t.Logf("chaos: %d episodes at concurrency %d in %.1f s: %d containers seen, %d killed (%d under a running attempt, %d after its last operation), %d missed; "+
		"faulted attempts %d, retries %d, failed_infra %d, completed %d (solved %d), cancelled %d, restarts %d; learned %d, stale dropped %d; docker %+v",
		episodes, concurrency, elapsed.Seconds(), len(k.seen), len(k.kills), hit, late, k.missed,
		faulted, e.Retries, e.FailedInfra, e.Completed, e.Solved, e.Cancelled, sum.Scheduler.Restarts,
		len(rec.seen), sum.Learner.StaleDropped, prov.Stats())
}

// dockerCLI fails, or skips outside CI, when the docker command is missing:
// the test's "other process" is the docker CLI.
func dockerCLI(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("docker"); err != nil {
		envtest.Unavailable(t, "no docker command", err)
	}
}

// dockerPS lists every container, running or not, labelled with run.
func dockerPS(t *testing.T, run string) string {
	t.Helper()
	out, err := exec.Command("docker", "ps", "-a", "--filter", "label="+docker.LabelRun+"="+run, "--format", "{{.Names}} {{.Status}}").CombinedOutput()
	if err != nil {
		t.Fatalf("docker ps: %v\n%s", err, out)
	}
	return strings.TrimSpace(string(out))
}

// opClock wraps a provider: before each sandbox operation it waits think,
// the agent's time to choose its action (a model's step takes a while; the
// simulated one's takes none), and it notes, per attempt, when the last
// operation returned.
type opClock struct {
	env.Provider
	think time.Duration
	mu    sync.Mutex
	last  map[[2]uint64]time.Time
}

func (c *opClock) Open(ctx context.Context, o env.OpenOptions) (env.Sandbox, error) {
	sb, err := c.Provider.Open(ctx, o)
	if err != nil {
		return nil, err
	}
	return &clockedSandbox{Sandbox: sb, c: c, key: [2]uint64{o.Episode, uint64(o.Attempt)}}, nil
}

type clockedSandbox struct {
	env.Sandbox
	c   *opClock
	key [2]uint64
}

func (s *clockedSandbox) wait(ctx context.Context) {
	t := time.NewTimer(s.c.think)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

func (s *clockedSandbox) tick() {
	s.c.mu.Lock()
	s.c.last[s.key] = time.Now()
	s.c.mu.Unlock()
}

func (s *clockedSandbox) Exec(ctx context.Context, o env.ExecOptions) (env.ExecResult, error) {
	s.wait(ctx)
	defer s.tick()
	return s.Sandbox.Exec(ctx, o)
}

func (s *clockedSandbox) ReadFile(ctx context.Context, p string) ([]byte, error) {
	s.wait(ctx)
	defer s.tick()
	return s.Sandbox.ReadFile(ctx, p)
}

func (s *clockedSandbox) WriteFile(ctx context.Context, p string, d []byte) error {
	s.wait(ctx)
	defer s.tick()
	return s.Sandbox.WriteFile(ctx, p, d)
}

// killer is the other process: through the docker CLI it watches the run's
// running episode containers and kills about share of them, each at a
// random moment within maxDelay of being first seen.
type killer struct {
	run      string
	share    float64
	maxDelay time.Duration
	rng      *mrand.Rand

	seen   map[string]bool // container IDs of episodes seen running
	wg     sync.WaitGroup  // the kills under way
	mu     sync.Mutex      // guards what follows
	chosen int             // kills under way or done
	kills  []kill
	missed int // chosen, but no longer running when the kill came
}

// kill is one container killed: its episode and attempt, and when the
// docker kill command returned.
type kill struct {
	name    string
	episode uint64
	attempt int
	done    time.Time
}

// episodeName matches the names of containers that serve an episode
// (frog-<run>-e<episode>-a<attempt>-<hex>); idle pooled containers are
// named frog-<run>-pool-<n>-<hex> until an episode takes them.
var episodeName = regexp.MustCompile(`-e(\d+)-a(\d+)-[0-9a-f]+$`)

// loop polls until ctx is cancelled, then waits for the kills under way.
func (k *killer) loop(ctx context.Context) {
	defer k.wg.Wait()
	for {
		out, _ := exec.CommandContext(ctx, "docker", "ps", "--no-trunc", "--filter", "label="+docker.LabelRun+"="+k.run,
			"--filter", "status=running", "--format", "{{.ID}} {{.Names}}").Output()
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			id, name, ok := strings.Cut(line, " ")
			if !ok || k.seen[id] || !episodeName.MatchString(name) {
				continue
			}
			k.seen[id] = true
			// Keep the kills that landed or may land at share of the
			// episode containers seen.
			k.mu.Lock()
			choose := float64(k.chosen-k.missed) < k.share*float64(len(k.seen))
			if choose {
				k.chosen++
			}
			k.mu.Unlock()
			if choose {
				k.wg.Add(1)
				go k.kill(ctx, id, name, time.Duration(k.rng.Int64N(int64(k.maxDelay))))
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func (k *killer) kill(ctx context.Context, id, name string, delay time.Duration) {
	defer k.wg.Done()
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		k.mu.Lock()
		k.missed++
		k.mu.Unlock()
		return
	}
	err := exec.CommandContext(ctx, "docker", "kill", id).Run()
	k.mu.Lock()
	defer k.mu.Unlock()
	if err != nil {
		k.missed++
		return
	}
	m := episodeName.FindStringSubmatch(name)
	ep, _ := strconv.ParseUint(m[1], 10, 64)
	at, _ := strconv.Atoi(m[2])
	k.kills = append(k.kills, kill{name: name, episode: ep, attempt: at, done: time.Now()})
}
