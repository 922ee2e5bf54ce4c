package docker

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/rs/zerolog"

	"github.com/frognano/frog/env"
)

// holdSandboxes is the frog process that TestReapAfterSIGKILL kills (the
// test binary, run again with FROG_TEST_CHILD_RUN set; see TestMain): it
// holds two sandboxes and a full warm pool, says "ready" and waits.
func holdSandboxes(run string) error {
	ctx := context.Background()
	cli, err := NewClient(ctx)
	if err != nil {
		return err
	}
	img, err := EnsureImage(ctx, cli, BuildOptions{})
	if err != nil {
		return err
	}
	cfg := testConfig(img, run)
	cfg.Reap = false
	// Two sandboxes out and a full pool besides: with reuse the pool would
	// count the two as coming back and make none for them.
	cfg.Reuse = 1
	p, err := New(ctx, cli, cfg, zerolog.Nop())
	if err != nil {
		return err
	}
	for i := range 2 {
		if _, err := p.Open(ctx, env.OpenOptions{Run: run, Episode: uint64(i)}); err != nil {
			return err
		}
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if st := p.PoolStats(); len(st) > 0 && st[0].Idle >= cfg.PoolSize {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pool not full: %+v", p.PoolStats())
		}
	}
	fmt.Println("ready")
	time.Sleep(2 * time.Minute)
	return nil
}

// TestReapAfterSIGKILL: a frog killed with SIGKILL leaves containers; the
// next provider's start removes them all.
func TestReapAfterSIGKILL(t *testing.T) {
	cli, img := daemon(t)
	run := testRun(t)
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), "FROG_TEST_CHILD_RUN="+run)
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Process.Kill()
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if sc.Text() == "ready" {
				ready <- true
			}
		}
		ready <- false
	}()
	select {
	case ok := <-ready:
		if !ok {
			t.Fatal("child exited before it was ready")
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("child not ready after 2 minutes")
	}
	ctx := context.Background()
	f := filters.NewArgs(filters.Arg("label", LabelRun+"="+run))
	before, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	if len(before) < 4 {
		t.Fatalf("child holds %d containers, want 2 sandboxes and 2 pooled", len(before))
	}
	child.Process.Kill() // SIGKILL: no cleanup runs
	child.Wait()

	cfg := testConfig(img, testRun(t)+"-next")
	cfg.PoolSize = 0
	p, err := New(ctx, cli, cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	p.Close(ctx)
	assertNoContainers(t, cli, run)
}
