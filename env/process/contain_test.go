package process

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/frognano/frog/env"
)

// contained returns a provider of contained sandboxes under a directory of
// the test's.
func contained(t *testing.T) *Provider {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Dir = t.TempDir()
	p, err := New(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func openSandbox(t *testing.T, p *Provider, ep uint64) *Sandbox {
	t.Helper()
	sb, err := p.Open(context.Background(), env.OpenOptions{Run: "contain-test", Episode: ep})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close(context.Background()) })
	return sb.(*Sandbox)
}

func shOut(t *testing.T, sb env.Sandbox, script string) env.ExecResult {
	t.Helper()
	res, err := sb.Exec(context.Background(), env.ExecOptions{Cmd: []string{"sh", "-c", script}, Timeout: 3 * time.Minute})
	if err != nil {
		t.Fatalf("%s: %v", script, err)
	}
	return res
}

// TestContainedCommand: a contained command runs as nobody when frog is
// root (as frog's user otherwise), with every limit set before it starts
// (each of 20 runs), in its workspace, with a /tmp and a build cache layer
// (in it) of its own that the next command does not see.
func TestContainedCommand(t *testing.T) {
	sb := openSandbox(t, contained(t), 1)
	want := strconv.Itoa(os.Getuid())
	if os.Geteuid() == 0 {
		want = strconv.Itoa(nobody)
	}
	if got := strings.TrimSpace(string(shOut(t, sb, "id -u").Stdout)); got != want {
		t.Errorf("id -u = %s, want %s", got, want)
	}
	for i := 0; i < 20; i++ {
		if got := string(shOut(t, sb, "ulimit -n; ulimit -v; ulimit -t").Stdout); got != "4096\n8388608\n600\n" {
			t.Fatalf("run %d: limits %q, want 4096 files, 8 GiB, 600 s", i, got)
		}
	}
	r := shOut(t, sb, `pwd; echo x > /tmp/mine; echo $TMPDIR; echo $GOCACHE; mkdir -p "$GOCACHE" && touch "$GOCACHE/mine" && echo layer ok`)
	if got, want := string(r.Stdout), sb.Workspace()+"\n/tmp\n"+cacheLayer+"\nlayer ok\n"; got != want {
		t.Errorf("pwd, TMPDIR, GOCACHE = %q (stderr %q); want %q", got, r.Stderr, want)
	}
	r = shOut(t, sb, `cat /tmp/mine; ls "$GOCACHE"`)
	if r.ExitCode == 0 || len(r.Stdout) > 0 {
		t.Errorf("the next command sees the last one's /tmp or layer: %q %q", r.Stdout, r.Stderr)
	}
	if ents, _ := os.ReadDir(sb.dir); len(ents) != 3 {
		t.Errorf("the sandbox's directory holds %v; want its workspace, home and tmp", ents)
	}
}

// TestHostPath: HostPath shows a contained command one host file, read
// only, and not the rest of its directory; nothing of the sandbox's own
// directory is a host path.
func TestHostPath(t *testing.T) {
	sb := openSandbox(t, contained(t), 1)
	dir := t.TempDir()
	shared, other := filepath.Join(dir, "shared.bin"), filepath.Join(dir, "other.bin")
	os.WriteFile(shared, []byte("shared\n"), 0o644)
	os.WriteFile(other, []byte("other\n"), 0o644)
	if r := shOut(t, sb, "cat "+shared); r.ExitCode == 0 {
		t.Fatalf("a host file is seen before HostPath: %q", r.Stdout)
	}
	if p, ok := sb.HostPath(shared); !ok || p != shared {
		t.Fatalf("HostPath(%s) = %q, %v", shared, p, ok)
	}
	r := shOut(t, sb, fmt.Sprintf("cat %s; cat %s; echo x >> %s; echo y > %s/new", shared, other, shared, dir))
	if string(r.Stdout) != "shared\n" || r.ExitCode == 0 {
		t.Errorf("after HostPath: %q, exit %d, stderr %q; want the shared file only, read only", r.Stdout, r.ExitCode, r.Stderr)
	}
	if data, _ := os.ReadFile(shared); string(data) != "shared\n" {
		t.Errorf("the shared file was written: %q", data)
	}
	if _, err := os.Stat(filepath.Join(dir, "new")); err == nil {
		t.Error("a file was made beside the shared one")
	}
	for _, p := range []string{sb.Workspace(), filepath.Join(sb.dir, "layers"), dir, "rel/path"} {
		if _, ok := sb.HostPath(p); ok {
			t.Errorf("HostPath(%s) is ok", p)
		}
	}
	if p, ok := sb.HostPath("/usr/bin/env"); !ok || p != "/usr/bin/env" {
		t.Errorf("HostPath(/usr/bin/env) = %q, %v; want it where it is", p, ok)
	}
}

// TestUncontainedRefused: without bwrap New fails with ErrUncontained, and
// says how to get it.
func TestUncontainedRefused(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Dir = t.TempDir()
	bin := t.TempDir()
	for _, tool := range []string{"go", "prlimit", "setpriv", "true"} {
		if p, err := exec.LookPath(tool); err == nil {
			os.Symlink(p, filepath.Join(bin, tool))
		}
	}
	t.Setenv("PATH", bin)
	_, err := New(cfg, zerolog.Nop())
	if !errors.Is(err, ErrUncontained) || !strings.Contains(err.Error(), "apt-get install bubblewrap") {
		t.Errorf("New without bwrap = %v; want ErrUncontained, saying what to install", err)
	}
	cfg.Contain = false
	if _, err := New(cfg, zerolog.Nop()); err != nil {
		t.Errorf("New uncontained, without bwrap = %v", err)
	}
}

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
	mod, shared, fix := os.Args[1], os.Args[2], "/tmp/fix"
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
	roots := map[string]bool{filepath.Dir(filepath.Dir(bug)): true, os.Getenv("GOCACHE"): true, shared: true}
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
	fmt.Println("chmod shared cache:", os.Chmod(shared, 0o777))
	fmt.Println("write shared cache:", os.WriteFile(filepath.Join(shared, "frog-poison"), []byte("x"), 0o644))
}
`,
}

// TestBuildCacheTamper: an episode that poisons the Go build cache (it
// makes the cache say that its buggy package compiles to the fixed code)
// changes no verdict but its own command's: neither a later command of the
// same sandbox nor a later episode's sandbox trusts what it wrote, and the
// host's cache (the shared layer) is not written.
func TestBuildCacheTamper(t *testing.T) {
	p := contained(t)
	if p.c.goCache == "" {
		t.Skip("no go command")
	}
	open := func(ep uint64) *Sandbox {
		sb := openSandbox(t, p, ep)
		for name, data := range tamperFiles {
			if err := sb.WriteFile(context.Background(), name, []byte(data)); err != nil {
				t.Fatal(err)
			}
		}
		return sb
	}
	const goEnv = "export CGO_ENABLED=0 GOFLAGS= GOWORK=off GOTOOLCHAIN=local GOPROXY=off; "
	const verdict = goEnv + "cd m && go test -count=1 ./p"
	failsTheBug := func(what string, res env.ExecResult) {
		t.Helper()
		if res.ExitCode == 0 || !strings.Contains(string(res.Stdout), "Add(1, 2) = -1") {
			t.Errorf("%s: the deciding test passed on the buggy code (exit %d): the poisoned cache was trusted\n%s%s", what, res.ExitCode, res.Stdout, res.Stderr)
		}
	}
	a := open(1)
	failsTheBug("before the attack", shOut(t, a, verdict))
	res := shOut(t, a, goEnv+"cd poison && go run . \"$(cd ../m && pwd)\" "+p.c.goCache+" && cd .. && cd m && go test -count=1 ./p")
	t.Logf("attack (exit %d):\n%s%s", res.ExitCode, res.Stdout, res.Stderr)
	if res.ExitCode != 0 {
		t.Fatalf("the attack did not fool even its own command's go test (exit %d): the test proves nothing", res.ExitCode)
	}
	failsTheBug("a later command of the poisoning episode", shOut(t, a, verdict))
	failsTheBug("a later episode", shOut(t, open(2), verdict))
	if _, err := os.Stat(filepath.Join(p.c.goCache, "frog-poison")); err == nil {
		os.Remove(filepath.Join(p.c.goCache, "frog-poison"))
		t.Error("the attack wrote the host's build cache")
	}
}

// TestSandboxLayer: with Config.SandboxLayer a sandbox's commands share
// one build cache layer, and a second build of the workspace's package
// compiles nothing; without it, each command compiles it again.
func TestSandboxLayer(t *testing.T) {
	for _, shared := range []bool{false, true} {
		t.Run(fmt.Sprintf("shared=%v", shared), func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Dir, cfg.SandboxLayer = t.TempDir(), shared
			p, err := New(cfg, zerolog.Nop())
			if err != nil {
				t.Fatal(err)
			}
			if p.c.goCache == "" {
				t.Skip("no go command")
			}
			sb := openSandbox(t, p, 1)
			for name, data := range tamperFiles {
				sb.WriteFile(context.Background(), name, []byte(data))
			}
			const build = "cd m && CGO_ENABLED=0 GOFLAGS= go build -x ./p 2>&1 | grep -c /compile"
			shOut(t, sb, build)
			got := strings.TrimSpace(string(shOut(t, sb, build).Stdout))
			if want := map[bool]string{false: "1", true: "0"}[shared]; got != want {
				t.Errorf("compiles in the second build = %s, want %s", got, want)
			}
		})
	}
}

// TestWarmCache: what New warmed, a contained go command finds in the
// shared layer: it compiles, and writes into its own layer, nothing of it.
func TestWarmCache(t *testing.T) {
	p := contained(t)
	if p.c.goCache == "" {
		t.Skip("no go command")
	}
	sb := openSandbox(t, p, 1)
	r := shOut(t, sb, `CGO_ENABLED=0 GOFLAGS= go build fmt && echo "layer: $(find "$GOCACHE" -type f -name '*-[ad]' | wc -l) files"`)
	if r.ExitCode != 0 || !strings.HasSuffix(string(r.Stdout), "layer: 0 files\n") {
		t.Errorf("go build fmt after the warm-up: exit %d, %s%s; want nothing compiled into the command's layer", r.ExitCode, r.Stdout, r.Stderr)
	}
}

// TestCacheProg: gets are answered from the command layer, then from the
// shared one (in the go command's format); puts land in the command layer
// only; an entry whose output is missing or of the wrong size is a miss.
func TestCacheProg(t *testing.T) {
	shared, layer := t.TempDir(), t.TempDir()
	id := func(s string) []byte { h := sha256.Sum256([]byte(s)); return h[:] }
	// The shared layer as the go command writes it: std's "fmt" compiled.
	writeEntry := func(dir string, action, body []byte) {
		out := sha256.Sum256(body)
		os.MkdirAll(filepath.Dir(cacheFile(dir, out[:], "d")), 0o755)
		os.WriteFile(cacheFile(dir, out[:], "d"), body, 0o644)
		os.MkdirAll(filepath.Dir(cacheFile(dir, action, "a")), 0o755)
		os.WriteFile(cacheFile(dir, action, "a"), fmt.Appendf(nil, "v1 %x %x %20d %20d\n", action, out, len(body), time.Now().UnixNano()), 0o644)
	}
	writeEntry(shared, id("fmt"), []byte("fmt archive"))
	writeEntry(shared, id("bad size"), []byte("12345"))
	os.WriteFile(cacheFile(shared, func() []byte { h := sha256.Sum256([]byte("12345")); return h[:] }(), "d"), []byte("1234"), 0o644)

	body := []byte("p archive")
	out := sha256.Sum256(body)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &progCache{layer: layer, read: []string{layer, shared}}
	served := make(chan error, 1)
	go func() { served <- c.serve(inR, outW); outW.Close() }()
	enc, dec := json.NewEncoder(inW), json.NewDecoder(outR)
	var hello progResponse
	if err := dec.Decode(&hello); err != nil || strings.Join(hello.KnownCommands, ",") != "get,put,close" {
		t.Fatalf("first response = %+v, %v; want the capabilities", hello, err)
	}
	// call sends one request (and its body) and waits for its answer.
	call := func(req progRequest, body []byte) progResponse {
		t.Helper()
		enc.Encode(req)
		if body != nil {
			enc.Encode(body)
		}
		var r progResponse
		if err := dec.Decode(&r); err != nil || r.ID != req.ID {
			t.Fatalf("answer to %d = %+v, %v", req.ID, r, err)
		}
		return r
	}
	got := map[int64]progResponse{
		1: call(progRequest{ID: 1, Command: "get", ActionID: id("fmt")}, nil),
		2: call(progRequest{ID: 2, Command: "get", ActionID: id("p")}, nil),
		3: call(progRequest{ID: 3, Command: "put", ActionID: id("p"), OutputID: out[:], BodySize: int64(len(body))}, body),
		4: call(progRequest{ID: 4, Command: "get", ActionID: id("p")}, nil),
		5: call(progRequest{ID: 5, Command: "get", ActionID: id("bad size")}, nil),
		6: call(progRequest{ID: 6, Command: "close"}, nil),
	}
	inW.Close()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	if r := got[1]; r.Miss || !strings.HasPrefix(r.DiskPath, shared) || r.Size != int64(len("fmt archive")) {
		t.Errorf("get of a shared entry = %+v, want a hit in the shared layer", r)
	}
	if r := got[2]; !r.Miss {
		t.Errorf("get before put = %+v, want a miss", r)
	}
	if r := got[3]; r.Err != "" || !strings.HasPrefix(r.DiskPath, layer) {
		t.Errorf("put = %+v, want a path in the command layer", r)
	}
	if r := got[4]; r.Miss || !strings.HasPrefix(r.DiskPath, layer) || !bytes.Equal(r.OutputID, out[:]) {
		t.Errorf("get after put = %+v, want a hit in the command layer", r)
	}
	if data, err := os.ReadFile(got[4].DiskPath); err != nil || !bytes.Equal(data, body) {
		t.Errorf("stored body = %q, %v; want %q", data, err, body)
	}
	if r := got[5]; !r.Miss {
		t.Errorf("get of an entry whose output has the wrong size = %+v, want a miss", r)
	}
	n := 0
	filepath.WalkDir(shared, func(_ string, d os.DirEntry, _ error) error {
		if !d.IsDir() {
			n++
		}
		return nil
	})
	if n != 4 {
		t.Errorf("the shared layer has %d files after a put, want the 4 it had", n)
	}
}
