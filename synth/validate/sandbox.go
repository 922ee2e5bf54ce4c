package validate

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// How the validator uses its sandbox: the module is copied to the
// workspace root; frog's own files (overlays, test binaries, cover
// profiles) live under .frog/, which the go command ignores. Go commands
// run at the module root with the environment goEnv; test binaries run in
// their package's directory, as go test runs them.

// goEnv makes builds of a foreign module offline and reproducible.
var goEnv = []string{"GOWORK=off", "GOFLAGS=", "GOTOOLCHAIN=local", "GOPROXY=off", "CGO_ENABLED=0"}

// maxOutput caps what a command's output may be; test output of big
// packages runs to megabytes.
const maxOutput = 32 << 20

func absDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("module dir %s: %w", dir, err)
	}
	if st, err := os.Stat(abs); err != nil || !st.IsDir() {
		return "", fmt.Errorf("module dir %s: not a directory", dir)
	}
	return abs, nil
}

// copyModule copies the module's regular files (not .git) into the
// sandbox, once.
func (v *Validator) copyModule(ctx context.Context) error {
	if v.copied {
		return nil
	}
	err := filepath.WalkDir(v.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != v.dir && (d.Name() == ".git" || d.Name() == ".frog") {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(v.dir, p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return v.sb.WriteFile(ctx, v.path(filepath.ToSlash(rel)), data)
	})
	if err != nil {
		return fmt.Errorf("copy module to the sandbox: %w", err)
	}
	v.copied = true
	return nil
}

// findRoot learns, once, the module's directory in the sandbox as the go
// command sees it: test output (panic traces, a test's own stack dumps)
// names files by absolute paths under it, a temporary directory of the
// validating sandbox that an agent's workspace does not have.
func (v *Validator) findRoot(ctx context.Context) {
	if v.root != "" {
		return
	}
	r, err := v.goCmd(ctx, "env", "GOMOD")
	if err != nil || r.exit != 0 {
		v.log.Debug().Err(err).Int("exit", r.exit).Msg("go env GOMOD failed: failure output keeps absolute paths")
		return
	}
	out := strings.TrimSpace(string(r.out))
	if gomod := out[strings.LastIndexByte(out, '\n')+1:]; path.IsAbs(gomod) && path.Base(gomod) == "go.mod" {
		v.root = path.Dir(gomod) + "/"
	}
}

// relPaths names the files of test output under the module's directory
// relative to the module, as a problem statement should: what the agent's
// workspace holds at those paths.
func (v *Validator) relPaths(out string) string {
	if v.root == "" || v.root == "/" {
		return out
	}
	return strings.ReplaceAll(out, v.root, "")
}

// path is the workspace path of module-relative p.
func (v *Validator) path(p string) string {
	if v.cfg.Workdir == "" {
		return p
	}
	return path.Join(v.cfg.Workdir, p)
}

// goCmd runs the go command at the module root.
func (v *Validator) goCmd(ctx context.Context, args ...string) (runResult, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "cd %s && exec env", shellQuote(v.path(".")))
	for _, a := range slices.Concat(goEnv, []string{"go"}, args) {
		b.WriteString(" " + shellQuote(a))
	}
	return execIn(ctx, v.sb, v.cfg.BuildTimeout, "sh", "-c", b.String())
}

// runBinary runs the test binary bin (module-relative) in package directory
// rel with FROG_MUTANT set to mutant (unset for 0).
func (v *Validator) runBinary(ctx context.Context, rel, bin string, mutant int, timeout time.Duration, args ...string) (runResult, error) {
	var vars []string
	if mutant != 0 {
		vars = []string{"FROG_MUTANT=" + strconv.Itoa(mutant)}
	}
	return runIn(ctx, v.sb, v.path(rel), upTo(rel)+bin, vars, timeout, args...)
}

// runTests runs the named top-level tests of schema binary bin for mutant.
// The binary's own -test.timeout fires first; the sandbox's, a second
// later, is the backstop.
func (v *Validator) runTests(ctx context.Context, rel, bin string, mutant int, timeout time.Duration, tests []string) (testRun, error) {
	r, err := v.runBinary(ctx, rel, bin, mutant, timeout+time.Second, chattyArgs(timeout, tests)...)
	if err != nil {
		return testRun{}, fmt.Errorf("test mutant %d in %s: %w", mutant, rel, err)
	}
	return parseChatty(r), nil
}

// chattyArgs are a test binary's arguments to run the named top-level
// tests once, within timeout, reporting as go test's -json reads them
// (parseChatty).
func chattyArgs(timeout time.Duration, tests []string) []string {
	return []string{"-test.v=test2json", "-test.count=1", "-test.paniconexit0", "-test.timeout", timeout.String(), "-test.run", runRegexp(tests)}
}

// writeOverlay writes the schema's files under .frog/ov and the overlay
// file that puts them in place of the originals, and returns the overlay
// file's path (module-relative, as are the paths in it).
func (v *Validator) writeOverlay(ctx context.Context, sc *schema) (string, error) {
	const dir = ".frog/ov" // one schema at a time: each overwrites the last
	replace := map[string]string{}
	for rel, data := range sc.files {
		dst := path.Join(dir, rel)
		if err := v.sb.WriteFile(ctx, v.path(dst), data); err != nil {
			return "", fmt.Errorf("write schema: %w", err)
		}
		replace[rel] = dst
	}
	data, err := json.Marshal(map[string]map[string]string{"Replace": replace})
	if err != nil {
		return "", err
	}
	ov := dir + ".json"
	if err := v.sb.WriteFile(ctx, v.path(ov), data); err != nil {
		return "", fmt.Errorf("write overlay: %w", err)
	}
	return ov, nil
}

var diagLine = regexp.MustCompile(`([A-Za-z0-9_.\-]+\.go):([0-9]+):(?:[0-9]+:)? ?(.*)`)

// attribute maps compiler or vet messages to the mutants whose copies they
// are about. unexplained reports a message about any other line, or a
// failure with no message at all.
func attribute(sc *schema, out string) (blamed map[int]string, unexplained bool) {
	blamed = map[int]string{}
	for _, l := range strings.Split(out, "\n") {
		m := diagLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		line, _ := strconv.Atoi(m[2])
		id := sc.owner(m[1], line)
		if id == 0 {
			unexplained = true
			continue
		}
		if _, ok := blamed[id]; !ok {
			blamed[id] = strings.ReplaceAll(m[3], copyName(id, ""), "")
		}
	}
	return blamed, unexplained || len(blamed) == 0
}

// upTo is the path from package directory rel back to the module root.
func upTo(rel string) string {
	rel = strings.Trim(strings.TrimPrefix(rel, "."), "/")
	if rel == "" {
		return ""
	}
	return strings.Repeat("../", strings.Count(rel, "/")+1)
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./=-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
