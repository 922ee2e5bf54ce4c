package process

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Contained commands (Config.Contain) run in a bubblewrap sandbox of their
// own: bwrap, Debian's bubblewrap, made for this (Flatpak's sandbox),
// started once a command. What a command sees of this machine is a view
// built of mounts, everything else absent:
//
//   - an empty, read-only root;
//   - read-only: /usr, /etc and the /bin, /sbin and /lib links or
//     directories; the Go toolchain (GOROOT), the module cache, the host's
//     build cache (the shared layer, below) and the directories of the
//     PATH; the host files a harness shares through HostPath, each file
//     alone; this executable, as the build cache's program;
//   - writable: the sandbox's workspace and home, and a /tmp of its own (a
//     tmpfs for this command alone, TMPDIR, which holds its build cache
//     layer);
//   - new /proc and /dev, and new pid, network, IPC, UTS and cgroup
//     namespaces: no network but a loopback that is down, no process of
//     this machine or of another command visible, every process of the
//     command killed with it.
//
// So the task templates, the workspaces root, the binary cache but for the
// files shared, frog's run directories, other sandboxes, the Docker socket
// (/run) and the host's /tmp are not there at all, and what is there is
// read-only but for the command's own directories.
//
// As root, commands also stop being root: bwrap, run by root, mounts the
// view, and util-linux's setpriv, the last thing before the command, makes
// it uid and gid 65534 (nobody) with no capabilities, no groups and
// no_new_privs. Files root owns are then the other users' to it: a
// root-only file (/etc/shadow, an SSH host key) is unreadable even where
// it is mounted. Anyone else runs bwrap in a user namespace of their own,
// as their own uid; what they could read stays readable where mounted.
// Limits are set by frog on bwrap's first process in the sandbox while it
// waits (--block-fd), before the command starts.
//
// The go command's build cache has two layers, as in Docker sandboxes
// (docs/sandboxes.md): the host's GOCACHE, read-only, and a fresh, empty
// layer for each command in its /tmp, which the go command reads and
// writes through GOCACHEPROG (cacheprog.go) and which goes with the
// command. So
// nothing a command puts in a build cache is read by any later command.
// The provider warms the shared layer with the standard library when it
// starts (Config.WarmGo), outside any sandbox: compiling runs no code of
// what it compiles.

// ErrUncontained is New's error where Config.Contain is set and commands
// cannot be contained: bwrap or util-linux's tools are missing, or the
// kernel refuses the namespaces.
var ErrUncontained = errors.New("process sandboxes cannot contain their commands")

// nobody is the uid and gid root's contained commands run as.
const nobody = 65534

// cacheProgDir is where a contained command sees this executable, named
// cacheProgName (cacheprog.go).
const cacheProgDir = "/.frog"

// containment is how a provider contains its commands: the tools, who the
// commands run as, and the view every command gets.
type containment struct {
	bwrap, setpriv string // setpriv is "" unless frog runs as root
	// chown says the sandboxes' directories must be given to uid:gid (the
	// commands' user is not frog's).
	chown    bool
	uid, gid int
	goCache  string // the host's GOCACHE: the shared layer; "" without go
	modCache string // the host's GOMODCACHE, as the view shows it; "" without go
	cacheExe bool   // this executable is in the view (cacheProgDir)
	base     view   // what every command sees
}

// view is what a contained command sees of this machine: bwrap's
// arguments that make it, and the mounts it made, in order, so that a
// path's visibility can be told.
type view struct {
	args   []string
	mounts []mountPoint
	made   map[string]bool // directories made in the view's own file systems
}

type mountPoint struct {
	dest string
	// host: the host's directory or file at its own path; ro: read-only.
	host, ro bool
}

func (v view) clone() view {
	return view{args: slices.Clone(v.args), mounts: slices.Clone(v.mounts), made: cloneSet(v.made)}
}

func cloneSet(m map[string]bool) map[string]bool {
	out := make(map[string]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}

// under says whether p is dir or below it.
func under(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// cover is the innermost mount that p is at or below; ok is false where
// it is the view's own root.
func (v *view) cover(p string) (m mountPoint, ok bool) {
	for _, mp := range v.mounts {
		if under(p, mp.dest) && len(mp.dest) >= len(m.dest) {
			m, ok = mp, true
		}
	}
	return m, ok
}

// visible says whether host path p is seen read-only at its own path.
func (v *view) visible(p string) bool {
	m, ok := v.cover(p)
	return ok && m.host && m.ro
}

// dirsAbove makes the directories above p that the view lacks, readable
// by all (bwrap makes a mount point's parents 0700).
func (v *view) dirsAbove(p string) {
	var missing []string
	for d := filepath.Dir(p); d != "/" && d != "."; d = filepath.Dir(d) {
		if m, ok := v.cover(d); (ok && (m.host || m.dest == d)) || v.made[d] {
			break // there already
		}
		missing = append(missing, d)
	}
	for _, d := range slices.Backward(missing) {
		v.args = append(v.args, "--perms", "0755", "--dir", d)
		v.made[d] = true
	}
}

// bind shows host path p at its own path, read-only or not, unless it is
// seen read-only already.
func (v *view) bind(p string, ro bool) {
	if ro && v.visible(p) {
		return
	}
	v.dirsAbove(p)
	flag := "--bind"
	if ro {
		flag = "--ro-bind"
	}
	v.args = append(v.args, flag, p, p)
	v.mounts = append(v.mounts, mountPoint{dest: p, host: true, ro: ro})
}

// bindLinked shows host directory d read-only at its own path, also where
// it is (or lies under) a symbolic link: the directory it resolves to is
// shown, and d as a link to it where d's parent is not seen already.
func (v *view) bindLinked(d string) {
	if !isDir(d) {
		return
	}
	d = filepath.Clean(d)
	real, err := filepath.EvalSymlinks(d)
	if err != nil {
		return
	}
	v.bind(real, true)
	if real == d || v.visible(filepath.Dir(d)) || v.made[d] {
		return
	}
	v.dirsAbove(d)
	v.args = append(v.args, "--symlink", real, d)
	v.made[d] = true
}

// goPaths are the go command's directories on this machine.
type goPaths struct{ Root, Cache, ModCache string }

// findGo asks the go command on env's PATH where its directories are; the
// zero value where there is none.
func findGo(env []string) goPaths {
	name, err := lookPath("go", env)
	if err != nil {
		return goPaths{}
	}
	cmd := exec.Command(name, "env", "-json", "GOROOT", "GOCACHE", "GOMODCACHE")
	cmd.Env = env
	out, err := cmd.Output()
	var v struct{ GOROOT, GOCACHE, GOMODCACHE string }
	if err != nil || json.Unmarshal(out, &v) != nil {
		return goPaths{}
	}
	return goPaths{Root: v.GOROOT, Cache: v.GOCACHE, ModCache: v.GOMODCACHE}
}

// newContainment finds the tools and builds the view every command gets.
// env is the commands' environment (its PATH); gp the go command's
// directories.
func newContainment(cfg Config, env []string, gp goPaths) (*containment, error) {
	c := &containment{}
	tools := []struct {
		name string
		dst  *string
		need bool
	}{
		{"bwrap", &c.bwrap, true},
		{"setpriv", &c.setpriv, os.Geteuid() == 0},
	}
	for _, t := range tools {
		if !t.need {
			continue
		}
		p, err := exec.LookPath(t.name)
		if err != nil {
			pkg := "util-linux"
			if t.name == "bwrap" {
				pkg = "bubblewrap"
			}
			return nil, fmt.Errorf("%w: no %s on the PATH (Debian: apt-get install %s)", ErrUncontained, t.name, pkg)
		}
		*t.dst = p
	}
	c.uid, c.gid = os.Getuid(), os.Getgid()
	v := view{made: map[string]bool{}}
	v.args = []string{"--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
		"--die-with-parent", "--new-session"}
	if c.setpriv != "" {
		c.chown, c.uid, c.gid = true, nobody, nobody
	} else {
		v.args = append(v.args, "--unshare-user", "--disable-userns")
	}
	for _, d := range []string{"/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"} {
		st, err := os.Lstat(d)
		switch {
		case err != nil:
		case st.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(d)
			if err == nil {
				v.args = append(v.args, "--symlink", target, d)
				v.made[d] = true
			}
		case st.IsDir():
			v.bind(d, true)
		}
	}
	v.args = append(v.args, "--proc", "/proc", "--dev", "/dev")
	if cfg.TmpSize > 0 {
		v.args = append(v.args, "--size", strconv.FormatInt(cfg.TmpSize, 10))
	}
	v.args = append(v.args, "--perms", "1777", "--tmpfs", "/tmp")
	v.mounts = append(v.mounts, mountPoint{dest: "/proc"}, mountPoint{dest: "/dev"}, mountPoint{dest: "/tmp"})
	for _, d := range []string{gp.Root, gp.ModCache, gp.Cache} {
		v.bindLinked(d)
	}
	if isDir(gp.Cache) {
		c.goCache = filepath.Clean(gp.Cache)
	}
	if isDir(gp.ModCache) {
		if real, err := filepath.EvalSymlinks(gp.ModCache); err == nil {
			c.modCache = real
		}
	}
	for _, kv := range env {
		if path, ok := strings.CutPrefix(kv, "PATH="); ok {
			for _, d := range filepath.SplitList(path) {
				v.bindLinked(d)
			}
		}
	}
	if exe, err := os.Executable(); err == nil && c.goCache != "" {
		dst := filepath.Join(cacheProgDir, cacheProgName)
		v.dirsAbove(dst)
		v.args = append(v.args, "--ro-bind", exe, dst)
		c.cacheExe = true
	}
	c.base = v
	return c, nil
}

func isDir(p string) bool {
	if !filepath.IsAbs(p) {
		return false
	}
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// own gives p to the commands' user, where that is not frog's.
func (c *containment) own(p string) error {
	if c == nil || !c.chown {
		return nil
	}
	return os.Lchown(p, c.uid, c.gid)
}

// sandboxView is the view of a sandbox's commands: the base, the
// workspace and home writable.
func (c *containment) sandboxView(ws, home string) view {
	v := c.base.clone()
	v.bind(ws, false)
	v.bind(home, false)
	return v
}

// hideModule hides, in view v, every version of module mod in the module
// cache, extracted and downloaded: a task's module as published is its
// gold fix, and the workspace, the task's main module, needs no copy of it
// to build.
func (c *containment) hideModule(v *view, mod string) {
	if c == nil || c.modCache == "" || mod == "" {
		return
	}
	esc := escapeModulePath(mod)
	dirs, _ := filepath.Glob(filepath.Join(c.modCache, filepath.FromSlash(esc)+"@*"))
	dirs = append(dirs, filepath.Join(c.modCache, "cache", "download", filepath.FromSlash(esc), "@v"))
	for _, d := range dirs {
		if isDir(d) {
			v.args = append(v.args, "--tmpfs", d)
			v.mounts = append(v.mounts, mountPoint{dest: d})
		}
	}
}

// escapeModulePath is a module path as the module cache names it: each
// upper-case letter as '!' and the letter in lower case
// (golang.org/x/mod/module.EscapePath, for valid paths).
func escapeModulePath(p string) string {
	var b strings.Builder
	for _, r := range p {
		if 'A' <= r && r <= 'Z' {
			b.WriteByte('!')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// run is one contained command: the exec.Cmd that starts bwrap, and the
// pipes it talks to frog through.
type run struct {
	cmd *exec.Cmd
	// status is bwrap's --json-status-fd: the command's pid, then its exit
	// code; block its --block-fd, on which bwrap's child waits before it
	// goes on to the command.
	status         *bufio.Reader
	statusR, block *os.File
	limits         []rlimit
}

// rlimit is one limit of a command.
type rlimit struct {
	resource int
	value    uint64
}

// command makes the bwrap command that runs argv in directory dir of view
// v with environment env, then extra, seeing shared (host files)
// read-only, with limits. Its build cache layer is layer, shown in v, or
// "" for one in its /tmp.
func (c *containment) command(v view, shared []string, layer, dir string, env, extra, argv []string, limits []rlimit) (*run, error) {
	v = v.clone()
	for _, f := range shared {
		if _, err := os.Stat(f); err == nil {
			v.bind(f, true)
		}
	}
	if c.goCache != "" && c.cacheExe {
		if layer == "" {
			// The command's own, in its /tmp, which goes with it.
			layer = cacheLayer
		}
		env = append(slices.Clone(env), "GOCACHE="+layer, "GOCACHEPROG="+quoteArg(filepath.Join(cacheProgDir, cacheProgName))+
			" -shared="+quoteArg(c.goCache)+" -layer="+quoteArg(layer))
	}
	env = slices.Concat(env, extra)
	statusR, statusW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	blockR, blockW, err := os.Pipe()
	if err != nil {
		statusR.Close()
		statusW.Close()
		return nil, err
	}
	args := append(v.args, "--remount-ro", "/", "--chdir", dir, "--json-status-fd", "3", "--block-fd", "4", "--")
	if c.setpriv != "" {
		args = append(args, c.setpriv, "--reuid="+strconv.Itoa(nobody), "--regid="+strconv.Itoa(nobody), "--clear-groups",
			"--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--")
	}
	r := &run{cmd: exec.Command(c.bwrap, append(args, argv...)...), statusR: statusR, status: bufio.NewReader(statusR), block: blockW, limits: limits}
	r.cmd.Env = env // bwrap passes its environment on
	r.cmd.ExtraFiles = []*os.File{statusW, blockR}
	return r, nil
}

// cacheLayer is where a contained command's go command keeps what it
// builds: in the command's own /tmp.
const cacheLayer = "/tmp/gocache"

// started closes frog's copies of the child's ends of the pipes, once
// bwrap has started (or failed to).
func (r *run) started() {
	if r != nil {
		for _, f := range r.cmd.ExtraFiles {
			f.Close()
		}
	}
}

// limit waits for bwrap to make the command's first process (its pid comes
// on the status pipe) and sets the limits on it before it goes on: the
// command starts with them, and so does everything it starts. An error
// says bwrap got not that far.
func (r *run) limit() error {
	defer r.block.Close()
	r.statusR.SetReadDeadline(time.Now().Add(time.Minute))
	line, err := r.status.ReadBytes('\n')
	var st struct {
		Pid int `json:"child-pid"`
	}
	if err != nil || json.Unmarshal(line, &st) != nil || st.Pid <= 0 {
		return fmt.Errorf("bwrap reported no process: %q, %v", line, err)
	}
	for _, l := range r.limits {
		lim := unix.Rlimit{Cur: l.value, Max: l.value}
		if err := unix.Prlimit(st.Pid, l.resource, &lim, nil); err != nil {
			return fmt.Errorf("limit %d of the command: %w", l.resource, err)
		}
	}
	_, err = r.block.Write([]byte{1})
	return err
}

// exited reads bwrap's status once it has exited: ok is false where bwrap
// reported no exit of the command (it failed to set the sandbox up, or
// was killed).
func (r *run) exited() (ok bool) {
	r.statusR.SetReadDeadline(time.Now().Add(2 * time.Second))
	rest, _ := io.ReadAll(r.status)
	return bytes.Contains(rest, []byte(`"exit-code"`))
}

// done releases the pipes.
func (r *run) done() {
	if r != nil {
		r.statusR.Close()
		r.block.Close()
	}
}

// limits are cfg's rlimits.
func limits(cfg Config) []rlimit {
	var out []rlimit
	for _, l := range []struct {
		res int
		v   int64
	}{{unix.RLIMIT_AS, cfg.AddressSpace}, {unix.RLIMIT_FSIZE, cfg.FileSize}, {unix.RLIMIT_CPU, cfg.CPUSeconds}, {unix.RLIMIT_NOFILE, cfg.OpenFiles}} {
		if l.v > 0 {
			out = append(out, rlimit{l.res, uint64(l.v)})
		}
	}
	return out
}

// quoteArg quotes s for GOCACHEPROG's space-separated arguments.
func quoteArg(s string) string {
	if !strings.ContainsAny(s, " \t'\"") {
		return s
	}
	return "'" + s + "'"
}

// warmed remembers the build caches this process has warmed, by cache and
// packages.
var warmed sync.Map

// warm compiles pkgs into the host's build cache (the shared layer), once
// a process, outside any sandbox, with the environment the harness's go
// commands have (no cgo): the only writer of the shared layer besides the
// user's own go commands. Compiling runs no code of what it compiles.
func warm(ctx context.Context, c *containment, env []string, pkgs []string, timeout time.Duration) error {
	if c.goCache == "" || len(pkgs) == 0 {
		return nil
	}
	key := strings.Join(append([]string{c.goCache}, pkgs...), "\x00")
	if _, done := warmed.Load(key); done {
		return nil
	}
	name, err := lookPath("go", env)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, append([]string{"build"}, pkgs...)...)
	cmd.Dir = os.TempDir()
	cmd.Env = append(slices.Clone(env), "GOCACHE="+c.goCache, "CGO_ENABLED=0", "GOFLAGS=", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %v: %s", strings.Join(pkgs, " "), err, firstLine(out))
	}
	warmed.Store(key, true)
	return nil
}

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	return s
}
