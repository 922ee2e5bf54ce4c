package envtest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/frognano/frog/env"
)

// Capabilities says which parts of the contract a backend supports beyond
// the core (open, close, path confinement, errors, cancellation).
type Capabilities struct {
	// Exec: commands really run, with a POSIX sh, echo, cat, sleep, ln,
	// head and ls on the PATH.
	Exec bool
	// Files: what WriteFile writes, ReadFile reads back, and sandboxes do
	// not see each other's files.
	Files bool
	// KillsEscapees: processes a command started that left its process
	// group (setsid) die with it too.
	KillsEscapees bool
	// NoNetwork: connections fail. HostIP is an address of this machine
	// that the sandbox would reach if it had a network (for Docker, the
	// bridge's gateway); the suite listens on it. NetProbe makes the
	// command that connects to host:port and exits 0 on success; one
	// connection to an outside address (1.1.1.1:80) is also attempted.
	NoNetwork bool
	HostIP    string
	NetProbe  func(host string, port int) []string
	// ReadOnlyOutside: writes outside the workspace fail.
	ReadOnlyOutside bool
	// PidsLimit: a fork bomb is contained and the sandbox works after it.
	PidsLimit bool
	// OOM: MemoryBomb exceeds the sandbox's memory limit and is reported
	// as OOMKilled, and the sandbox works after it.
	OOM        bool
	MemoryBomb []string
	// Task is given to Open (env/sim needs one); nil means a stand-in.
	Task *env.Task
	// Run labels the sandboxes.
	Run string
}

// Run runs the suite against p.
func Run(t *testing.T, p env.Provider, caps Capabilities) {
	if caps.Task == nil {
		caps.Task = &env.Task{ID: "envtest", File: "main.go", Patch: "package main\n", TestCmd: []string{"sh", "-c", "exit 0"}}
	}
	if caps.Run == "" {
		caps.Run = "envtest"
	}
	s := &suite{p: p, caps: caps}
	var before env.SandboxStats
	stats, hasStats := p.(env.ProviderStats)
	if hasStats {
		before = stats.Stats()
	}
	tests := []struct {
		name string
		need bool
		fn   func(t *testing.T)
	}{
		{"OpenClose", true, s.openClose},
		{"PathEscape", true, s.pathEscape},
		{"CloseCancelled", true, s.closeCancelled},
		{"Concurrent", true, s.concurrent},
		{"Files", caps.Files, s.files},
		{"FilesIsolated", caps.Files, s.filesIsolated},
		{"Exec", caps.Exec, s.exec},
		{"ExecTimeout", caps.Exec, s.execTimeout},
		{"ExecOutputCap", caps.Exec, s.outputCap},
		{"ExecCancel", caps.Exec, s.execCancel},
		{"ExecTreeKilled", caps.Exec && caps.Files, s.treeKilled},
		{"Start", caps.Exec, s.start},
		{"SymlinkEscape", caps.Exec && caps.Files, s.symlinkEscape},
		{"NoNetwork", caps.NoNetwork, s.noNetwork},
		{"ReadOnlyOutside", caps.ReadOnlyOutside, s.readOnlyOutside},
		{"ForkBomb", caps.PidsLimit, s.forkBomb},
		{"MemoryBomb", caps.OOM, s.memoryBomb},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.need {
				t.Skip("backend lacks the capability")
			}
			tc.fn(t)
		})
	}
	if hasStats {
		after := stats.Stats()
		if got, want := after.Live, before.Live; got != want {
			t.Errorf("live sandboxes after the suite = %d, want %d (a leak)", got, want)
		}
	}
}

type suite struct {
	p    env.Provider
	caps Capabilities
	ep   uint64
	mu   sync.Mutex
}

func (s *suite) open(t *testing.T) env.Sandbox {
	t.Helper()
	s.mu.Lock()
	s.ep++
	ep := s.ep
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sb, err := s.p.Open(ctx, env.OpenOptions{Run: s.caps.Run, Episode: ep, Task: s.caps.Task})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := sb.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return sb
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func (s *suite) sh(t *testing.T, sb env.Sandbox, script string) env.ExecResult {
	t.Helper()
	res, err := sb.Exec(ctxT(t), env.ExecOptions{Cmd: []string{"sh", "-c", script}, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatalf("Exec %q: %v", script, err)
	}
	return res
}

func (s *suite) openClose(t *testing.T) {
	ctx := ctxT(t)
	sb := s.open(t)
	if err := sb.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := sb.Close(ctx); err != nil {
		t.Errorf("second Close = %v, want nil (idempotent)", err)
	}
	_, err := sb.Exec(ctx, env.ExecOptions{Cmd: []string{"true"}})
	if !errors.Is(err, env.ErrInfra) {
		t.Errorf("Exec after Close = %v, want an error wrapping env.ErrInfra", err)
	}
	if _, err := sb.ReadFile(ctx, "a.txt"); !errors.Is(err, env.ErrInfra) {
		t.Errorf("ReadFile after Close = %v, want an error wrapping env.ErrInfra", err)
	}
}

func (s *suite) pathEscape(t *testing.T) {
	sb := s.open(t)
	ctx := ctxT(t)
	for _, p := range []string{"", "..", "../x", "a/../../x", "/etc/passwd", "/x", "../../../../etc/passwd", "./../x"} {
		t.Run(strconv.Quote(p), func(t *testing.T) {
			_, err := sb.ReadFile(ctx, p)
			if err == nil || errors.Is(err, env.ErrInfra) {
				t.Errorf("ReadFile(%q) = %v, want an error that does not wrap env.ErrInfra", p, err)
			}
			err = sb.WriteFile(ctx, p, []byte("x"))
			if err == nil || errors.Is(err, env.ErrInfra) {
				t.Errorf("WriteFile(%q) = %v, want an error that does not wrap env.ErrInfra", p, err)
			}
		})
	}
}

func (s *suite) closeCancelled(t *testing.T) {
	sb := s.open(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := sb.Close(ctx); err != nil {
		t.Errorf("Close with a cancelled context = %v, want nil", err)
	}
}

func (s *suite) concurrent(t *testing.T) {
	const n = 6
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			sb, err := s.p.Open(ctx, env.OpenOptions{Run: s.caps.Run, Episode: uint64(1000 + i), Task: s.caps.Task})
			if err != nil {
				errs <- fmt.Errorf("open %d: %w", i, err)
				return
			}
			defer func() {
				if err := sb.Close(context.Background()); err != nil {
					errs <- fmt.Errorf("close %d: %w", i, err)
				}
			}()
			want := []byte(fmt.Sprintf("sandbox %d\n", i))
			if err := sb.WriteFile(ctx, "who", want); err != nil {
				errs <- fmt.Errorf("write %d: %w", i, err)
				return
			}
			if s.caps.Exec {
				res, err := sb.Exec(ctx, env.ExecOptions{Cmd: []string{"cat", "who"}})
				if err != nil {
					errs <- fmt.Errorf("exec %d: %w", i, err)
				} else if !bytes.Equal(res.Stdout, want) {
					errs <- fmt.Errorf("sandbox %d reads %q, want %q", i, res.Stdout, want)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func (s *suite) files(t *testing.T) {
	sb := s.open(t)
	ctx := ctxT(t)
	tests := []struct {
		name, path string
		writes     [][]byte
	}{
		{"simple", "a.txt", [][]byte{[]byte("hello\n")}},
		{"nested dirs", "dir/sub/b.go", [][]byte{[]byte("package sub\n")}},
		{"overwrite shorter", "c.txt", [][]byte{[]byte("a long first version\n"), []byte("short\n")}},
		{"binary", "bin/data", [][]byte{{0, 1, 2, 255, 0, '\n', 0}}},
		{"empty", "empty", [][]byte{{}}},
		{"large", "large.txt", [][]byte{bytes.Repeat([]byte("0123456789abcdef"), 1<<16)}},
		{"dot segments", "./d/../e.txt", [][]byte{[]byte("e\n")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, w := range tc.writes {
				if err := sb.WriteFile(ctx, tc.path, w); err != nil {
					t.Fatalf("WriteFile(%q): %v", tc.path, err)
				}
			}
			got, err := sb.ReadFile(ctx, tc.path)
			if err != nil {
				t.Fatalf("ReadFile(%q): %v", tc.path, err)
			}
			if want := tc.writes[len(tc.writes)-1]; !bytes.Equal(got, want) {
				t.Errorf("ReadFile(%q) = %d bytes %.40q, want %d bytes %.40q", tc.path, len(got), got, len(want), want)
			}
		})
	}
	if !s.caps.Exec {
		return // a simulated workspace has stand-ins for files never written
	}
	if _, err := sb.ReadFile(ctx, "missing.txt"); err == nil || errors.Is(err, env.ErrInfra) {
		t.Errorf("ReadFile of a missing file = %v, want an error that does not wrap env.ErrInfra", err)
	}
}

func (s *suite) filesIsolated(t *testing.T) {
	a, b := s.open(t), s.open(t)
	ctx := ctxT(t)
	if err := a.WriteFile(ctx, "secret.txt", []byte("a's")); err != nil {
		t.Fatal(err)
	}
	if got, err := b.ReadFile(ctx, "secret.txt"); err == nil && string(got) == "a's" {
		t.Errorf("sandbox b reads a's file: %q", got)
	}
}

func (s *suite) exec(t *testing.T) {
	sb := s.open(t)
	ctx := ctxT(t)
	tests := []struct {
		name  string
		cmd   []string
		stdin string
		want  env.ExecResult
	}{
		{"stdout", []string{"echo", "hello"}, "", env.ExecResult{Stdout: []byte("hello\n")}},
		{"stderr and exit code", []string{"sh", "-c", "echo oops >&2; exit 3"}, "", env.ExecResult{ExitCode: 3, Stderr: []byte("oops\n")}},
		{"stdin", []string{"cat"}, "line one\nline two\n", env.ExecResult{Stdout: []byte("line one\nline two\n")}},
		{"no stdin", []string{"cat"}, "", env.ExecResult{}},
		{"working directory is the workspace", []string{"sh", "-c", "echo x > here.txt && cat ./here.txt"}, "", env.ExecResult{Stdout: []byte("x\n")}},
		{"child killed by a signal", []string{"sh", "-c", `exec 2>/dev/null; sh -c 'kill -9 $$'; exit $?`}, "", env.ExecResult{ExitCode: 137}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := sb.Exec(ctx, env.ExecOptions{Cmd: tc.cmd, Stdin: []byte(tc.stdin), Timeout: 30 * time.Second})
			if err != nil {
				t.Fatalf("Exec: %v", err)
			}
			got.Duration = 0
			if diff := cmp.Diff(tc.want, got, cmpBytes); diff != "" {
				t.Errorf("Exec %q (-want +got):\n%s", tc.cmd, diff)
			}
		})
	}
	t.Run("directory and environment", func(t *testing.T) {
		if err := sb.WriteFile(ctx, "d/sub/x.txt", []byte("in sub\n")); err != nil {
			t.Fatal(err)
		}
		s.sh(t, sb, "printf '#!/bin/sh\necho script $FROG_X\n' > d/s.sh && chmod +x d/s.sh")
		got, err := sb.Exec(ctx, env.ExecOptions{Cmd: []string{"sh", "-c", "cat x.txt; ../s.sh"}, Dir: "d/sub", Env: []string{"FROG_X=y"}, Timeout: 30 * time.Second})
		if err != nil {
			t.Fatalf("Exec: %v", err)
		}
		if want := "in sub\nscript y\n"; string(got.Stdout) != want || got.ExitCode != 0 {
			t.Errorf("in d/sub with FROG_X=y: exit %d, stdout %q, stderr %q; want %q", got.ExitCode, got.Stdout, got.Stderr, want)
		}
		// A path with a slash runs relative to Dir.
		if got, err := sb.Exec(ctx, env.ExecOptions{Cmd: []string{"./s.sh"}, Dir: "d", Timeout: 30 * time.Second}); err != nil || string(got.Stdout) != "script\n" {
			t.Errorf("./s.sh in d: %v, exit %d, stdout %q, stderr %q; want %q", err, got.ExitCode, got.Stdout, got.Stderr, "script\n")
		}
		for _, dir := range []string{"..", "/tmp", "d/../../x"} {
			if _, err := sb.Exec(ctx, env.ExecOptions{Cmd: []string{"true"}, Dir: dir}); err == nil || errors.Is(err, env.ErrInfra) {
				t.Errorf("Exec in %q = %v; want an error that is not an infrastructure fault", dir, err)
			}
		}
	})
	t.Run("command not found", func(t *testing.T) {
		got, err := sb.Exec(ctx, env.ExecOptions{Cmd: []string{"frog-no-such-command"}})
		if err != nil {
			t.Fatalf("Exec = %v, want a result", err)
		}
		if got.ExitCode != 127 {
			t.Errorf("exit code = %d, want 127", got.ExitCode)
		}
	})
	t.Run("written file is seen by commands", func(t *testing.T) {
		if err := sb.WriteFile(ctx, "w/f.txt", []byte("from WriteFile")); err != nil {
			t.Fatal(err)
		}
		if res := s.sh(t, sb, "cat w/f.txt"); string(res.Stdout) != "from WriteFile" {
			t.Errorf("cat = %q, want %q", res.Stdout, "from WriteFile")
		}
		s.sh(t, sb, "printf 'from sh' > w/g.txt")
		if got, err := sb.ReadFile(ctx, "w/g.txt"); err != nil || string(got) != "from sh" {
			t.Errorf("ReadFile = %q, %v; want %q", got, err, "from sh")
		}
	})
}

// cmpBytes treats nil and empty byte slices alike.
var cmpBytes = cmp.Comparer(func(a, b []byte) bool { return bytes.Equal(a, b) })

// start checks Starter, where the backend has it: a command that answers
// lines in one process, its exit, Kill, and the sandbox's Close killing it.
func (s *suite) start(t *testing.T) {
	ctx := ctxT(t)
	sb := s.open(t)
	st, ok := sb.(env.Starter)
	if !ok {
		t.Skip("the backend's sandboxes have no Start")
	}
	s.sh(t, sb, "mkdir -p d")
	p, err := st.Start(ctx, env.ExecOptions{Cmd: []string{"sh", "-c", `while read l; do echo "got $l $FROG_X $(basename $PWD)"; echo err >&2; done`}, Dir: "d", Env: []string{"FROG_X=y"}})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer p.Kill()
	out := bufio.NewReader(p.Stdout())
	for _, req := range []string{"a", "b"} {
		if _, err := io.WriteString(p.Stdin(), req+"\n"); err != nil {
			t.Fatalf("writing %q: %v", req, err)
		}
		for _, want := range []string{"got " + req + " y d\n", "err\n"} {
			if got, err := out.ReadString('\n'); got != want || err != nil {
				t.Errorf("after %q read %q, %v; want %q", req, got, err, want)
			}
		}
	}
	p.Kill()
	if rest, err := io.ReadAll(out); len(rest) != 0 {
		t.Errorf("after Kill read %q, %v; want nothing", rest, err)
	}
	waitDone(t, p)
	if got := p.ExitCode(); got != 128+9 {
		t.Errorf("exit code after Kill = %d, want %d", got, 128+9)
	}

	p, err = st.Start(ctx, env.ExecOptions{Cmd: []string{"sh", "-c", "echo bye; exit 3"}})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if got, err := io.ReadAll(p.Stdout()); string(got) != "bye\n" || err != nil {
		t.Errorf("read %q, %v; want %q", got, err, "bye\n")
	}
	waitDone(t, p)
	if got := p.ExitCode(); got != 3 {
		t.Errorf("exit code = %d, want 3", got)
	}
	p.Kill()

	for _, opts := range []env.ExecOptions{{Cmd: []string{"true"}, Dir: ".."}, {Cmd: []string{"frog-no-such-command"}}} {
		if p, err := st.Start(ctx, opts); err == nil || errors.Is(err, env.ErrInfra) {
			if p != nil {
				p.Kill()
			}
			t.Errorf("Start(%q in %q) = %v; want an error that is not an infrastructure fault", opts.Cmd, opts.Dir, err)
		}
	}

	// Close kills what Start started.
	sb2 := s.open(t)
	p, err = sb2.(env.Starter).Start(ctx, env.ExecOptions{Cmd: []string{"sleep", "600"}})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer p.Kill()
	if err := sb2.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	waitDone(t, p)
	if _, err := sb2.(env.Starter).Start(ctx, env.ExecOptions{Cmd: []string{"true"}}); !errors.Is(err, env.ErrClosed) {
		t.Errorf("Start after Close = %v, want ErrClosed", err)
	}
}

func waitDone(t *testing.T, p env.Process) {
	t.Helper()
	select {
	case <-p.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the command did not exit")
	}
}

func (s *suite) execTimeout(t *testing.T) {
	sb := s.open(t)
	start := time.Now()
	res, err := sb.Exec(ctxT(t), env.ExecOptions{Cmd: []string{"sh", "-c", "echo started; sleep 30"}, Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatalf("Exec = %v, want a timed-out result", err)
	}
	if !res.TimedOut {
		t.Errorf("TimedOut = false, want true (result %+v)", res)
	}
	if res.ExitCode == 0 {
		t.Errorf("exit code = 0, want non-zero")
	}
	if string(res.Stdout) != "started\n" {
		t.Errorf("stdout = %q, want the output before the timeout", res.Stdout)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("timed-out Exec took %v", d)
	}
	if r := s.sh(t, sb, "echo ok"); string(r.Stdout) != "ok\n" {
		t.Errorf("after a timeout, echo = %q", r.Stdout)
	}
}

func (s *suite) outputCap(t *testing.T) {
	sb := s.open(t)
	res, err := sb.Exec(ctxT(t), env.ExecOptions{
		Cmd:       []string{"sh", "-c", "head -c 200000 /dev/zero; head -c 3000 /dev/zero >&2; echo done"},
		MaxOutput: 1024,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Stdout) != 1024 || len(res.Stderr) != 1024 || !res.Truncated || res.ExitCode != 0 {
		t.Errorf("got %d bytes of stdout, %d of stderr, truncated %v, exit %d; want 1024, 1024, true, 0",
			len(res.Stdout), len(res.Stderr), res.Truncated, res.ExitCode)
	}
}

func (s *suite) execCancel(t *testing.T) {
	sb := s.open(t)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := sb.Exec(ctx, env.ExecOptions{Cmd: []string{"sleep", "30"}})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Exec under an expiring context = %v, want an error wrapping context.DeadlineExceeded", err)
	}
	if errors.Is(err, env.ErrInfra) {
		t.Errorf("Exec under an expiring context = %v, which wraps env.ErrInfra", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("cancelled Exec took %v", d)
	}
	if r := s.sh(t, sb, "echo ok"); string(r.Stdout) != "ok\n" {
		t.Errorf("after a cancelled command, echo = %q", r.Stdout)
	}
}

func (s *suite) treeKilled(t *testing.T) {
	sb := s.open(t)
	ctx := ctxT(t)
	script := "(sleep 1; echo alive > child.txt) & sh -c '(sleep 1; echo alive > grandchild.txt) &'; "
	if s.caps.KillsEscapees {
		script += "setsid sh -c 'sleep 1; echo alive > escaped.txt' & "
	}
	script += "sleep 30"
	res, err := sb.Exec(ctx, env.ExecOptions{Cmd: []string{"sh", "-c", script}, Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if !res.TimedOut {
		t.Fatalf("TimedOut = false, want true")
	}
	time.Sleep(1500 * time.Millisecond)
	for _, f := range []string{"child.txt", "grandchild.txt", "escaped.txt"} {
		if got, err := sb.ReadFile(ctx, f); err == nil {
			t.Errorf("%s = %q: a process of the timed-out command survived it", f, got)
		}
	}
}

func (s *suite) symlinkEscape(t *testing.T) {
	sb := s.open(t)
	ctx := ctxT(t)
	s.sh(t, sb, "ln -s / root && ln -s ../../../../etc etc && mkdir -p d && ln -s ../.. d/up")
	for _, p := range []string{"root/etc/passwd", "etc/passwd", "d/up/etc/passwd"} {
		if got, err := sb.ReadFile(ctx, p); err == nil || errors.Is(err, env.ErrInfra) {
			t.Errorf("ReadFile(%q) = %.20q, %v; want an error that does not wrap env.ErrInfra", p, got, err)
		}
		if err := sb.WriteFile(ctx, p, []byte("x")); err == nil || errors.Is(err, env.ErrInfra) {
			t.Errorf("WriteFile(%q) = %v; want an error that does not wrap env.ErrInfra", p, err)
		}
	}
}

func (s *suite) noNetwork(t *testing.T) {
	if s.caps.NetProbe == nil {
		t.Skip("no network probe command")
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(s.caps.HostIP, "0"))
	if err != nil {
		t.Fatalf("listen on the host address: %v", err)
	}
	defer ln.Close()
	var accepted sync.WaitGroup
	conns := 0
	accepted.Add(1)
	go func() {
		defer accepted.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns++
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	sb := s.open(t)
	for _, addr := range []struct {
		what string
		host string
		port int
	}{
		{"host address", s.caps.HostIP, port},
		{"loopback of the host", "127.0.0.1", port},
		{"outside address", "1.1.1.1", 80},
	} {
		t.Run(addr.what, func(t *testing.T) {
			res, err := sb.Exec(ctxT(t), env.ExecOptions{Cmd: s.caps.NetProbe(addr.host, addr.port), Timeout: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if res.ExitCode == 0 {
				t.Errorf("connect to %s:%d succeeded: %s%s", addr.host, addr.port, res.Stdout, res.Stderr)
			}
		})
	}
	ln.Close()
	accepted.Wait()
	if conns != 0 {
		t.Errorf("the host listener accepted %d connections from the sandbox", conns)
	}
}

func (s *suite) readOnlyOutside(t *testing.T) {
	sb := s.open(t)
	for _, p := range []string{"/frog-x", "/etc/frog-x", "/bin/frog-x", "/usr/local/go/frog-x", "/go/pkg/mod/frog-x"} {
		res := s.sh(t, sb, "echo x > "+p)
		if res.ExitCode == 0 {
			t.Errorf("writing %s succeeded", p)
		}
	}
	if res := s.sh(t, sb, "echo x > /tmp/frog-x && echo x > frog-x && echo ok"); string(res.Stdout) != "ok\n" {
		t.Errorf("writing /tmp and the workspace failed: %s", res.Stderr)
	}
}

func (s *suite) forkBomb(t *testing.T) {
	sb := s.open(t)
	res, err := sb.Exec(ctxT(t), env.ExecOptions{Cmd: []string{"sh", "-c", "b() { b | b & }; b; sleep 30"}, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatalf("fork bomb: %v", err)
	}
	t.Logf("fork bomb: exit %d, timed out %v, stderr %.200q", res.ExitCode, res.TimedOut, res.Stderr)
	r := s.sh(t, sb, "ps -o pid | wc -l")
	if n, err := strconv.Atoi(strings.TrimSpace(string(r.Stdout))); err != nil || n > 10 {
		t.Errorf("after the fork bomb, ps lists %q processes, want a handful", r.Stdout)
	}
}

func (s *suite) memoryBomb(t *testing.T) {
	sb := s.open(t)
	res, err := sb.Exec(ctxT(t), env.ExecOptions{Cmd: s.caps.MemoryBomb, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatalf("memory bomb: %v", err)
	}
	if !res.OOMKilled || res.ExitCode != 137 {
		t.Errorf("memory bomb: OOMKilled %v, exit %d; want true, 137 (stderr %.200q)", res.OOMKilled, res.ExitCode, res.Stderr)
	}
	if r := s.sh(t, sb, "echo ok"); string(r.Stdout) != "ok\n" {
		t.Errorf("after the memory bomb, echo = %q", r.Stdout)
	}
	if r := s.sh(t, sb, "true"); r.OOMKilled {
		t.Errorf("a command after the memory bomb is reported OOM-killed")
	}
}
