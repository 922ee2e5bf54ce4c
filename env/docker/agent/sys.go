package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// runEnv is env: env [-i] [-u NAME]... [NAME=VALUE]... [COMMAND [ARG]...].
// The command replaces env (execve), as in `exec env A=B go test`.
func runEnv(p *proc, name string, args []string) int {
	environ := os.Environ()
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-i" || a == "-" || a == "--ignore-environment":
			environ = nil
		case (a == "-u" || a == "--unset") && i+1 < len(args):
			i++
			environ = unsetEnv(environ, args[i])
		case strings.HasPrefix(a, "-u") && len(a) > 2:
			environ = unsetEnv(environ, a[2:])
		case a == "--":
			i++
			goto vars
		case strings.HasPrefix(a, "-") && len(a) > 1:
			return p.fail(125, name, "invalid option %q", a)
		default:
			goto vars
		}
	}
vars:
	for ; i < len(args) && strings.Contains(args[i], "=") && !strings.HasPrefix(args[i], "="); i++ {
		k, _, _ := strings.Cut(args[i], "=")
		environ = append(unsetEnv(environ, k), args[i])
	}
	if i == len(args) {
		for _, kv := range environ {
			fmt.Fprintln(p.stdout, kv)
		}
		return 0
	}
	return execve(p, name, args[i:], environ)
}

func unsetEnv(environ []string, key string) []string {
	out := environ[:0:0]
	for _, kv := range environ {
		if k, _, _ := strings.Cut(kv, "="); k != key {
			out = append(out, kv)
		}
	}
	return out
}

// lookPath finds file on the PATH of environ.
func lookPath(file string, environ []string) (string, error) {
	if strings.Contains(file, "/") {
		return file, nil
	}
	path := ""
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for dir := range strings.SplitSeq(path, ":") {
		if dir == "" {
			dir = "."
		}
		f := filepath.Join(dir, file)
		if fi, err := os.Stat(f); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return f, nil
		}
	}
	return "", fmt.Errorf("%s: %w", file, exec.ErrNotFound)
}

// execve replaces this process with argv; it returns only on failure (126
// not executable, 127 not found).
func execve(p *proc, name string, argv, environ []string) int {
	path, err := lookPath(argv[0], environ)
	if err != nil {
		return p.fail(127, name, "'%s': No such file or directory", argv[0])
	}
	err = syscall.Exec(path, argv, environ)
	if errors.Is(err, syscall.ENOENT) {
		return p.fail(127, name, "'%s': No such file or directory", argv[0])
	}
	return p.fail(126, name, "'%s': %v", argv[0], err)
}

// runCmd runs argv as a child with attr and returns its exit status, as a
// shell would report it (128+signal for a signal).
func runCmd(p *proc, name string, argv []string, attr *syscall.SysProcAttr, timeout time.Duration, sig syscall.Signal) int {
	path, err := lookPath(argv[0], os.Environ())
	if err != nil {
		return p.fail(127, name, "%v", err)
	}
	cmd := exec.Command(path, argv[1:]...)
	cmd.Args[0] = argv[0]
	cmd.Stdin, cmd.Stdout, cmd.Stderr, cmd.Dir = p.stdin, p.stdout, p.stderr, p.dir
	cmd.SysProcAttr = attr
	if err := cmd.Start(); err != nil {
		return p.fail(126, name, "%v", err)
	}
	timedOut := false
	if timeout > 0 {
		t := time.AfterFunc(timeout, func() { timedOut = true; cmd.Process.Signal(sig) })
		defer t.Stop()
	}
	err = cmd.Wait()
	if timedOut {
		return 124
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	if err != nil && cmd.ProcessState == nil {
		return 126
	}
	return cmd.ProcessState.ExitCode()
}

// runSetsid is setsid: COMMAND [ARG]... in a new session.
func runSetsid(p *proc, name string, args []string) int {
	if len(args) > 0 && (args[0] == "-f" || args[0] == "-w") {
		args = args[1:]
	}
	if len(args) == 0 {
		return p.fail(1, name, "usage: setsid COMMAND [ARG]...")
	}
	return runCmd(p, name, args, &syscall.SysProcAttr{Setsid: true}, 0, 0)
}

// runTimeout is timeout: timeout [-s SIG] DURATION COMMAND [ARG]...; 124
// when the command timed out.
func runTimeout(p *proc, name string, args []string) int {
	sig := syscall.SIGTERM
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		switch a := args[0]; {
		case (a == "-s" || a == "--signal") && len(args) > 1:
			s, ok := signalByName(args[1])
			if !ok {
				return p.fail(125, name, "invalid signal %q", args[1])
			}
			sig, args = s, args[1:]
		case strings.HasPrefix(a, "--signal="):
			s, ok := signalByName(strings.TrimPrefix(a, "--signal="))
			if !ok {
				return p.fail(125, name, "invalid signal %q", a)
			}
			sig = s
		case a == "--preserve-status" || a == "--foreground":
		default:
			return p.fail(125, name, "invalid option %q", a)
		}
		args = args[1:]
	}
	if len(args) < 2 {
		return p.fail(125, name, "usage: timeout [-s SIG] DURATION COMMAND [ARG]...")
	}
	d, err := duration(args[0])
	if err != nil {
		return p.fail(125, name, "%v", err)
	}
	return runCmd(p, name, args[1:], nil, d, sig)
}

// duration parses sleep's and timeout's NUMBER[smhd] (or infinity).
func duration(s string) (time.Duration, error) {
	if s == "infinity" {
		return 1<<63 - 1, nil
	}
	mult := time.Second
	for suf, m := range map[string]time.Duration{"s": time.Second, "m": time.Minute, "h": time.Hour, "d": 24 * time.Hour} {
		if t, ok := strings.CutSuffix(s, suf); ok {
			s, mult = t, m
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 {
		return 0, fmt.Errorf("invalid time interval %q", s)
	}
	return time.Duration(f * float64(mult)), nil
}

// runSleep is sleep: sleep NUMBER[smhd]... (summed), or infinity.
func runSleep(p *proc, name string, args []string) int {
	if len(args) == 0 {
		return p.fail(1, name, "missing operand")
	}
	var total time.Duration
	for _, a := range args {
		d, err := duration(a)
		if err != nil {
			return p.fail(1, name, "%v", err)
		}
		total += d
	}
	time.Sleep(total)
	return 0
}

var signals = map[string]syscall.Signal{
	"HUP": syscall.SIGHUP, "INT": syscall.SIGINT, "QUIT": syscall.SIGQUIT, "KILL": syscall.SIGKILL,
	"TERM": syscall.SIGTERM, "USR1": syscall.SIGUSR1, "USR2": syscall.SIGUSR2, "STOP": syscall.SIGSTOP,
	"CONT": syscall.SIGCONT, "ALRM": syscall.SIGALRM, "PIPE": syscall.SIGPIPE, "CHLD": syscall.SIGCHLD,
}

func signalByName(s string) (syscall.Signal, bool) {
	if n, err := strconv.Atoi(s); err == nil && n >= 0 && n < 65 {
		return syscall.Signal(n), true
	}
	sig, ok := signals[strings.TrimPrefix(strings.ToUpper(s), "SIG")]
	return sig, ok
}

// runKill is kill: kill [-s SIG | -SIG] PID... and kill -l.
func runKill(p *proc, name string, args []string) int {
	sig := syscall.SIGTERM
	if len(args) > 0 && args[0] == "-l" {
		var names []string
		for n := range signals {
			names = append(names, n)
		}
		sort.Strings(names)
		fmt.Fprintln(p.stdout, strings.Join(names, " "))
		return 0
	}
	if len(args) > 1 && args[0] == "-s" {
		s, ok := signalByName(args[1])
		if !ok {
			return p.fail(1, name, "invalid signal %q", args[1])
		}
		sig, args = s, args[2:]
	} else if len(args) > 0 && strings.HasPrefix(args[0], "-") && args[0] != "--" {
		if _, err := strconv.Atoi(args[0]); err != nil || len(args) > 1 {
			s, ok := signalByName(args[0][1:])
			if !ok {
				return p.fail(1, name, "invalid signal %q", args[0])
			}
			sig, args = s, args[1:]
		}
	}
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		return p.fail(1, name, "usage: kill [-s SIG | -SIG] PID...")
	}
	ok := true
	for _, a := range args {
		pid, err := strconv.Atoi(a)
		if err != nil {
			p.fail(1, name, "invalid pid %q", a)
			ok = false
			continue
		}
		if err := syscall.Kill(pid, sig); err != nil {
			p.fail(1, name, "(%d): %v", pid, err)
			ok = false
		}
	}
	return status(ok)
}

// procInfo is what ps shows of a process.
type procInfo struct {
	pid, ppid   int
	state, comm string
	args        string
}

func readProc(pid int) (procInfo, bool) {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procInfo{}, false
	}
	s := string(stat)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return procInfo{}, false
	}
	f := strings.Fields(s[end+1:])
	if len(f) < 2 {
		return procInfo{}, false
	}
	pi := procInfo{pid: pid, comm: s[open+1 : end], state: f[0]}
	pi.ppid, _ = strconv.Atoi(f[1])
	cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	pi.args = strings.TrimSpace(strings.ReplaceAll(string(cmdline), "\x00", " "))
	if pi.args == "" {
		pi.args = "[" + pi.comm + "]"
	}
	return pi, true
}

// runPs is ps: every process of the container (-e, -A, aux and the like
// are accepted and change nothing), with -o a comma-separated list of pid,
// ppid, stat (or s, state), comm, args (or cmd, command).
func runPs(p *proc, name string, args []string) int {
	cols := []string{"pid", "stat", "args"}
	for i := 0; i < len(args); i++ {
		if args[i] == "-o" && i+1 < len(args) {
			cols = strings.Split(args[i+1], ",")
			i++
		} else if v, ok := strings.CutPrefix(args[i], "-o"); ok && v != "" {
			cols = strings.Split(v, ",")
		}
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return p.fail(1, name, "%v", err)
	}
	var procs []procInfo
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			if pi, ok := readProc(pid); ok {
				procs = append(procs, pi)
			}
		}
	}
	sort.Slice(procs, func(i, j int) bool { return procs[i].pid < procs[j].pid })
	headers := map[string]string{"pid": "PID", "ppid": "PPID", "stat": "STAT", "s": "S", "state": "S", "comm": "COMMAND", "args": "COMMAND", "cmd": "CMD", "command": "COMMAND"}
	for _, c := range cols {
		if headers[c] == "" {
			return p.fail(1, name, "unknown column %q", c)
		}
	}
	line := func(vals []string) {
		fmt.Fprintln(p.stdout, strings.TrimRight(strings.Join(vals, " "), " "))
	}
	var hdr []string
	for _, c := range cols {
		h := headers[c]
		if c == "pid" || c == "ppid" {
			h = fmt.Sprintf("%5s", h)
		}
		hdr = append(hdr, h)
	}
	line(hdr)
	for _, pi := range procs {
		var vals []string
		for _, c := range cols {
			switch c {
			case "pid":
				vals = append(vals, fmt.Sprintf("%5d", pi.pid))
			case "ppid":
				vals = append(vals, fmt.Sprintf("%5d", pi.ppid))
			case "stat", "s", "state":
				vals = append(vals, pi.state)
			case "comm":
				vals = append(vals, pi.comm)
			default:
				vals = append(vals, pi.args)
			}
		}
		line(vals)
	}
	return 0
}

// runNc is nc's client: nc [-w SECS] [-z] HOST PORT: stdin to the
// connection, the connection to stdout; exit 1 when it cannot connect.
func runNc(p *proc, name string, args []string) int {
	opts, ops, err := getopt(args, "w:zvnq:", nil, true)
	if err != nil {
		return p.fail(1, name, "%v", err)
	}
	timeout, zero := 10*time.Second, false
	for _, o := range opts {
		switch o.name {
		case "w":
			if timeout, err = duration(o.val); err != nil {
				return p.fail(1, name, "%v", err)
			}
		case "z":
			zero = true
		}
	}
	if len(ops) != 2 {
		return p.fail(1, name, "usage: nc [-w SECS] [-z] HOST PORT")
	}
	conn, err := net.DialTimeout("tcp", net.JoinHostPort(ops[0], ops[1]), timeout)
	if err != nil {
		return p.fail(1, name, "%v", err)
	}
	defer conn.Close()
	if zero {
		return 0
	}
	done := make(chan struct{})
	go func() {
		io.Copy(p.stdout, conn)
		close(done)
	}()
	io.Copy(conn, p.stdin)
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.CloseWrite()
	}
	select {
	case <-done:
	case <-time.After(timeout):
	}
	return 0
}

// runDd is dd: if=, of=, bs=, ibs=, obs=, count=, skip=, seek=, conv=notrunc,
// status=none|noxfer|progress. The whole block is held in memory, as dd
// does.
func runDd(p *proc, name string, args []string) int {
	kv := map[string]string{}
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		if !ok {
			return p.fail(1, name, "unrecognized operand %q", a)
		}
		kv[k] = v
	}
	num := func(k string, def int64) (int64, error) {
		v, ok := kv[k]
		if !ok {
			return def, nil
		}
		return size(v)
	}
	bs, err1 := num("bs", 512)
	count, err2 := num("count", -1)
	skip, err3 := num("skip", 0)
	seek, err4 := num("seek", 0)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return p.fail(1, name, "%v", err)
	}
	if bs <= 0 {
		return p.fail(1, name, "invalid block size")
	}
	var in io.Reader = p.stdin
	if f, ok := kv["if"]; ok {
		fh, err := os.Open(p.path(f))
		if err != nil {
			return p.fail(1, name, "%v", err)
		}
		defer fh.Close()
		in = fh
	}
	var out io.Writer = p.stdout
	if f, ok := kv["of"]; ok {
		flags := os.O_WRONLY | os.O_CREATE
		if !strings.Contains(kv["conv"], "notrunc") && seek == 0 {
			flags |= os.O_TRUNC
		}
		fh, err := os.OpenFile(p.path(f), flags, 0o644)
		if err != nil {
			return p.fail(1, name, "%v", err)
		}
		defer fh.Close()
		if seek > 0 {
			fh.Seek(seek*bs, io.SeekStart)
		}
		out = fh
	}
	buf := make([]byte, bs)
	if skip > 0 {
		if _, err := io.CopyN(io.Discard, in, skip*bs); err != nil {
			return p.fail(1, name, "%v", err)
		}
	}
	start := time.Now()
	var full, partial, total int64
	for count < 0 || full+partial < count {
		n, err := io.ReadFull(in, buf)
		if n > 0 {
			if _, werr := out.Write(buf[:n]); werr != nil {
				return p.fail(1, name, "%v", werr)
			}
			total += int64(n)
			if n == len(buf) {
				full++
			} else {
				partial++
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				break
			}
			return p.fail(1, name, "%v", err)
		}
	}
	if kv["status"] != "none" {
		fmt.Fprintf(p.stderr, "%d+%d records in\n%d+%d records out\n", full, partial, full, partial)
		if kv["status"] != "noxfer" {
			fmt.Fprintf(p.stderr, "%d bytes copied, %.6f s\n", total, time.Since(start).Seconds())
		}
	}
	return 0
}

// runWhich is which: which [-a] NAME...
func runWhich(p *proc, name string, args []string) int {
	all := false
	if len(args) > 0 && args[0] == "-a" {
		all, args = true, args[1:]
	}
	ok := true
	for _, a := range args {
		found := false
		for dir := range strings.SplitSeq(os.Getenv("PATH"), ":") {
			f := filepath.Join(dir, a)
			if fi, err := os.Stat(f); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
				fmt.Fprintln(p.stdout, f)
				found = true
				if !all {
					break
				}
			}
		}
		ok = ok && found
	}
	return status(ok)
}

// runUname is uname: uname [-asnrvmo].
func runUname(p *proc, name string, args []string) int {
	var u syscall.Utsname
	if err := syscall.Uname(&u); err != nil {
		return p.fail(1, name, "%v", err)
	}
	str := func(b [65]int8) string {
		var s []byte
		for _, c := range b {
			if c == 0 {
				break
			}
			s = append(s, byte(c))
		}
		return string(s)
	}
	fields := map[byte]string{'s': str(u.Sysname), 'n': str(u.Nodename), 'r': str(u.Release), 'v': str(u.Version), 'm': str(u.Machine), 'o': "GNU/Linux"}
	var out []string
	flags := ""
	for _, a := range args {
		flags += strings.TrimPrefix(a, "-")
	}
	if flags == "" {
		flags = "s"
	}
	if strings.Contains(flags, "a") {
		flags = "snrvmo"
	}
	for _, c := range []byte("snrvmo") {
		if strings.IndexByte(flags, c) >= 0 {
			out = append(out, fields[c])
		}
	}
	fmt.Fprintln(p.stdout, strings.Join(out, " "))
	return 0
}

// runID is id: id [-u | -g] [-n].
func runID(p *proc, _ string, args []string) int {
	uid, gid := os.Getuid(), os.Getgid()
	flags := strings.Join(args, "")
	switch {
	case strings.Contains(flags, "u"):
		fmt.Fprintln(p.stdout, uid)
	case strings.Contains(flags, "g"):
		fmt.Fprintln(p.stdout, gid)
	default:
		fmt.Fprintf(p.stdout, "uid=%d gid=%d\n", uid, gid)
	}
	return 0
}

// runNproc is nproc: the CPUs this process may use.
func runNproc(p *proc, _ string, _ []string) int {
	fmt.Fprintln(p.stdout, runtime.NumCPU())
	return 0
}

// runDate is date: date [-u] [+%s | +FORMAT with %Y %m %d %H %M %S %s %N].
func runDate(p *proc, _ string, args []string) int {
	now := time.Now()
	format := ""
	for _, a := range args {
		switch {
		case a == "-u" || a == "--utc":
			now = now.UTC()
		case strings.HasPrefix(a, "+"):
			format = a[1:]
		}
	}
	if format == "" {
		fmt.Fprintln(p.stdout, now.Format("Mon Jan _2 15:04:05 MST 2006"))
		return 0
	}
	r := strings.NewReplacer("%Y", now.Format("2006"), "%m", now.Format("01"), "%d", now.Format("02"),
		"%H", now.Format("15"), "%M", now.Format("04"), "%S", now.Format("05"), "%s", strconv.FormatInt(now.Unix(), 10),
		"%N", fmt.Sprintf("%09d", now.Nanosecond()), "%F", now.Format("2006-01-02"), "%T", now.Format("15:04:05"), "%%", "%")
	fmt.Fprintln(p.stdout, r.Replace(format))
	return 0
}

// runPrintenv is printenv: every variable, or the values of those named.
func runPrintenv(p *proc, _ string, args []string) int {
	if len(args) == 0 {
		for _, kv := range os.Environ() {
			fmt.Fprintln(p.stdout, kv)
		}
		return 0
	}
	ok := true
	for _, a := range args {
		v, set := os.LookupEnv(a)
		if set {
			fmt.Fprintln(p.stdout, v)
		}
		ok = ok && set
	}
	return status(ok)
}
