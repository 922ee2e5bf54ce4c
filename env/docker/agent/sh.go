package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"
)

// runSh is sh: mvdan.cc/sh's POSIX interpreter. sh [-eux] [-o opt] -c
// SCRIPT [NAME [ARG...]], sh [-eux] FILE [ARG...], or the script on standard
// input. Other programs run as processes (this binary, by its links, for the
// tools), so the agent's kill of a command's processes reaches them all.
func runSh(p *proc, name string, args []string) int {
	var (
		script  *string
		setOpts []string
	)
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			i++
			break
		}
		if a == "-c" {
			if i+1 >= len(args) {
				return p.fail(2, name, "-c: option requires an argument")
			}
			i++
			script = &args[i]
			continue
		}
		if (a == "-o" || a == "+o") && i+1 < len(args) {
			setOpts = append(setOpts, a, args[i+1])
			i++
			continue
		}
		if len(a) > 1 && (a[0] == '-' || a[0] == '+') {
			for _, c := range a[1:] {
				if c == 'c' {
					if i+1 >= len(args) {
						return p.fail(2, name, "-c: option requires an argument")
					}
					i++
					script = &args[i]
					continue
				}
				if c == 's' || c == 'i' || c == 'l' {
					continue // read from stdin, interactive, login: nothing to do
				}
				setOpts = append(setOpts, string(a[0])+string(c))
			}
			continue
		}
		break
	}
	rest := args[i:]
	var (
		src      io.Reader
		filename = name
	)
	switch {
	case script != nil:
		src = strings.NewReader(*script)
		if len(rest) > 0 {
			filename, rest = rest[0], rest[1:]
		}
	case len(rest) > 0:
		f, err := os.Open(p.path(rest[0]))
		if err != nil {
			return p.fail(127, name, "%v", err)
		}
		defer f.Close()
		src, filename, rest = f, rest[0], rest[1:]
	default:
		src = p.stdin
	}
	prog, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(src, filename)
	if err != nil {
		return p.fail(2, name, "%v", err)
	}
	return interpret(p, prog, append(append(setOpts, "--"), rest...))
}

// interpret runs prog with params (shell options, "--", positional
// parameters) and returns its exit status.
func interpret(p *proc, prog *syntax.File, params []string) int {
	opts := []interp.RunnerOption{
		interp.StdIO(p.stdin, p.stdout, p.stderr),
		interp.Env(expand.ListEnviron(os.Environ()...)),
		interp.Params(params...),
		interp.CallHandler(func(_ context.Context, args []string) ([]string, error) {
			// The interpreter knows kill by name only: the tool of
			// this binary is it.
			if len(args) > 0 && args[0] == "kill" {
				if self, err := os.Executable(); err == nil {
					return append([]string{self}, args...), nil
				}
			}
			return args, nil
		}),
	}
	if p.dir != "" {
		opts = append(opts, interp.Dir(p.dir))
	}
	r, err := interp.New(opts...)
	if err != nil {
		return p.fail(2, "sh", "%v", err)
	}
	err = r.Run(context.Background(), prog)
	var es interp.ExitStatus
	if errors.As(err, &es) {
		return int(es)
	}
	if err != nil {
		fmt.Fprintln(p.stderr, "sh:", err)
		return 1
	}
	return 0
}

// builtin runs one of the shell's builtins (echo, printf, test, [, true,
// false, pwd) as a program.
func builtin(p *proc, name string, args []string) int {
	prog, err := syntax.NewParser().Parse(strings.NewReader("builtin '"+name+"' \"$@\""), name)
	if err != nil {
		return p.fail(2, name, "%v", err)
	}
	return interpret(p, prog, append([]string{"--"}, args...))
}
