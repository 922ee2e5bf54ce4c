package gotest

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/frognano/frog/env"
)

// RunIn runs binary bin (relative to dir) in the workspace directory dir
// with extra environment variables.
func RunIn(ctx context.Context, sb env.Sandbox, dir, bin string, vars []string, timeout time.Duration, args ...string) (Result, error) {
	r, err := sb.Exec(ctx, env.ExecOptions{Cmd: append([]string{bin}, args...), Dir: dir, Env: vars, Timeout: timeout, MaxOutput: MaxOutput})
	if err != nil {
		return Result{}, err
	}
	return execResult(r), nil
}

// ExecIn runs argv at the workspace root of sb, its output capped at
// MaxOutput; a time-out is exit -1. An error is a fault of the sandbox
// (env.ErrInfra) or ctx's end.
func ExecIn(ctx context.Context, sb env.Sandbox, timeout time.Duration, argv ...string) (Result, error) {
	r, err := sb.Exec(ctx, env.ExecOptions{Cmd: argv, Timeout: timeout, MaxOutput: MaxOutput})
	if err != nil {
		return Result{}, err
	}
	return execResult(r), nil
}

func execResult(r env.ExecResult) Result {
	res := Result{Exit: r.ExitCode, Out: append(r.Stdout, r.Stderr...), TimedOut: r.TimedOut, Wall: r.Duration}
	if r.TimedOut {
		res.Exit = -1
	}
	return res
}

// WriteOverlay writes a schema's files and its overlay file into sb.
func WriteOverlay(ctx context.Context, sb env.Sandbox, sc *Schema) (string, error) {
	const dir = ".frog/ov"
	replace := map[string]string{}
	for rel, data := range sc.Files {
		dst := path.Join(dir, rel)
		if err := sb.WriteFile(ctx, dst, data); err != nil {
			return "", fmt.Errorf("write schema: %w", err)
		}
		replace[rel] = dst
	}
	data, err := json.Marshal(map[string]map[string]string{"Replace": replace})
	if err != nil {
		return "", err
	}
	ov := dir + ".json"
	return ov, sb.WriteFile(ctx, ov, data)
}

// Env makes builds of a foreign module offline and reproducible.
var Env = []string{"GOWORK=off", "GOFLAGS=", "GOTOOLCHAIN=local", "GOPROXY=off", "CGO_ENABLED=0"}

// MaxOutput caps what a command's output may be; test output of big
// packages runs to megabytes.
const MaxOutput = 32 << 20

// ChattyArgs are a test binary's arguments to run the named top-level
// tests once, within timeout, reporting as go test's -json reads them
// (parseChatty).
func ChattyArgs(timeout time.Duration, tests []string) []string {
	return []string{"-test.v=test2json", "-test.count=1", "-test.paniconexit0", "-test.timeout", timeout.String(), "-test.run", RunRegexp(tests)}
}

// UpTo is the path from package directory rel back to the module root.
func UpTo(rel string) string {
	rel = strings.Trim(strings.TrimPrefix(rel, "."), "/")
	if rel == "" {
		return ""
	}
	return strings.Repeat("../", strings.Count(rel, "/")+1)
}

// ShellQuote quotes s for sh, when it has to.
func ShellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./=-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// FirstLines is the first n lines of s, trimmed.
func FirstLines(s string, n int) string {
	lines := strings.SplitN(strings.TrimSpace(s), "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "\n")
}
