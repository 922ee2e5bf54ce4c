package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
	"github.com/rs/zerolog"

	"github.com/frognano/frog/env"
)

// LayoutBenchOptions says what BenchLayout lays out.
type LayoutBenchOptions struct {
	// Template is a host directory laid out as a task's workspace (a
	// module, say); Root the workspace root it lies under, its parent
	// directory when "".
	Template string
	Root     string
	// Samples of each measurement; default 20.
	Samples int
}

// LayoutBenchResult is what opening a sandbox for a real task costs.
type LayoutBenchResult struct {
	Template string `json:"template"`
	Files    int    `json:"files"`
	Dirs     int    `json:"dirs"`
	Bytes    int64  `json:"bytes"`
	// WarmAcquire is Provider.Open of a plain sandbox from the warm pool,
	// WarmAcquireTask the same for a real task whose workspace Open lays
	// out from Template; the two are interleaved, from one pool.
	WarmAcquire     Latency `json:"warm_acquire"`
	WarmAcquireTask Latency `json:"warm_acquire_task"`
	// AgentCopy is the agent's copy alone (Sandbox.Layout's Duration: the
	// round trip of its layout request).
	AgentCopy Latency `json:"agent_copy"`
	// CopyToContainer is the alternative: the same tree as a tar stream
	// (made once, ahead of the samples) through the Docker API into a new
	// directory of a container with a writable root file system, the only
	// kind that takes it (a read-only root refuses it, and a copy into the
	// workspace's tmpfs lands under the mount, out of the container's
	// sight). CopyReadOnly says what the daemon answered for a sandbox as
	// frog makes it, CopyTmpfs how many of the files a copy into a
	// writable-root container's tmpfs workspace showed there.
	CopyToContainer Latency `json:"copy_to_container"`
	CopyReadOnly    string  `json:"copy_read_only"`
	CopyTmpfs       string  `json:"copy_tmpfs"`
}

// benchTemplate is a Workspaces with one template for every task.
type benchTemplate string

func (d benchTemplate) Template(context.Context, *env.Task) (string, error) { return string(d), nil }

// BenchLayout measures opening sandboxes for a real task laid out from
// opts.Template against opening plain ones, in one run, and the agent's
// copy against Docker's CopyToContainer. It leaves nothing behind. cfg's
// pool and workspace settings are overridden.
func BenchLayout(ctx context.Context, cli *client.Client, cfg Config, opts LayoutBenchOptions) (LayoutBenchResult, error) {
	if opts.Samples <= 0 {
		opts.Samples = 20
	}
	tmpl, err := filepath.Abs(opts.Template)
	if err != nil {
		return LayoutBenchResult{}, err
	}
	if opts.Root == "" {
		opts.Root = filepath.Dir(tmpl)
	}
	res := LayoutBenchResult{Template: tmpl}
	tarball, err := tarTree(tmpl, &res)
	if err != nil {
		return res, fmt.Errorf("tar %s: %w", tmpl, err)
	}
	if err := benchLayoutAcquire(ctx, cli, cfg, tmpl, opts, tarball, &res); err != nil {
		return res, err
	}
	if err := benchCopyToContainer(ctx, cli, cfg, opts.Samples, tarball, &res); err != nil {
		return res, err
	}
	return res, nil
}

// benchLayoutAcquire times opens from one warm pool whose workspaces are
// laid out from tmpl under root, a plain sandbox and a task's in turn,
// each with the pool full, into res's WarmAcquire, WarmAcquireTask and
// AgentCopy; the first task's sandbox also says in res.CopyReadOnly what
// CopyToContainer of tarball does to a sandbox as frog makes it.
func benchLayoutAcquire(ctx context.Context, cli *client.Client, cfg Config, tmpl string, opts LayoutBenchOptions, tarball []byte, res *LayoutBenchResult) error {
	cfg.PoolSize, cfg.Reap = 2, false
	cfg.Workspaces, cfg.WorkspaceRoot = benchTemplate(tmpl), opts.Root
	p, err := New(ctx, cli, cfg, zerolog.Nop())
	if err != nil {
		return err
	}
	defer p.Close(context.WithoutCancel(ctx))
	task := &env.Task{ID: "bench-layout", Mutations: []env.Mutation{{Op: "bench"}}}
	var plain, laid, copies []time.Duration
	for i := range opts.Samples {
		for _, t := range []*env.Task{nil, task} {
			// A full pool: no container start runs beside the open.
			if err := waitPool(ctx, p, cfg.PoolSize); err != nil {
				return err
			}
			t0 := time.Now()
			sb, err := p.Open(ctx, env.OpenOptions{Run: cfg.Run, Episode: uint64(i), Task: t})
			if err != nil {
				return err
			}
			d := time.Since(t0)
			if t == nil {
				plain = append(plain, d)
			} else {
				laid = append(laid, d)
				copies = append(copies, sb.(*Sandbox).Layout().Duration)
				if i == 0 {
					res.CopyReadOnly = errString(cli.CopyToContainer(ctx, sb.(*Sandbox).ID(), Workspace, bytes.NewReader(tarball), container.CopyToContainerOptions{}))
				}
			}
			if err := sb.Close(ctx); err != nil {
				return err
			}
		}
	}
	res.WarmAcquire, res.WarmAcquireTask, res.AgentCopy = summarize(plain), summarize(laid), summarize(copies)
	p.Close(ctx)
	return nil
}

// benchCopyToContainer opens a sandbox with a writable root file system and
// no template, says in res.CopyTmpfs what a copy of tarball into its tmpfs
// workspace shows there, and times samples copies of tarball into new
// directories of it (res.CopyToContainer), checking the first one's count
// of files.
func benchCopyToContainer(ctx context.Context, cli *client.Client, cfg Config, samples int, tarball []byte, res *LayoutBenchResult) error {
	cfg.PoolSize, cfg.Reap = 0, false
	cfg.ReadOnlyRootfs, cfg.Workspaces, cfg.WorkspaceRoot = false, nil, ""
	wp, err := New(ctx, cli, cfg, zerolog.Nop())
	if err != nil {
		return err
	}
	defer wp.Close(context.WithoutCancel(ctx))
	sb, err := wp.Open(ctx, env.OpenOptions{Run: cfg.Run, Episode: 1 << 20})
	if err != nil {
		return err
	}
	defer sb.Close(context.WithoutCancel(ctx))
	id := sb.(*Sandbox).ID()
	count := func(dir string) (string, error) {
		r, err := sb.Exec(ctx, env.ExecOptions{Cmd: []string{"sh", "-c", "find " + dir + " -type f | wc -l"}})
		if err != nil {
			return "", err
		}
		return strings.TrimSpace(string(r.Stdout)), nil
	}
	if err := cli.CopyToContainer(ctx, id, Workspace, bytes.NewReader(tarball), container.CopyToContainerOptions{}); err != nil {
		res.CopyTmpfs = err.Error()
	} else if n, err := count(Workspace); err != nil {
		return err
	} else {
		res.CopyTmpfs = fmt.Sprintf("%s of %d files visible in %s", n, res.Files, Workspace)
	}
	var cps []time.Duration
	for i := range samples {
		dir := "/home/frog/s" + strconv.Itoa(i)
		if r, err := sb.Exec(ctx, env.ExecOptions{Cmd: []string{"mkdir", dir}}); err != nil || r.ExitCode != 0 {
			return fmt.Errorf("mkdir %s: %v %s", dir, err, r.Stderr)
		}
		t0 := time.Now()
		if err := cli.CopyToContainer(ctx, id, dir, bytes.NewReader(tarball), container.CopyToContainerOptions{}); err != nil {
			return fmt.Errorf("copy to container: %w", err)
		}
		cps = append(cps, time.Since(t0))
		if i == 0 {
			if n, err := count(dir); err != nil || n != strconv.Itoa(res.Files) {
				return fmt.Errorf("copy to container: %s of %d files in %s (%v)", n, res.Files, dir, err)
			}
		}
	}
	res.CopyToContainer = summarize(cps)
	return nil
}

func errString(err error) string {
	if err == nil {
		return "accepted"
	}
	return err.Error()
}

// tarTree makes a tar of dir's tree, owned by the sandbox user, and counts
// it into res.
func tarTree(dir string, res *LayoutBenchResult) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		link := ""
		if info.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		}
		h, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		h.Name, h.Uid, h.Gid, h.Uname, h.Gname = filepath.ToSlash(rel), 1000, 1000, "", ""
		h.Mode |= 0o200
		if d.IsDir() {
			h.Name += "/"
			h.Mode |= 0o700
			res.Dirs++
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if info.Mode().IsRegular() {
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			n, err := io.Copy(tw, f)
			res.Files++
			res.Bytes += n
			return err
		}
		return nil
	})
	if err == nil {
		err = tw.Close()
	}
	return buf.Bytes(), err
}
