package docker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"
	"github.com/rs/zerolog"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/env/envtest"
)

// testConfig is a small sandbox: 256 MiB, 128 processes, a pool of 2.
func testConfig(img, run string) Config {
	cfg := DefaultConfig()
	cfg.Image = img
	cfg.Run = run
	cfg.Memory = 256 << 20
	cfg.WorkspaceBytes = 64 << 20
	cfg.TmpBytes = 64 << 20
	cfg.Pids = 128
	cfg.PoolSize = 2
	return cfg
}

func testRun(t *testing.T) string {
	return fmt.Sprintf("test-%s-%d-%s", sanitize(t.Name()), os.Getpid(), randHex(2))
}

// bridgeIP is the address of the host on Docker's default bridge, which a
// container with a network reaches.
func bridgeIP(t *testing.T) string {
	if ifc, err := net.InterfaceByName("docker0"); err == nil {
		addrs, _ := ifc.Addrs()
		for _, a := range addrs {
			if ip, ok := a.(*net.IPNet); ok && ip.IP.To4() != nil {
				return ip.IP.String()
			}
		}
	}
	t.Fatalf("no docker0 interface with an IPv4 address on this host")
	return ""
}

func ncProbe(host string, port int) []string {
	return []string{"nc", "-w", "2", host, strconv.Itoa(port)}
}

// assertNoContainers fails when the daemon still has containers of run.
func assertNoContainers(t *testing.T, cli *client.Client, run string) {
	t.Helper()
	list, err := cli.ContainerList(context.Background(), container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", LabelRun+"="+run))})
	if err != nil {
		t.Fatalf("list containers: %v", err)
	}
	for _, c := range list {
		t.Errorf("container %v (%s) of run %s left behind", c.Names, c.State, run)
	}
}

func newTestProvider(t *testing.T, cfg Config) *Provider {
	t.Helper()
	cli, _ := daemon(t)
	p, err := New(context.Background(), cli, cfg, zerolog.Nop())
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := p.Close(context.Background()); err != nil {
			t.Errorf("provider Close: %v", err)
		}
		assertNoContainers(t, cli, cfg.Run)
	})
	return p
}

func TestConformance(t *testing.T) {
	_, img := daemon(t)
	run := testRun(t)
	p := newTestProvider(t, testConfig(img, run))
	envtest.Run(t, p, envtest.Capabilities{
		Exec: true, Files: true, KillsEscapees: true,
		NoNetwork: true, HostIP: bridgeIP(t), NetProbe: ncProbe,
		ReadOnlyOutside: true,
		PidsLimit:       true,
		OOM:             true, MemoryBomb: []string{"dd", "if=/dev/zero", "of=/dev/null", "bs=512M", "count=1"},
		Run: run,
	})
	st := p.PoolStats()
	t.Logf("pool: %+v; stats: %+v", st, p.Stats())
}

// TestNetworkControl shows that the no-network test means something: with a
// network, the same probe reaches the same host address.
func TestNetworkControl(t *testing.T) {
	_, img := daemon(t)
	cfg := testConfig(img, testRun(t))
	cfg.Network = "bridge"
	cfg.PoolSize = 0
	p := newTestProvider(t, cfg)
	ln, err := net.Listen("tcp", net.JoinHostPort(bridgeIP(t), "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	ctx := context.Background()
	sb, err := p.Open(ctx, env.OpenOptions{Run: cfg.Run, Episode: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close(ctx)
	res, err := sb.Exec(ctx, env.ExecOptions{Cmd: ncProbe(bridgeIP(t), ln.Addr().(*net.TCPAddr).Port), Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 {
		t.Errorf("with a bridge network, connect to the host failed (exit %d, %s): the no-network test proves nothing", res.ExitCode, res.Stderr)
	}
}

// TestContainerKilled: a container killed behind frog's back is an
// infrastructure fault, on the next call and on Close.
func TestContainerKilled(t *testing.T) {
	cli, img := daemon(t)
	cfg := testConfig(img, testRun(t))
	cfg.PoolSize = 0
	p := newTestProvider(t, cfg)
	ctx := context.Background()
	tests := []struct {
		name string
		op   func(sb env.Sandbox) error
	}{
		{"exec", func(sb env.Sandbox) error {
			_, err := sb.Exec(ctx, env.ExecOptions{Cmd: []string{"true"}})
			return err
		}},
		{"exec in flight", func(sb env.Sandbox) error {
			s := sb.(*Sandbox)
			go func() {
				time.Sleep(300 * time.Millisecond)
				cli.ContainerKill(ctx, s.ID(), "KILL")
			}()
			_, err := sb.Exec(ctx, env.ExecOptions{Cmd: []string{"sleep", "30"}})
			return err
		}},
		{"read", func(sb env.Sandbox) error {
			_, err := sb.ReadFile(ctx, "a.txt")
			return err
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sb, err := p.Open(ctx, env.OpenOptions{Run: cfg.Run, Episode: 7})
			if err != nil {
				t.Fatal(err)
			}
			if tc.name != "exec in flight" {
				if err := cli.ContainerKill(ctx, sb.(*Sandbox).ID(), "KILL"); err != nil {
					t.Fatal(err)
				}
				time.Sleep(200 * time.Millisecond)
			}
			err = tc.op(sb)
			if !errors.Is(err, env.ErrInfra) {
				t.Errorf("after the container was killed: %v, want an error wrapping env.ErrInfra", err)
			}
			t.Logf("error: %v", err)
			if err := sb.Close(ctx); err != nil {
				t.Errorf("Close of a killed container: %v", err)
			}
		})
	}
}

// TestReap: containers of a dead frog process are removed, those of live
// ones (this test's own) stay.
func TestReap(t *testing.T) {
	cli, img := daemon(t)
	run := testRun(t)
	ctx := context.Background()
	dead := map[string]string{LabelRun: run, LabelEpisode: "1", LabelPID: "999999999", LabelHost: identity()[LabelHost], LabelBoot: identity()[LabelBoot], LabelStart: "1"}
	rebooted := map[string]string{LabelRun: run, LabelEpisode: "2", LabelPID: strconv.Itoa(os.Getpid()), LabelHost: identity()[LabelHost], LabelBoot: "another-boot", LabelStart: identity()[LabelStart]}
	foreign := map[string]string{LabelRun: run, LabelEpisode: "3", LabelPID: "1", LabelHost: "some-other-host", LabelBoot: "b", LabelStart: "1"}
	live := identity()
	live = map[string]string{LabelRun: run, LabelEpisode: "4", LabelPID: live[LabelPID], LabelHost: live[LabelHost], LabelBoot: live[LabelBoot], LabelStart: live[LabelStart]}
	ids := map[string]string{}
	for name, labels := range map[string]map[string]string{"dead": dead, "rebooted": rebooted, "foreign": foreign, "live": live} {
		c, err := cli.ContainerCreate(ctx, &container.Config{Image: img, Labels: labels, Cmd: []string{"true"}}, nil, nil, nil, "frog-"+run+"-"+name)
		if err != nil {
			t.Fatal(err)
		}
		ids[name] = c.ID
	}
	t.Cleanup(func() {
		for _, id := range ids {
			cli.ContainerRemove(ctx, id, container.RemoveOptions{Force: true})
		}
	})
	rep, err := Reap(ctx, cli, ReapOptions{Run: run})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Removed) != 2 || rep.Alive != 1 || rep.Foreign != 1 {
		t.Errorf("Reap = %+v, want 2 removed (dead, rebooted), 1 alive, 1 foreign", rep)
	}
	for name, want := range map[string]bool{"dead": false, "rebooted": false, "foreign": true, "live": true} {
		_, err := cli.ContainerInspect(ctx, ids[name])
		if got := err == nil; got != want {
			t.Errorf("%s container exists = %v, want %v", name, got, want)
		}
	}
	rep, err = Reap(ctx, cli, ReapOptions{Run: run, Force: true})
	if err != nil || len(rep.Removed) != 2 {
		t.Errorf("forced Reap = %+v, %v; want the 2 others removed", rep, err)
	}
	assertNoContainers(t, cli, run)
}

// TestPool: opens are served warm, never with a used container, and the pool
// refills.
func TestPool(t *testing.T) {
	_, img := daemon(t)
	cfg := testConfig(img, testRun(t))
	cfg.PoolSize = 2
	cfg.Reuse = 1 // a fresh container for every episode
	p := newTestProvider(t, cfg)
	ctx := context.Background()
	waitIdle(t, p, 2)
	seen := map[string]bool{}
	for i := range 4 {
		sb, err := p.Open(ctx, env.OpenOptions{Run: cfg.Run, Episode: uint64(i)})
		if err != nil {
			t.Fatal(err)
		}
		id := sb.(*Sandbox).ID()
		if seen[id] {
			t.Errorf("container %.12s handed out twice", id)
		}
		seen[id] = true
		if got, err := sb.ReadFile(ctx, "mark"); err == nil {
			t.Errorf("fresh sandbox has a used workspace: %q", got)
		}
		sb.WriteFile(ctx, "mark", []byte("used"))
		sb.Close(ctx)
		waitIdle(t, p, 2)
	}
	st := p.PoolStats()
	if len(st) != 1 || st[0].WarmHits != 4 || st[0].ColdStarts != 0 {
		t.Errorf("pool stats = %+v, want 4 warm hits and no cold start", st)
	}
}

// TestReuse: a container serves Config.Reuse episodes, one after the
// other, and each finds what a fresh one holds: whatever the last episode
// wrote in the workspace, /tmp and /dev/shm is gone, also where it made
// it unwritable, and the workspace has its mode back. A container whose
// episode closes it during a command is not reused.
func TestReuse(t *testing.T) {
	_, img := daemon(t)
	cfg := testConfig(img, testRun(t))
	cfg.PoolSize, cfg.Reuse = 1, 3
	p := newTestProvider(t, cfg)
	ctx := context.Background()
	sh := func(sb env.Sandbox, script string) string {
		t.Helper()
		r, err := sb.Exec(ctx, env.ExecOptions{Cmd: []string{"sh", "-c", script}})
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(r.Stdout) + string(r.Stderr))
	}
	var ids []string
	for i := range 6 {
		waitIdle(t, p, 1)
		sb, err := p.Open(ctx, env.OpenOptions{Run: cfg.Run, Episode: uint64(i)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, sb.(*Sandbox).ID())
		if got := sh(sb, "find /workspace /tmp /dev/shm | grep -v '^/tmp/.frog-gocache'; stat -c %a /workspace"); got != "/workspace\n/tmp\n/dev/shm\n755" {
			t.Errorf("episode %d found %q; want empty directories and mode 755", i, got)
		}
		sh(sb, "mkdir -p /workspace/d/e && echo x > /workspace/d/e/f && chmod 0 /workspace/d/e /workspace/d && "+
			"echo y > /tmp/y && mkdir /tmp/.frog-gocache/left && echo z > /dev/shm/z && chmod 700 /workspace")
		if err := sb.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for i, id := range ids {
		if want := ids[i/3*3]; id != want {
			t.Errorf("episode %d got container %.12s; want %.12s (three episodes each): %.12s", i, id, want, ids)
		}
	}
	if ids[0] == ids[3] {
		t.Errorf("a container served six episodes, past Reuse 3")
	}
	if st := p.PoolStats(); len(st) != 1 || st[0].Reused != 4 {
		t.Errorf("pool stats = %+v; want 4 reused", st)
	}

	// Closed during a command: the container goes.
	waitIdle(t, p, 1)
	sb, err := p.Open(ctx, env.OpenOptions{Run: cfg.Run, Episode: 6})
	if err != nil {
		t.Fatal(err)
	}
	busy := sb.(*Sandbox).ID()
	done := make(chan struct{})
	go func() {
		defer close(done)
		sb.Exec(ctx, env.ExecOptions{Cmd: []string{"sleep", "30"}})
	}()
	for s := sb.(*Sandbox); s.ops.TryLock(); time.Sleep(time.Millisecond) {
		s.ops.Unlock() // the command has not started yet
	}
	sb.Close(ctx)
	<-done
	waitIdle(t, p, 1)
	next, err := p.Open(ctx, env.OpenOptions{Run: cfg.Run, Episode: 7})
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close(ctx)
	if next.(*Sandbox).ID() == busy {
		t.Errorf("a container closed during a command was reused")
	}
}

func waitIdle(t *testing.T, p *Provider, n int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if st := p.PoolStats(); len(st) > 0 && st[0].Idle >= n {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("pool did not fill to %d: %+v", n, p.PoolStats())
}

// TestMissingImage: a missing image is named in the error.
func TestMissingImage(t *testing.T) {
	cli, _ := daemon(t)
	cfg := DefaultConfig()
	cfg.Image = "frog-no-such-image:never"
	cfg.PullTimeout = 3 * time.Second
	cfg.Reap = false
	_, err := New(context.Background(), cli, cfg, zerolog.Nop())
	if err == nil {
		t.Fatal("New with a missing image succeeded")
	}
	if !errors.Is(err, env.ErrInfra) || !strings.Contains(err.Error(), cfg.Image) {
		t.Errorf("error = %v, want one naming %s and wrapping env.ErrInfra", err, cfg.Image)
	}
}

// TestBench runs the benchmark small, to keep it working; its timings are
// logged, never asserted.
func TestBench(t *testing.T) {
	cli, img := daemon(t)
	cfg := testConfig(img, testRun(t))
	res, err := Bench(context.Background(), cli, cfg, BenchOptions{Samples: 2, ExecSamples: 10, MaxConcurrent: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", res)
	if res.MaxConcurrent != 4 || res.ConcurrentError != "" {
		t.Errorf("held %d of 4 containers: %s", res.MaxConcurrent, res.ConcurrentError)
	}
	assertNoContainers(t, cli, cfg.Run)
}

func BenchmarkExec(b *testing.B) {
	_, img := daemon(b)
	cli, _ := daemon(b)
	cfg := testConfig(img, fmt.Sprintf("bench-%d", os.Getpid()))
	cfg.PoolSize = 0
	p, err := New(context.Background(), cli, cfg, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close(context.Background())
	ctx := context.Background()
	sb, err := p.Open(ctx, env.OpenOptions{Run: cfg.Run})
	if err != nil {
		b.Fatal(err)
	}
	defer sb.Close(ctx)
	for b.Loop() {
		if _, err := sb.Exec(ctx, env.ExecOptions{Cmd: []string{"true"}}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestGoTest: the host's toolchain, mounted read-only, runs a module's tests
// in the sandbox, with the shared build cache writable.
func TestGoTest(t *testing.T) {
	_, img := daemon(t)
	cfg := testConfig(img, testRun(t))
	cfg.Memory = 2 << 30
	cfg.CPUs = 2
	cfg.PoolSize = 0
	p := newTestProvider(t, cfg)
	ctx := context.Background()
	sb, err := p.Open(ctx, env.OpenOptions{Run: cfg.Run, Episode: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close(ctx)
	files := map[string]string{
		"go.mod":    "module example.com/m\n\ngo 1.22\n",
		"m.go":      "package m\n\nfunc Add(a, b int) int { return a + b }\n",
		"m_test.go": "package m\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(1, 2) != 3 {\n\t\tt.Fatal(\"bad\")\n\t}\n}\n",
	}
	for name, data := range files {
		if err := sb.WriteFile(ctx, name, []byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	res, err := sb.Exec(ctx, env.ExecOptions{Cmd: []string{"go", "test", "./..."}, Timeout: 3 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 {
		t.Errorf("go test: exit %d\n%s%s", res.ExitCode, res.Stdout, res.Stderr)
	}
	t.Logf("go test in %v: %s", res.Duration, res.Stdout)
}
