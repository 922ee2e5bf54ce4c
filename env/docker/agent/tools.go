package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/u-root/u-root/pkg/core"
	"github.com/u-root/u-root/pkg/core/base64"
	"github.com/u-root/u-root/pkg/core/cat"
	"github.com/u-root/u-root/pkg/core/chmod"
	"github.com/u-root/u-root/pkg/core/cp"
	"github.com/u-root/u-root/pkg/core/ls"
	"github.com/u-root/u-root/pkg/core/mkdir"
	"github.com/u-root/u-root/pkg/core/mv"
	"github.com/u-root/u-root/pkg/core/rm"
	"github.com/u-root/u-root/pkg/core/touch"
	"github.com/u-root/u-root/pkg/core/xargs"
)

// proc is what a tool runs with: its standard streams and its working
// directory ("" is the process's). Tools take it rather than use os.Stdin and
// friends so that tests run them in process.
type proc struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	dir            string
}

func stdio() *proc { return &proc{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr} }

// path resolves name against p's working directory.
func (p *proc) path(name string) string {
	if p.dir == "" || filepath.IsAbs(name) {
		return name
	}
	return filepath.Join(p.dir, name)
}

// fail prints "name: msg" on stderr and returns the exit code.
func (p *proc) fail(code int, name, format string, args ...any) int {
	fmt.Fprintf(p.stderr, name+": "+format+"\n", args...)
	return code
}

// open opens a named input, "-" being standard input.
func (p *proc) open(name string) (io.ReadCloser, error) {
	if name == "-" {
		return io.NopCloser(p.stdin), nil
	}
	return os.Open(p.path(name))
}

// tool is one program of the multi-call binary: it returns its exit code.
type tool func(p *proc, name string, args []string) int

// tools is every program the image links to this binary, by name.
var tools map[string]tool

func init() {
	tools = map[string]tool{
		"sh": runSh, "gocacheprog": runCacheProg,
		// POSIX shell builtins, also as programs (for env, xargs, find -exec).
		"echo": builtin, "printf": builtin, "test": builtin, "[": builtin, "true": builtin, "false": builtin, "pwd": builtin,
		// Text.
		"grep": runGrep, "egrep": runGrep, "fgrep": runGrep, "sed": runSed, "diff": runDiff,
		"head": runHead, "tail": runTail, "wc": runWc, "sort": runSort, "uniq": runUniq, "cut": runCut,
		"tr": runTr, "tee": runTee, "seq": runSeq, "tac": runTac, "yes": runYes,
		"sha256sum": runSum, "sha1sum": runSum, "md5sum": runSum,
		// Files.
		"ln": runLn, "readlink": runReadlink, "realpath": runReadlink, "basename": runBasename, "dirname": runDirname,
		"rmdir": runRmdir, "stat": runStat, "find": runFind, "mktemp": runMktemp,
		// Processes and the system.
		"env": runEnv, "printenv": runPrintenv, "sleep": runSleep, "kill": runKill, "ps": runPs, "setsid": runSetsid,
		"timeout": runTimeout, "nc": runNc, "dd": runDd, "which": runWhich, "uname": runUname, "id": runID,
		"nproc": runNproc, "date": runDate,
	}
	for name, mk := range map[string]func() core.Command{
		"cat": func() core.Command { return cat.New() }, "chmod": func() core.Command { return chmod.New() },
		"cp": func() core.Command { return cp.New() },
		"ls": func() core.Command { return ls.New() }, "mkdir": func() core.Command { return mkdir.New() },
		"mv": func() core.Command { return mv.New() }, "rm": func() core.Command { return rm.New() },
		"touch": func() core.Command { return touch.New() }, "xargs": func() core.Command { return xargs.New() },
		"base64": func() core.Command { return base64.New() },
	} {
		tools[name] = uroot(mk)
	}
}

// uroot runs one of u-root's core commands.
func uroot(mk func() core.Command) tool {
	return func(p *proc, name string, args []string) int {
		c := mk()
		c.SetIO(p.stdin, p.stdout, p.stderr)
		c.SetWorkingDir(p.dir)
		c.SetLookupEnv(os.LookupEnv)
		if err := c.RunContext(context.Background(), args...); err != nil {
			return p.fail(1, name, "%v", err)
		}
		return 0
	}
}

// opt is one parsed option: its name (a letter, or a long name) and value.
type opt struct{ name, val string }

// getopt parses GNU-style options. spec lists the short options, a letter
// followed by ':' taking a value (attached, -n5, or next, -n 5); long lists
// the long ones, a trailing '=' taking a value (--x=v or --x v). "--" ends
// the options; with permute, options may follow operands (GNU), else the
// first operand ends them (POSIX). "-" alone is an operand.
func getopt(args []string, spec string, long []string, permute bool) (opts []opt, operands []string, err error) {
	takes := func(c byte) (known, value bool) {
		i := strings.IndexByte(spec, c)
		if i < 0 || c == ':' {
			return false, false
		}
		return true, i+1 < len(spec) && spec[i+1] == ':'
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return opts, append(operands, args[i+1:]...), nil
		case strings.HasPrefix(a, "--"):
			n, v, hasV := strings.Cut(a[2:], "=")
			var match string
			value := false
			for _, l := range long {
				ln, lv := strings.CutSuffix(l, "=")
				if ln == n {
					match, value = ln, lv
					break
				}
			}
			if match == "" {
				return nil, nil, fmt.Errorf("unknown option --%s", n)
			}
			if value && !hasV {
				if i+1 >= len(args) {
					return nil, nil, fmt.Errorf("option --%s needs a value", n)
				}
				i++
				v = args[i]
			}
			opts = append(opts, opt{match, v})
		case len(a) > 1 && a[0] == '-':
			for j := 1; j < len(a); j++ {
				known, value := takes(a[j])
				if !known {
					return nil, nil, fmt.Errorf("unknown option -%c", a[j])
				}
				if !value {
					opts = append(opts, opt{string(a[j]), ""})
					continue
				}
				v := a[j+1:]
				if v == "" {
					if i+1 >= len(args) {
						return nil, nil, fmt.Errorf("option -%c needs a value", a[j])
					}
					i++
					v = args[i]
				}
				opts = append(opts, opt{string(a[j]), v})
				break
			}
		default:
			if !permute {
				return opts, append(operands, args[i:]...), nil
			}
			operands = append(operands, a)
		}
	}
	return opts, operands, nil
}

// eachLine calls f with every line of r, without its newline; last says
// whether the line ended without one.
func eachLine(r io.Reader, f func(line string, last bool) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadString('\n')
		if len(line) > 0 {
			noNL := !strings.HasSuffix(line, "\n")
			if ferr := f(strings.TrimSuffix(line, "\n"), noNL); ferr != nil {
				return ferr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// errStop ends an eachLine early without an error.
var errStop = errors.New("stop")

// inputs calls f with each named input ("-" or none: standard input) and
// reports whether all could be read; errors are printed as name's.
func (p *proc) inputs(name string, files []string, f func(file string, r io.Reader) error) bool {
	if len(files) == 0 {
		files = []string{"-"}
	}
	ok := true
	for _, file := range files {
		r, err := p.open(file)
		if err != nil {
			p.fail(1, name, "%v", err)
			ok = false
			continue
		}
		err = f(file, r)
		r.Close()
		if err != nil && !errors.Is(err, errStop) {
			p.fail(1, name, "%s: %v", file, err)
			ok = false
		}
	}
	return ok
}

func status(ok bool) int {
	if ok {
		return 0
	}
	return 1
}
