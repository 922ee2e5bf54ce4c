package docker

import (
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
)

// TestOwnerZombie: a frog process that was killed but not yet waited for by
// its parent is a zombie (state Z): it still has a pid, a /proc entry and
// its start time, yet it will never close its sandboxes. Reap must count it
// as gone.
func TestOwnerZombie(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	defer cmd.Wait()
	labels := map[string]string{
		LabelHost:  identity()[LabelHost],
		LabelBoot:  identity()[LabelBoot],
		LabelPID:   strconv.Itoa(pid),
		LabelStart: procStart(pid),
	}
	if got := ownerAlive(labels, identity()); got != ownerLive {
		t.Fatalf("owner of a running process = %v, want %v (live)", got, ownerLive)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	// Not waited for: the process stays a zombie until cmd.Wait.
	deadline := time.Now().Add(10 * time.Second)
	for state, _ := procStat(pid); state != 'Z'; state, _ = procStat(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d did not become a zombie (state %q)", pid, state)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if got := ownerAlive(labels, identity()); got != ownerGone {
		t.Errorf("owner of a zombie process = %v, want %v (gone)", got, ownerGone)
	}
}

// A removal another frog has in progress is as good as done; other
// conflicts are not.
func TestIsGone(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("%w: no such container: abc", cerrdefs.ErrNotFound), true},
		{fmt.Errorf("%w: removal of container abc is already in progress", cerrdefs.ErrConflict), true},
		{fmt.Errorf("%w: container abc is running: stop it first", cerrdefs.ErrConflict), false},
		{errors.New("removal of container abc is already in progress"), false},
	} {
		if got := isGone(tt.err); got != tt.want {
			t.Errorf("isGone(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}
