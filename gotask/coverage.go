package gotask

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/gotask/gotest"
)

// Coverage builds the package's tests with -cover and runs each named test
// alone with a cover profile.
func (h *Harness) Coverage(ctx context.Context, sb env.Sandbox, ws *env.Workspace, tests []string) (env.CoverageReport, env.Cost, error) {
	t := ws.Task
	if len(tests) == 0 {
		tests = t.Tests()
	}
	if err := checkTestNames(tests); err != nil {
		return env.CoverageReport{}, env.Cost{}, err
	}
	return cached(h, okey("cover", t.ID, ws.Hash(), strings.Join(tests, ",")), func() (env.CoverageReport, int, error) {
		dir := t.Dir()
		bin := gotest.UpTo(dir) + coverBin
		if p, ok := h.checkedCoverBin(ctx, sb, ws); ok {
			bin = p // built by the task's check
		} else {
			r, err := h.buildCover(ctx, sb, ws)
			if err != nil {
				return env.CoverageReport{}, 0, err
			}
			if r.Exit != 0 {
				return env.CoverageReport{}, 0, fmt.Errorf("the tests do not build with coverage: %s", gotest.FirstLines(string(r.Out), 8))
			}
		}
		rep := env.CoverageReport{Tests: map[string][]int{}, Passed: map[string]bool{}}
		index := map[env.Block]int{}
		runs, err := gotest.CoverTests(ctx, sb, dir, bin, ".frog/cov", gotest.UpTo(dir)+".frog/cov", tests, h.cfg.TestTimeout)
		if err != nil {
			return env.CoverageReport{}, 0, err
		}
		execs := 0
		for i, test := range tests {
			run := runs[i]
			if run.Ran {
				execs++
			}
			if run.Alone {
				h.st.coverAlone.Add(1)
			} else if run.Ran {
				h.st.coverShared.Add(1)
			}
			rep.Passed[test] = run.Ran && run.Exit == 0
			if !run.Profiled {
				continue // the binary died before writing its profile
			}
			var ix []int
			for _, b := range run.Blocks {
				eb := env.Block{File: path.Join(dir, b.File), Start: b.StartLine, End: b.EndLine}
				i, ok := index[eb]
				if !ok {
					i = len(rep.Blocks)
					index[eb] = i
					rep.Blocks = append(rep.Blocks, eb)
				}
				ix = append(ix, i)
			}
			slices.Sort(ix)
			rep.Tests[test] = slices.Compact(ix)
		}
		return rep, execs, nil
	})
}

// checkedCoverBin is the path in sb of the coverage binary the task's check
// built and shared (hostCoverBin), when ws is the task's starting state and
// the binary is there.
func (h *Harness) checkedCoverBin(ctx context.Context, sb env.Sandbox, ws *env.Workspace) (string, bool) {
	hostBin := h.hostCoverBin(ctx, sb, ws.Task)
	if hostBin == "" || ws.Hash() != "" {
		return "", false
	}
	if _, err := os.Stat(hostBin); err != nil {
		return "", false
	}
	return sb.(env.HostPaths).HostPath(hostBin)
}

// hostCoverBin is where the coverage test binary of task t's starting
// state is shared with the sandboxes of sb's kind ("" when it cannot be).
func (h *Harness) hostCoverBin(ctx context.Context, sb env.Sandbox, t *env.Task) string {
	if _, ok := sb.(env.HostPaths); !ok || h.cfg.BinCache == "" {
		return ""
	}
	tk, ok := h.templateKey(ctx, t)
	if !ok {
		return ""
	}
	return filepath.Join(h.cfg.BinCache, key(t.ID, tk, t.Repo+"@"+t.Version, t.Dir(), runtime.Version(), "cover-count", coverMainVersion)+".test")
}

// coverMainVersion is part of the key of every coverage binary the
// binary cache keeps: change it whenever frog's TestMain
// (gotest.BuildCoverBinary) changes, so that no binary built with another
// is reused.
const coverMainVersion = "main-3"

// coverBin is where a sandbox's coverage test binary is built, relative
// to the workspace.
const coverBin = ".frog/cover.test"

// buildCover builds the coverage test binary of ws's package at
// coverBin, with frog's TestMain (coverTests) unless the package has its
// own.
func (h *Harness) buildCover(ctx context.Context, sb env.Sandbox, ws *env.Workspace) (gotest.Result, error) {
	defer func(start time.Time) { h.st.spent("cover-build", time.Since(start)) }(time.Now())
	h.st.coverBuilds.Add(1)
	pkg := ""
	if src, err := currentFile(ctx, sb, ws, ws.Task.File); err == nil {
		pkg = packageName(src)
	}
	write := func(rel string, data []byte) error { return sb.WriteFile(ctx, rel, data) }
	goCmd := func(args ...string) (gotest.Result, error) { return h.goCmd(ctx, sb, h.cfg.BuildTimeout, args...) }
	return gotest.BuildCoverBinary(write, goCmd, "./"+ws.Task.Dir(), pkg, coverBin)
}
