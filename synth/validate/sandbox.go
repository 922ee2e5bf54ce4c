package validate

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/frognano/frog/gotask/gotest"
)

// How the validator uses its sandbox: the module is copied to the
// workspace root; frog's own files (overlays, test binaries, cover
// profiles) live under .frog/, which the go command ignores. Go commands
// run at the module root with the environment goEnv; test binaries run in
// their package's directory, as go test runs them.

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
	if err != nil || r.Exit != 0 {
		v.log.Debug().Err(err).Int("exit", r.Exit).Msg("go env GOMOD failed: failure output keeps absolute paths")
		return
	}
	out := strings.TrimSpace(string(r.Out))
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
func (v *Validator) goCmd(ctx context.Context, args ...string) (gotest.Result, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "cd %s && exec env", gotest.ShellQuote(v.path(".")))
	for _, a := range slices.Concat(gotest.Env, []string{"go"}, args) {
		b.WriteString(" " + gotest.ShellQuote(a))
	}
	return gotest.ExecIn(ctx, v.sb, v.cfg.BuildTimeout, "sh", "-c", b.String())
}

// runBinary runs the test binary bin (module-relative) in package directory
// rel with FROG_MUTANT set to mutant (unset for 0).
func (v *Validator) runBinary(ctx context.Context, rel, bin string, mutant int, timeout time.Duration, args ...string) (gotest.Result, error) {
	var vars []string
	if mutant != 0 {
		vars = []string{"FROG_MUTANT=" + strconv.Itoa(mutant)}
	}
	return gotest.RunIn(ctx, v.sb, v.path(rel), gotest.UpTo(rel)+bin, vars, timeout, args...)
}

// runTests runs the named top-level tests of schema binary bin for mutant.
// The binary's own -test.timeout fires first; the sandbox's, a second
// later, is the backstop.
func (v *Validator) runTests(ctx context.Context, rel, bin string, mutant int, timeout time.Duration, tests []string) (gotest.Run, error) {
	r, err := v.runBinary(ctx, rel, bin, mutant, timeout+time.Second, gotest.ChattyArgs(timeout, tests)...)
	if err != nil {
		return gotest.Run{}, fmt.Errorf("test mutant %d in %s: %w", mutant, rel, err)
	}
	return gotest.ParseChatty(r), nil
}

// writeOverlay writes the schema's files under .frog/ov and the overlay
// file that puts them in place of the originals, and returns the overlay
// file's path (module-relative, as are the paths in it).
func (v *Validator) writeOverlay(ctx context.Context, sc *gotest.Schema) (string, error) {
	const dir = ".frog/ov" // one schema at a time: each overwrites the last
	replace := map[string]string{}
	for rel, data := range sc.Files {
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
