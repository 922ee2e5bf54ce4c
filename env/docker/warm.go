package docker

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
)

// warmed remembers the shared caches this process has warmed, by volume,
// image and packages, so that a process warms each once.
var warmed sync.Map

// warmCache compiles cfg.BuildCacheWarm into the shared build cache volume:
// the only time anything writes it. It runs in a container of its own, with
// the volume writable and no workspace, and runs nothing but the go command
// on the standard library or the packages named, compiling (which runs no
// code of what it compiles) and never testing. When the volume is warm this
// is a container start and the go command finding everything cached. Its
// container is labelled like a sandbox's (episode "warm"), so a killed
// frog's is reaped.
func (p *Provider) warmCache(ctx context.Context) error {
	c := p.cfg
	if c.BuildCacheVolume == "" || len(c.BuildCacheWarm) == 0 {
		return nil
	}
	key := strings.Join(append([]string{c.BuildCacheVolume, c.Image}, c.BuildCacheWarm...), "\x00")
	if _, done := warmed.Load(key); done {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, c.WarmTimeout)
	defer cancel()
	cfg, hc := p.containerConfig(c.Image, c.Run, "warm", "0")
	cfg.Cmd = append([]string{"go", "build"}, c.BuildCacheWarm...)
	cfg.OpenStdin, cfg.AttachStdin, cfg.AttachStdout, cfg.AttachStderr = false, false, false, false
	cfg.WorkingDir = "/tmp"
	// A one-off build of trusted code: all the host's CPUs and memory, and
	// a /tmp as large as the go command's work directory grows (the whole
	// standard library's archives, 170 MiB), whatever a sandbox is given.
	hc.NanoCPUs, hc.Memory, hc.MemorySwap = 0, 0, 0
	hc.Tmpfs = map[string]string{"/tmp": "rw,exec,nosuid,nodev,mode=1777"}
	hc.Init = nil
	hc.Mounts = slices.DeleteFunc(hc.Mounts, func(m mount.Mount) bool { return m.Target == "/cache" })
	hc.Mounts = append(hc.Mounts, mount.Mount{Type: mount.TypeVolume, Source: c.BuildCacheVolume, Target: "/cache"})
	dctx, dcancel := context.WithTimeout(context.WithoutCancel(ctx), p.cfg.StartTimeout)
	defer dcancel()
	created, err := p.api.ContainerCreate(dctx, cfg, hc, nil, nil, fmt.Sprintf("frog-%s-warm-%s", sanitize(c.Run), randHex(3)))
	if err != nil {
		return infra(err, "create the build cache warm-up container")
	}
	id := created.ID
	defer func() {
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), p.cfg.CloseTimeout)
		defer rcancel()
		p.api.ContainerRemove(rctx, id, container.RemoveOptions{Force: true})
	}()
	hj, err := p.api.ContainerAttach(ctx, id, container.AttachOptions{Stream: true, Stdout: true, Stderr: true})
	if err != nil {
		return infra(err, "attach to the build cache warm-up container")
	}
	defer hj.Close()
	var out tail
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		io.Copy(&out, &demux{r: hj.Reader, stderr: &out})
	}()
	waitC, errC := p.api.ContainerWait(ctx, id, container.WaitConditionNextExit)
	if err := p.api.ContainerStart(ctx, id, container.StartOptions{}); err != nil {
		return infra(err, "start the build cache warm-up container")
	}
	select {
	case res := <-waitC:
		hj.Close()
		<-copied
		if res.StatusCode != 0 {
			return fmt.Errorf("docker: warm the build cache: go build %s: exit %d: %s", strings.Join(c.BuildCacheWarm, " "),
				res.StatusCode, bytes.TrimSpace([]byte(out.String())))
		}
	case err := <-errC:
		return infra(err, "wait for the build cache warm-up container")
	case <-ctx.Done():
		return infra(ctx.Err(), "warm the build cache")
	}
	warmed.Store(key, true)
	return nil
}
