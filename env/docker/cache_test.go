package docker

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/frognano/frog/env"
)

// tamperFiles is a module with a bug (Add subtracts) and a test that fails
// because of it, in an external test package, so that the package under test
// is compiled once, as the build cache holds it.
var tamperFiles = map[string]string{
	"m/go.mod":      "module example.com/m\n\ngo 1.22\n",
	"m/p/p.go":      "package p\n\n// Add adds.\nfunc Add(a, b int) int { return a - b }\n",
	"m/p/p_test.go": "package p_test\n\nimport (\n\t\"testing\"\n\n\t\"example.com/m/p\"\n)\n\nfunc TestAdd(t *testing.T) {\n\tif got := p.Add(1, 2); got != 3 {\n\t\tt.Fatalf(\"Add(1, 2) = %d\", got)\n\t}\n}\n",
	"poison/go.mod": "module poison\n\ngo 1.22\n",
	"poison/main.go": `// Command poison is what a reward-hacking agent could run: it makes the Go
// build cache say that the buggy package compiles to the fixed code, by
// overwriting the cached archive and rewriting the action entries that name
// it, wherever it can write.
package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

func export(dir string) string {
	cmd := exec.Command("go", "list", "-export", "-f", "{{.Export}}", "./p")
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		fmt.Println("go list:", err)
		os.Exit(1)
	}
	return strings.TrimSpace(string(out))
}

func main() {
	mod, fix := os.Args[1], "/tmp/fix"
	os.MkdirAll(filepath.Join(fix, "p"), 0o755)
	for _, f := range []string{"go.mod", "p/p.go", "p/p_test.go"} {
		data, _ := os.ReadFile(filepath.Join(mod, f))
		data = bytes.ReplaceAll(data, []byte("a - b"), []byte("a + b"))
		os.WriteFile(filepath.Join(fix, f), data, 0o644)
	}
	bug, good := export(mod), export(fix)
	goodData, err := os.ReadFile(good)
	if err != nil {
		fmt.Println("read:", err)
		os.Exit(1)
	}
	bugInfo, _ := os.Stat(bug)
	fmt.Printf("buggy archive %s (%d bytes), fixed %s (%d bytes)\n", bug, bugInfo.Size(), good, len(goodData))
	bugOut := strings.TrimSuffix(filepath.Base(bug), "-d")
	goodOut := strings.TrimSuffix(filepath.Base(good), "-d")
	if int64(len(goodData)) == bugInfo.Size() {
		os.Chmod(bug, 0o644)
		fmt.Println("overwrite buggy archive:", os.WriteFile(bug, goodData, 0o644))
	}
	roots := map[string]bool{filepath.Dir(filepath.Dir(bug)): true, os.Getenv("GOCACHE"): true, "/cache/go-build": true}
	for root := range roots {
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, "-a") {
				return nil
			}
			data, err := os.ReadFile(p)
			if err != nil || !bytes.Contains(data, []byte(bugOut)) {
				return nil
			}
			f := strings.Fields(string(data))
			if len(f) != 5 {
				return nil
			}
			entry := fmt.Sprintf("v1 %s %s %20d %20s\n", f[1], goodOut, len(goodData), f[4])
			os.Chmod(p, 0o644)
			fmt.Printf("rewrite entry %s: %v\n", p, os.WriteFile(p, []byte(entry), 0o644))
			return nil
		})
	}
	// And what else an agent might try on the shared cache.
	fmt.Println("chmod shared cache:", os.Chmod("/cache/go-build", 0o777))
	fmt.Println("write shared cache:", os.WriteFile("/cache/go-build/frog-poison", []byte("x"), 0o644))
}
`,
}

// TestBuildCacheTamper: an episode that poisons the Go build cache (it
// makes the cache say that its buggy package compiles to the fixed code)
// changes no verdict but its own command's: neither a later command of the
// same sandbox nor a later episode's sandbox trusts what it wrote.
func TestBuildCacheTamper(t *testing.T) {
	cli, img := daemon(t)
	cfg := testConfig(img, testRun(t))
	cfg.Memory = 2 << 30
	cfg.CPUs = 2
	cfg.PoolSize = 0
	// A volume of the test's own, so that a poisoned cache (before the fix)
	// harms no other test.
	cfg.BuildCacheVolume = "frog-test-cache-" + cfg.Run
	cfg.BuildCacheWarm = []string{"testing/internal/testdeps"}
	t.Cleanup(func() {
		if err := cli.VolumeRemove(context.Background(), cfg.BuildCacheVolume, true); err != nil {
			t.Errorf("remove volume %s: %v", cfg.BuildCacheVolume, err)
		}
	})
	p := newTestProvider(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	open := func(ep uint64) env.Sandbox {
		t.Helper()
		sb, err := p.Open(ctx, env.OpenOptions{Run: cfg.Run, Episode: ep})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sb.Close(context.Background()) })
		for name, data := range tamperFiles {
			if err := sb.WriteFile(ctx, name, []byte(data)); err != nil {
				t.Fatal(err)
			}
		}
		return sb
	}
	sh := func(sb env.Sandbox, script string) env.ExecResult {
		t.Helper()
		res, err := sb.Exec(ctx, env.ExecOptions{Cmd: []string{"sh", "-c", script}, Timeout: 3 * time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	const verdict = "cd m && go test -count=1 ./p"
	// failsTheBug: the verdict sees the bug, as it must.
	failsTheBug := func(what string, res env.ExecResult) {
		t.Helper()
		if res.ExitCode == 0 || !strings.Contains(string(res.Stdout), "Add(1, 2) = -1") {
			t.Errorf("%s: the deciding test passed on the buggy code (exit %d): the poisoned cache was trusted\n%s%s", what, res.ExitCode, res.Stdout, res.Stderr)
		}
	}

	a := open(1)
	failsTheBug("before the attack", sh(a, verdict))
	res := sh(a, "cd poison && go run . /workspace/m && cd .. && "+verdict)
	t.Logf("attack (exit %d):\n%s%s", res.ExitCode, res.Stdout, res.Stderr)
	// Within its own command the poison works: the attack is real.
	if res.ExitCode != 0 {
		t.Fatalf("the attack did not fool even its own command's go test (exit %d): the test proves nothing", res.ExitCode)
	}
	failsTheBug("a later command of the poisoning episode", sh(a, verdict))
	failsTheBug("a later episode", sh(open(2), verdict))
}

// TestWarmCache: the provider compiles BuildCacheWarm into the shared cache
// before any sandbox runs, and a sandbox's go command finds it there: it
// compiles, and writes into its own layer, nothing of it.
func TestWarmCache(t *testing.T) {
	cli, img := daemon(t)
	cfg := testConfig(img, testRun(t)) // small sandboxes: the warm-up is not bound by them
	cfg.PoolSize = 0
	cfg.BuildCacheVolume = "frog-test-cache-" + cfg.Run
	cfg.BuildCacheWarm = []string{"fmt"}
	t.Cleanup(func() {
		if err := cli.VolumeRemove(context.Background(), cfg.BuildCacheVolume, true); err != nil {
			t.Errorf("remove volume %s: %v", cfg.BuildCacheVolume, err)
		}
	})
	p := newTestProvider(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sb, err := p.Open(ctx, env.OpenOptions{Run: cfg.Run, Episode: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close(ctx)
	res, err := sb.Exec(ctx, env.ExecOptions{Cmd: []string{"sh", "-c",
		`go build fmt && echo "layer $GOCACHE: $(find "$GOCACHE" -type f -name '*-[ad]' | wc -l) files"`}})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 || !strings.HasSuffix(string(res.Stdout), ": 0 files\n") {
		t.Errorf("go build fmt after the warm-up: exit %d, %s%s; want nothing compiled into the command's layer", res.ExitCode, res.Stdout, res.Stderr)
	}
}
