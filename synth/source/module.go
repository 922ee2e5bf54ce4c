package source

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// Default is the pinned list of modules `frog synth` uses when given no
// source: small, test-rich modules with few or no dependencies (data
// structures, parsing, encoding, math, text), each checked to download with
// `go mod download` and to build and pass its tests with go 1.26. A
// package whose original fails go vet (go-difflib's examples) is still
// used; its mutants are then not vetted.
var Default = []string{
	"github.com/emirpasic/gods@v1.18.1",         // data structures
	"github.com/google/btree@v1.1.3",            // data structures
	"github.com/bits-and-blooms/bitset@v1.14.3", // data structures, math
	"github.com/huandu/xstrings@v1.5.0",         // text
	"github.com/dustin/go-humanize@v1.0.1",      // text, math
	"github.com/Masterminds/semver/v3@v3.3.1",   // parsing
	"github.com/gobwas/glob@v0.2.3",             // parsing
	"github.com/tidwall/match@v1.1.1",           // parsing
	"github.com/tidwall/gjson@v1.18.0",          // parsing, encoding
	"github.com/tidwall/pretty@v1.2.1",          // encoding
	"github.com/kylelemons/godebug@v1.1.0",      // text, diff
	"github.com/pmezard/go-difflib@v1.0.0",      // text, diff
	"github.com/cespare/xxhash/v2@v2.3.0",       // math, hashing
	"github.com/mitchellh/mapstructure@v1.5.0",  // encoding
}

// Module is a Go module ready to be mutated: Dir is its root, writable or
// at least never written by synthesis.
type Module struct {
	// Path is the module path; Version the version it was fetched at
	// ("" for a local directory).
	Path, Version string
	// Dir is the module root.
	Dir string
}

// String returns path@version, or the path of a local module.
func (m Module) String() string {
	if m.Version == "" {
		return m.Path
	}
	return m.Path + "@" + m.Version
}

// IsRemote reports whether spec names a module version (path@version)
// rather than a local directory.
func IsRemote(spec string) bool {
	if _, err := os.Stat(spec); err == nil {
		return false
	}
	return strings.Contains(spec, "@")
}

// GitPrefix marks a source that is a git repository: git+URL[@ref].
const GitPrefix = "git+"

// Open returns the module spec names: a local directory holding a go.mod;
// git+URL[@ref], a git repository cloned at ref under work; or
// path@version, fetched into the module cache and copied under work.
func Open(ctx context.Context, spec, work string) (Module, error) {
	switch {
	case strings.HasPrefix(spec, GitPrefix):
		return Git(ctx, strings.TrimPrefix(spec, GitPrefix), work)
	case IsRemote(spec):
		return Fetch(ctx, spec, work)
	}
	return Local(spec)
}

// Git clones the repository at url (optionally url@ref, ref a branch, tag
// or commit) under work, checks out ref, and makes its module ready to
// build offline as Fetch does. The module's version is the commit.
func Git(ctx context.Context, spec, work string) (Module, error) {
	url, ref := spec, ""
	if i := strings.LastIndexByte(spec, '@'); i > 0 && !strings.ContainsAny(spec[i+1:], "/:") {
		url, ref = spec[:i], spec[i+1:]
	}
	if url == "" {
		return Module{}, fmt.Errorf("git source %q: want git+URL[@ref]", spec)
	}
	if err := os.MkdirAll(work, 0o755); err != nil {
		return Module{}, err
	}
	dst := filepath.Join(work, "git_"+strings.NewReplacer("/", "_", ":", "_", "@", "_").Replace(strings.TrimPrefix(strings.TrimPrefix(spec, "https://"), "file://")))
	if err := os.RemoveAll(dst); err != nil {
		return Module{}, err
	}
	git := func(dir string, args ...string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0")
		return cmd.CombinedOutput()
	}
	if out, err := git(work, "clone", "--quiet", url, dst); err != nil {
		return Module{}, fmt.Errorf("git clone %s: %s: %w", url, firstLine(out), err)
	}
	if ref != "" {
		if out, err := git(dst, "checkout", "--quiet", "--detach", ref); err != nil {
			return Module{}, fmt.Errorf("git checkout %s in %s: %s: %w", ref, url, firstLine(out), err)
		}
	}
	out, err := git(dst, "rev-parse", "HEAD")
	if err != nil {
		return Module{}, fmt.Errorf("git rev-parse in %s: %s: %w", url, firstLine(out), err)
	}
	m, err := Local(dst)
	if err != nil {
		return Module{}, fmt.Errorf("git source %s: %w", url, err)
	}
	if out, err := goTool(ctx, dst, "mod", "tidy", "-e"); err != nil {
		return Module{}, fmt.Errorf("tidy %s: %s: %w", url, firstLine(out), err)
	}
	m.Version = strings.TrimSpace(string(out))
	return m, nil
}

// Local returns the module rooted at dir.
func Local(dir string) (Module, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Module{}, fmt.Errorf("module %s: %w", dir, err)
	}
	data, err := os.ReadFile(filepath.Join(abs, "go.mod"))
	if err != nil {
		return Module{}, fmt.Errorf("module %s: %w", dir, err)
	}
	path := modulePath(data)
	if path == "" {
		return Module{}, fmt.Errorf("module %s: go.mod has no module line", dir)
	}
	return Module{Path: path, Dir: abs}, nil
}

func modulePath(gomod []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(gomod))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`)
		}
	}
	return ""
}

// Fetch downloads path@version with `go mod download -json` (the module
// cache is read-only), copies it to a writable directory under work, gives
// it a go.mod if it predates modules, and completes its go.sum and
// dependencies with `go mod tidy` so that its tests build offline.
func Fetch(ctx context.Context, spec, work string) (Module, error) {
	path, version, _ := strings.Cut(spec, "@")
	if path == "" || version == "" {
		return Module{}, fmt.Errorf("module %q: want path@version", spec)
	}
	out, err := goTool(ctx, work, "mod", "download", "-json", spec)
	var info struct{ Path, Version, Dir, Error string }
	if jerr := json.Unmarshal(out, &info); jerr != nil || info.Error != "" || err != nil {
		return Module{}, fmt.Errorf("download %s: %s: %w", spec, strings.TrimSpace(info.Error+" "+firstLine(out)), errOr(err, jerr))
	}
	dst := filepath.Join(work, strings.NewReplacer("/", "_", "@", "_").Replace(spec))
	if err := os.RemoveAll(dst); err != nil {
		return Module{}, fmt.Errorf("copy %s: %w", spec, err)
	}
	if err := copyTree(info.Dir, dst); err != nil {
		return Module{}, fmt.Errorf("copy %s: %w", spec, err)
	}
	if _, err := os.Stat(filepath.Join(dst, "go.mod")); os.IsNotExist(err) {
		if err := os.WriteFile(filepath.Join(dst, "go.mod"), []byte("module "+path+"\n\ngo 1.16\n"), 0o644); err != nil {
			return Module{}, fmt.Errorf("go.mod for %s: %w", spec, err)
		}
	}
	if out, err := goTool(ctx, dst, "mod", "tidy", "-e"); err != nil {
		return Module{}, fmt.Errorf("tidy %s: %s: %w", spec, firstLine(out), err)
	}
	return Module{Path: path, Version: info.Version, Dir: dst}, nil
}

func errOr(a, b error) error {
	if a != nil {
		return a
	}
	if b != nil {
		return b
	}
	return fmt.Errorf("go mod download failed")
}

func goTool(ctx context.Context, dir string, args ...string) ([]byte, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local")
	return cmd.CombinedOutput()
}

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	return s
}

// copyTree copies the regular files under src to dst, writable.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
}

// Packages lists the directories of m's packages that have both Go files
// and test files, relative to the module root in the form go commands take
// ("." or "./sub"), sorted. Testdata, vendor, hidden and underscore
// directories and nested modules are left out.
func Packages(m Module) ([]string, error) {
	var out []string
	err := filepath.WalkDir(m.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if p != m.Dir {
			if name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
				return filepath.SkipDir
			}
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			return err
		}
		var src, test bool
		for _, e := range entries {
			n := e.Name()
			switch {
			case e.IsDir() || !strings.HasSuffix(n, ".go"):
			case strings.HasSuffix(n, "_test.go"):
				test = true
			default:
				src = true
			}
		}
		if src && test {
			rel, err := filepath.Rel(m.Dir, p)
			if err != nil {
				return err
			}
			out = append(out, "./"+filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("packages of %s: %w", m, err)
	}
	for i, r := range out {
		if r == "./." {
			out[i] = "."
		}
	}
	slices.Sort(out)
	return out, nil
}
