package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/frognano/frog/env/docker/agent/wire"
)

// version is bumped when the protocol changes.
const version = "3"

const maxFrame = wire.MaxFrame

type (
	request  = wire.Request
	response = wire.Response
)

type agent struct {
	root    *os.Root
	dir     string
	dirMode os.FileMode // the workspace's mode at the start, which reset puts back
	tasks   string      // where tasks' templates are mounted ("": none)
	cache   cacheLayers
	out     *bufio.Writer
	outMu   sync.Mutex
	execMu  sync.Mutex // one command at a time
	mu      sync.Mutex
	running map[uint64]chan struct{} // cancel channels by request id
}

// agentMain is the agent's entry point: flags, the hello frame, then the
// request loop until its standard input ends.
func agentMain(args []string) int {
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	dir := fs.String("root", "/workspace", "workspace directory")
	threads := fs.Int("threads", 8, "OS threads to create ahead of need")
	shared := fs.String("gocache-shared", "", "the shared Go build cache, read-only to commands (\"\": none)")
	layers := fs.String("gocache-layers", "", "where each command gets its own fresh, writable Go build cache layer (\"\": no layers)")
	tasks := fs.String("tasks", "", "the directory, mounted read-only, under which layout finds tasks' templates (\"\": none)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	prespawnThreads(*threads)
	root, err := os.OpenRoot(*dir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "agent: %v\n", err)
		return 1
	}
	st, err := os.Stat(*dir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "agent: %v\n", err)
		return 1
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(os.Stderr, "agent: %v\n", err)
		return 1
	}
	a := &agent{root: root, dir: *dir, dirMode: st.Mode().Perm(), tasks: *tasks, cache: cacheLayers{parent: *layers, shared: *shared, self: self},
		out: bufio.NewWriterSize(os.Stdout, 64<<10), running: map[uint64]chan struct{}{}}
	a.send(&response{ID: 0, Op: "hello", Version: version})
	in := bufio.NewReaderSize(os.Stdin, 64<<10)
	for {
		var req request
		if err := readFrame(in, &req); err != nil {
			if !errors.Is(err, io.EOF) {
				fmt.Fprintf(os.Stderr, "agent: read: %v\n", err)
			}
			return 0
		}
		switch req.Op {
		case "exec":
			done := make(chan struct{})
			a.mu.Lock()
			a.running[req.ID] = done
			a.mu.Unlock()
			go func() { a.send(a.exec(&req, done)) }()
		case "cancel":
			a.mu.Lock()
			if c, ok := a.running[req.Target]; ok {
				close(c)
				delete(a.running, req.Target)
			}
			a.mu.Unlock()
		case "read":
			a.send(a.read(&req))
		case "write":
			a.send(a.write(&req))
		case "remove":
			a.send(a.remove(&req))
		case "layout":
			a.send(a.layout(&req))
		case "reset":
			a.send(a.reset(&req))
		default:
			a.send(&response{ID: req.ID, Err: fmt.Sprintf("unknown op %q", req.Op), ErrKind: "proto"})
		}
	}
}

// prespawnThreads makes the Go runtime create n OS threads now, while the
// container's pids limit has room: a fork bomb that fills it must not leave
// the agent unable to create the thread it needs to kill the bomb.
func prespawnThreads(n int) {
	var wg, ready sync.WaitGroup
	release := make(chan struct{})
	for range n {
		wg.Add(1)
		ready.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			ready.Done()
			<-release
			runtime.UnlockOSThread()
		}()
	}
	ready.Wait()
	close(release)
	wg.Wait()
}

func readFrame(r io.Reader, v any) error {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > maxFrame {
		return fmt.Errorf("frame of %d bytes exceeds %d", n, maxFrame)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		return err
	}
	return json.Unmarshal(buf, v)
}

func (a *agent) send(resp *response) {
	body, err := json.Marshal(resp)
	if err != nil {
		body, _ = json.Marshal(&response{ID: resp.ID, Err: err.Error(), ErrKind: "proto"})
	}
	a.outMu.Lock()
	defer a.outMu.Unlock()
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(len(body)))
	a.out.Write(hdr[:])
	a.out.Write(body)
	if err := a.out.Flush(); err != nil {
		fmt.Fprintf(os.Stderr, "agent: write: %v\n", err)
		os.Exit(1)
	}
}

// rel maps a request path to a path relative to the workspace, refusing
// anything outside it. os.Root refuses symbolic links that leave it.
func (a *agent) rel(p string) (string, error) {
	if p == "" {
		return "", errors.New("empty path")
	}
	if path.IsAbs(p) {
		r, ok := strings.CutPrefix(path.Clean(p), a.dir)
		if !ok || (r != "" && r[0] != '/') {
			return "", fmt.Errorf("path %q is outside the workspace", p)
		}
		p = strings.TrimPrefix(r, "/")
		if p == "" {
			p = "."
		}
	}
	c := path.Clean(p)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("path %q is outside the workspace", p)
	}
	return c, nil
}

func fsErr(id uint64, err error) *response {
	kind := "fs"
	if errors.Is(err, fs.ErrNotExist) {
		kind = "notexist"
	} else if isEscape(err) {
		kind = "path"
	}
	return &response{ID: id, Err: err.Error(), ErrKind: kind}
}

func (a *agent) read(req *request) *response {
	p, err := a.rel(req.Path)
	if err != nil {
		return &response{ID: req.ID, Err: err.Error(), ErrKind: "path"}
	}
	data, err := a.root.ReadFile(p)
	if err != nil {
		return fsErr(req.ID, err)
	}
	return &response{ID: req.ID, Data: data}
}

func (a *agent) write(req *request) *response {
	p, err := a.rel(req.Path)
	if err != nil {
		return &response{ID: req.ID, Err: err.Error(), ErrKind: "path"}
	}
	if d := path.Dir(p); d != "." {
		if err := a.root.MkdirAll(d, 0o755); err != nil {
			return fsErr(req.ID, err)
		}
	}
	if err := a.root.WriteFile(p, req.Data, 0o644); err != nil {
		return fsErr(req.ID, err)
	}
	return &response{ID: req.ID}
}

// remove deletes a file (or a link) of the workspace, as rm -f does: a
// file that does not exist is no error, a directory is refused.
func (a *agent) remove(req *request) *response {
	p, err := a.rel(req.Path)
	if err != nil {
		return &response{ID: req.ID, Err: err.Error(), ErrKind: "path"}
	}
	if p == "." {
		return &response{ID: req.ID, Err: "cannot remove the workspace", ErrKind: "path"}
	}
	info, err := a.root.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return &response{ID: req.ID}
	}
	if err != nil {
		return fsErr(req.ID, err)
	}
	if info.IsDir() {
		return &response{ID: req.ID, Err: fmt.Sprintf("remove %s: is a directory", p), ErrKind: "fs"}
	}
	if err := a.root.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fsErr(req.ID, err)
	}
	return &response{ID: req.ID}
}

// capBuffer keeps the first max bytes written to it and counts the rest.
type capBuffer struct {
	buf       bytes.Buffer
	max       int
	truncated bool
}

func (c *capBuffer) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); room < len(p) {
		c.truncated = true
		if room > 0 {
			c.buf.Write(p[:room])
		}
		return len(p), nil
	}
	return c.buf.Write(p)
}

// exec runs one command of req in the workspace, one at a time, with a
// fresh build cache layer, and answers with its exit code and output. A
// request the agent refuses, or a command that cannot start, is answered
// with exit code 126 (127 when the program is not found).
func (a *agent) exec(req *request, cancel <-chan struct{}) *response {
	a.execMu.Lock()
	defer a.execMu.Unlock()
	defer func() {
		a.mu.Lock()
		delete(a.running, req.ID)
		a.mu.Unlock()
	}()
	start := time.Now()
	resp := &response{ID: req.ID}
	if len(req.Cmd) == 0 {
		resp.Err, resp.ErrKind = "empty command", "proto"
		return resp
	}
	if req.Dir != "" && !filepath.IsLocal(req.Dir) {
		resp.ExitCode, resp.Stderr = 126, []byte("agent: directory "+strconv.Quote(req.Dir)+" is not in the workspace\n")
		return resp
	}
	layer, err := a.cache.create()
	if err != nil {
		resp.ExitCode, resp.Stderr = 126, []byte("agent: build cache layer: "+err.Error()+"\n")
		return resp
	}
	// The layer goes when the command and everything it started are dead.
	defer a.cache.remove(layer)
	cmd := exec.Command(req.Cmd[0], req.Cmd[1:]...)
	cmd.Dir = filepath.Join(a.dir, req.Dir)
	cmd.Env = append(append(os.Environ(), req.Env...), a.cache.env(layer)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var files []*os.File // parent's ends, closed when done
	outR, outW, err1 := os.Pipe()
	errR, errW, err2 := os.Pipe()
	inR, inW, err3 := os.Pipe()
	if err := errors.Join(err1, err2, err3); err != nil {
		resp.ExitCode, resp.Stderr = 126, []byte(err.Error())
		return resp
	}
	files = append(files, outR, errR, inW)
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	oomBefore := oomKills()
	err = cmd.Start()
	inR.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		resp.ExitCode = 127
		if !errors.Is(err, exec.ErrNotFound) && !errors.Is(err, fs.ErrNotExist) {
			resp.ExitCode = 126
		}
		resp.Stderr = []byte(err.Error() + "\n")
		resp.DurNS = int64(time.Since(start))
		return resp
	}
	werr := supervise(req, cmd, execPipes{outR: outR, errR: errR, inW: inW}, cancel, resp)
	resp.ExitCode = exitCode(cmd.ProcessState, werr)
	if n := oomKills(); n > oomBefore && n >= 0 {
		resp.OOMKilled = true
	}
	resp.DurNS = int64(time.Since(start))
	return resp
}

// execPipes are the parent's ends of a started command's standard streams.
type execPipes struct {
	outR, errR, inW *os.File
}

// supervise feeds the started cmd req's standard input and waits for it to
// exit, killing it, and every process it left, when req's timeout passes
// or cancel closes (which sets resp.TimedOut). It puts the first
// req.MaxOutput bytes of each output in resp, waiting at most two seconds
// for the pipes to drain once the processes are dead, and returns Wait's
// error.
func supervise(req *request, cmd *exec.Cmd, p execPipes, cancel <-chan struct{}, resp *response) error {
	maxOut := req.MaxOutput
	if maxOut <= 0 {
		maxOut = 1 << 20
	}
	stdout, stderr := &capBuffer{max: maxOut}, &capBuffer{max: maxOut}
	pid := cmd.Process.Pid
	// The command, not the agent, is what the OOM killer should choose.
	os.WriteFile("/proc/"+strconv.Itoa(pid)+"/oom_score_adj", []byte("1000"), 0)

	var copies sync.WaitGroup
	copies.Add(2)
	go func() { defer copies.Done(); io.Copy(stdout, p.outR) }()
	go func() { defer copies.Done(); io.Copy(stderr, p.errR) }()
	go func() {
		if len(req.Stdin) > 0 {
			p.inW.Write(req.Stdin)
		}
		p.inW.Close()
	}()
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()

	timeout := time.Duration(req.TimeoutMS) * time.Millisecond
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var werr error
	select {
	case werr = <-waited:
	case <-timer.C:
		resp.TimedOut = true
		killAll(pid)
		werr = <-waited
	case <-cancel:
		resp.TimedOut = true
		killAll(pid)
		werr = <-waited
	}
	// Whatever the command left behind dies with it, so that its pipes close.
	killAll(pid)
	copied := make(chan struct{})
	go func() { copies.Wait(); close(copied) }()
	select {
	case <-copied:
	case <-time.After(2 * time.Second):
		p.outR.Close()
		p.errR.Close()
		<-copied
	}
	resp.Stdout, resp.Stderr = stdout.buf.Bytes(), stderr.buf.Bytes()
	resp.Truncated = stdout.truncated || stderr.truncated
	return werr
}

func exitCode(ps *os.ProcessState, err error) int {
	if ps == nil {
		if err != nil {
			return 126
		}
		return 0
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// killAll kills the process group pgid, then every process of the container
// but the agent and its ancestors, until none is left (a fork bomb keeps
// making new ones for a while).
func killAll(pgid int) {
	syscall.Kill(-pgid, syscall.SIGKILL)
	self := os.Getpid()
	keep := map[int]bool{self: true, 1: true, os.Getppid(): true}
	for range 100 {
		if sweep(keep) == 0 {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// sweep sends SIGKILL to every live process not in keep and says how many.
func sweep(keep map[int]bool) int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || keep[pid] {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// The state follows the command name, which is in parentheses.
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) && (stat[i+2] == 'Z' || stat[i+2] == 'X') {
			continue
		}
		if syscall.Kill(pid, syscall.SIGKILL) == nil {
			n++
		}
	}
	return n
}

// oomKills reads how many processes the kernel's OOM killer has killed in the
// container's memory cgroup (v2, then v1), or -1 when it cannot tell.
func oomKills() int64 {
	for _, f := range []string{"/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control"} {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for line := range strings.SplitSeq(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
				n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				if err == nil {
					return n
				}
			}
		}
	}
	return -1
}
