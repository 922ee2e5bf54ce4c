package gotask

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/gotask/gotest"
)

// Real builds shared by content. A verdict builds the edited tree for real,
// and so does the check's run of the gold patch; most of a build is its
// link (0.75 of 1.07 s for a go-datastructures test binary). Different
// tasks of one package often come to the same tree: every single-bug
// task's gold patch, and every exact fix an agent finds, gives back the
// module as it was published. So the test binary of a real build is kept
// in the binary cache under the key of its tree's content (the module at
// its version, the package, and every file that differs from the module's
// own) and any sandbox that sees the cache runs it instead of building the
// same tree again. The outcome is still a real build's, of exactly the
// tree judged; only whose sandbox built it changes.

// moduleDirs is what names a tree by its content: the module as it was
// published (Workspaces has it).
type moduleDirs interface {
	ModuleDir(ctx context.Context, t *env.Task) (string, error)
}

// realBin is where a sandbox builds the test binary of a real build,
// relative to the workspace.
const realBin = ".frog/real.test"

// treeKey names the tree that sb holds for task t by its content: judged
// holds the files that differ from the task's template (their content as
// the tree has them); the task's own mutated files are read from the
// template. It is "" where trees cannot be shared: no binary cache or no
// host paths, a module with no published version (a local directory may
// change under the same name), or a file that cannot be read.
func (h *Harness) treeKey(ctx context.Context, sb env.Sandbox, t *env.Task, judged map[string][]byte) string {
	md, ok := h.ws.(moduleDirs)
	if _, hp := sb.(env.HostPaths); !ok || !hp || h.cfg.BinCache == "" || t.Version == "" || t.Repo == "" {
		return ""
	}
	mod, err := md.ModuleDir(ctx, t)
	if err != nil {
		return ""
	}
	tmpl, err := h.ws.Template(ctx, t)
	if err != nil {
		return ""
	}
	files := map[string]bool{}
	for f := range judged {
		files[f] = true
	}
	for _, m := range t.Mutations {
		files[m.File] = true
	}
	sum := sha256.New()
	// The verdict key's id: the binary holds that key's canary tests
	// (verdict.go).
	for _, s := range []string{"real", h.verdictKeyID(), runtime.Version(), runtime.GOOS, runtime.GOARCH, t.Repo + "@" + t.Version, t.Dir()} {
		sum.Write([]byte(s))
		sum.Write([]byte{0})
	}
	for _, f := range slices.Sorted(maps.Keys(files)) {
		data, ok := judged[f]
		if !ok {
			if data, ok = readIfThere(filepath.Join(tmpl, filepath.FromSlash(f))); data == nil && !ok {
				return ""
			}
		}
		orig, there := readIfThere(filepath.Join(mod, filepath.FromSlash(f)))
		if orig == nil && there {
			return ""
		}
		if there && string(orig) == string(data) {
			continue // as published: the tree does not name it
		}
		sum.Write([]byte(f))
		sum.Write([]byte{0})
		sum.Write(data)
		sum.Write([]byte{0})
	}
	return "real-" + hex.EncodeToString(sum.Sum(nil))[:32]
}

// readIfThere reads p: its content and true; nil and false when there is
// no such file; nil and true when it is there and cannot be read.
func readIfThere(p string) ([]byte, bool) {
	data, err := os.ReadFile(p)
	switch {
	case err == nil:
		if data == nil {
			data = []byte{}
		}
		return data, true
	case errors.Is(err, os.ErrNotExist):
		return nil, false
	default:
		return nil, true
	}
}

// sharedRun runs tests of task t in sb's tree as a real build does,
// from the test binary of that tree: the cached one when some sandbox
// built the same tree before, else one built here and shared. judged is
// what differs in the tree from the task's template (treeKey). ok is false
// where the tree cannot be shared or its binary was not made for a reason
// other than the code (a time-out, a package with no tests): the caller
// then runs go test as before. The binary holds the verdict's canary
// tests (verdict.go); a run of the agent's tests does not ask for them.
func (h *Harness) sharedRun(ctx context.Context, sb env.Sandbox, t *env.Task, judged map[string][]byte, tests []string, limit time.Duration) (tr gotest.Run, ok bool, err error) {
	k := h.treeKey(ctx, sb, t, judged)
	if k == "" {
		return gotest.Run{}, false, nil
	}
	bin, failure, _, ok, err := h.treeBinary(ctx, sb, t, k)
	switch {
	case err != nil || !ok:
		return gotest.Run{}, false, err
	case bin == "":
		return gotest.Run{Text: failure}, true, nil // does not build
	}
	tr, err = h.runBinary(ctx, sb, t.Dir(), bin, tests, limit)
	return tr, err == nil, err
}

// treeBinary is the test binary, as seen from the package directory of
// task t in sb, of the tree keyed k: the shared one, or one built in sb
// and shared; c is the canary it was built with (canaryFor(k)). One build
// at a time per tree: concurrent episodes that reach it wait for the first
// and run its binary. bin is "" when the tree does not compile (failure is
// the compiler's output); ok is false when no binary was made for another
// reason.
func (h *Harness) treeBinary(ctx context.Context, sb env.Sandbox, t *env.Task, k string) (bin, failure string, c canary, ok bool, err error) {
	dir := t.Dir()
	c = h.canaryFor(k)
	hostBin := filepath.Join(h.cfg.BinCache, k+".test")
	unlock := h.building.lock(k)
	defer unlock()
	if _, err := os.Stat(hostBin); err == nil {
		if p, ok := sb.(env.HostPaths).HostPath(hostBin); ok {
			h.st.realShared.Add(1)
			return p, "", c, true, nil
		}
	}
	if out, ok := h.cache.get(k); ok {
		h.st.realShared.Add(1)
		return "", out.(string), c, out.(string) != "", nil
	}
	r, err := h.buildWithCanary(ctx, sb, t, c, realBin)
	if err != nil || r.TimedOut {
		return "", "", c, false, err
	}
	h.st.realBuilds.Add(1)
	if r.Exit != 0 {
		// The tree does not compile: that is its outcome, for every
		// sandbox of this run that reaches it (kept in memory only: a
		// machine's fault can look like a failed build).
		h.cache.put(k, string(r.Out))
		return "", string(r.Out), c, len(r.Out) > 0, nil
	}
	data, err := sb.ReadFile(ctx, realBin)
	if err != nil {
		if errors.Is(err, env.ErrInfra) || ctx.Err() != nil {
			return "", "", c, false, err
		}
		return "", "", c, false, nil // no binary (a package with no tests): go test says what it makes of it
	}
	writeShared(h.cfg.BinCache, hostBin, data, 0o555)
	return gotest.UpTo(dir) + realBin, "", c, true, nil
}
