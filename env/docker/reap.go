package docker

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"
)

// Labels on every container frog makes. LabelRun and LabelEpisode name the
// run and the episode ("pool" for a warm container, which is renamed after
// its episode when taken); the others identify the frog process that owns
// the container, so that Reap can tell whether it is still alive.
const (
	LabelRun     = "frog.run"
	LabelEpisode = "frog.episode"
	LabelAttempt = "frog.attempt"
	LabelPID     = "frog.pid"
	LabelHost    = "frog.host"
	LabelBoot    = "frog.boot"
	LabelStart   = "frog.pstart"
)

// identity is the owner labels of this process: pid, host name, boot id and
// the process's start time (in clock ticks after boot, which tells a reused
// pid apart).
var identity = sync.OnceValue(func() map[string]string {
	host, _ := os.Hostname()
	return map[string]string{
		LabelPID:   strconv.Itoa(os.Getpid()),
		LabelHost:  host,
		LabelBoot:  bootID(),
		LabelStart: procStart(os.Getpid()),
	}
})

func bootID() string {
	b, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return strings.TrimSpace(string(b))
}

// procStart is field 22 of /proc/<pid>/stat, or "" when pid does not exist.
func procStart(pid int) string {
	_, start := procStat(pid)
	return start
}

// procStat returns the state (field 3 of /proc/<pid>/stat: R, S, Z, …) and
// the start time (field 22) of pid, or 0 and "" when it does not exist.
func procStat(pid int) (state byte, start string) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, ""
	}
	// Fields after the command name, which is in parentheses: state is
	// field 3, start time field 22.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, ""
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0, ""
	}
	return f[0][0], f[19]
}

// ReapOptions narrows what Reap removes.
type ReapOptions struct {
	// Run, when set, limits Reap to the containers of that run.
	Run string
	// Force removes the matching containers even when their frog process
	// is alive or on another host (`frog gc --force`).
	Force bool
	// DryRun lists what would be removed and removes nothing.
	DryRun bool
}

// ReapReport says what Reap found.
type ReapReport struct {
	// Removed are the names of containers removed (or, with DryRun, that
	// would be).
	Removed []string `json:"removed"`
	// Alive counts containers whose frog process is alive; Foreign those
	// made by a frog on another host, which Reap cannot judge.
	Alive   int `json:"alive"`
	Foreign int `json:"foreign"`
}

// Reap force-removes the containers labelled frog.run whose frog process is
// gone: same host and boot, and no live process with that pid and start time
// (a zombie, killed but not yet waited for, is gone; a different boot of the
// same host counts as gone too). Containers of live runs
// and of other hosts stay, unless opts.Force. Providers call it when they
// start (Config.Reap); `frog gc` calls it on demand. Daemon faults wrap
// env.ErrInfra; removal continues past single failures, which are joined.
func Reap(ctx context.Context, cli *client.Client, opts ReapOptions) (ReapReport, error) {
	return reap(ctx, cli, opts)
}

func reap(ctx context.Context, api dockerAPI, opts ReapOptions) (ReapReport, error) {
	var rep ReapReport
	f := filters.NewArgs(filters.Arg("label", LabelRun))
	if opts.Run != "" {
		f = filters.NewArgs(filters.Arg("label", LabelRun+"="+opts.Run))
	}
	list, err := api.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		return rep, infra(err, "list frog containers")
	}
	self := identity()
	var errs []error
	for _, c := range list {
		if !opts.Force {
			switch ownerAlive(c.Labels, self) {
			case ownerLive:
				rep.Alive++
				continue
			case ownerForeign:
				rep.Foreign++
				continue
			}
		}
		name := c.ID[:min(12, len(c.ID))]
		if len(c.Names) > 0 {
			name = strings.TrimPrefix(c.Names[0], "/")
		}
		if !opts.DryRun {
			err := api.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
			if err != nil && !isGone(err) {
				errs = append(errs, infra(err, "remove %s", name))
				continue
			}
		}
		rep.Removed = append(rep.Removed, name)
	}
	return rep, errors.Join(errs...)
}

type owner uint8

const (
	ownerGone owner = iota
	ownerLive
	ownerForeign
)

func ownerAlive(labels, self map[string]string) owner {
	if labels[LabelHost] != self[LabelHost] {
		return ownerForeign
	}
	if labels[LabelBoot] != self[LabelBoot] {
		return ownerGone
	}
	pid, err := strconv.Atoi(labels[LabelPID])
	if err != nil || pid <= 0 {
		return ownerGone
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return ownerGone
	}
	// A zombie (killed, not yet waited for by its parent) still has its
	// /proc entry and start time, but it will never close a sandbox.
	state, start := procStat(pid)
	if start == "" || start != labels[LabelStart] || state == 'Z' || state == 'X' {
		return ownerGone
	}
	return ownerLive
}
