package gotask

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/env/process"
	"github.com/frognano/frog/synth/source"
)

// attackTest is the test an agent adds to a task's package: run by
// run_tests, as the harness runs the package's tests, it tries every
// attempt of attackConfig, writes what each one got to attack.json in its
// package's directory and passes.
const attackTest = `package calc

import (
	"encoding/json"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const attackConfig = %q

func TestAttack(t *testing.T) {
	var attempts []string
	json.Unmarshal([]byte(attackConfig), &attempts)
	got := map[string]string{}
	for _, a := range attempts {
		kind, arg, _ := strings.Cut(a, ":")
		var err error
		switch kind {
		case "write": // the file rewritten, as the probe rewrote a template's test
			err = os.WriteFile(arg, []byte("package calc\n\n// Every test passes now.\n"), 0o644)
		case "append":
			var f *os.File
			if f, err = os.OpenFile(arg, os.O_WRONLY|os.O_APPEND, 0); err == nil {
				_, err = f.WriteString("{\"poisoned\":true}\n")
				f.Close()
			}
		case "open-w": // opened for writing, nothing written
			var f *os.File
			if f, err = os.OpenFile(arg, os.O_WRONLY, 0); err == nil {
				f.Close()
			}
		case "create":
			var f *os.File
			if f, err = os.OpenFile(arg, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644); err == nil {
				f.Close()
			}
		case "read":
			_, err = os.ReadFile(arg)
		case "chmod":
			var st os.FileInfo
			if st, err = os.Stat(arg); err == nil {
				err = os.Chmod(arg, st.Mode().Perm())
			}
		case "dial":
			network, addr, _ := strings.Cut(arg, ":")
			var c net.Conn
			if c, err = net.DialTimeout(network, addr, 2*time.Second); err == nil {
				c.Close()
			}
		case "signal":
			pid, _ := strconv.Atoi(arg)
			err = syscall.Kill(pid, 0)
		}
		got[a] = "ok"
		if err != nil {
			got[a] = err.Error()
		}
	}
	data, _ := json.Marshal(got)
	if err := os.WriteFile("attack.json", data, 0o644); err != nil {
		t.Fatal(err)
	}
}
`

// TestProcessSandboxContainsTestCode: test code an agent adds to a task's
// package, run by run_tests as the harness runs it, tries to write the
// task's template and the module it links, the binary cache, the Go build
// and module caches, the workspaces root, a run directory, the host's /tmp,
// another sandbox's workspace and frog's executable; to read /etc/shadow;
// to reach the Docker socket, the host and the network; to signal frog.
// In a contained process sandbox every attempt is refused, nothing of it
// is on the host, another sandbox sees none of it, and a later episode of
// the task finds its template as made and is rewarded 0 for a comment. The
// same attack in an uncontained sandbox (Config.Contain off) gets through,
// which the checks see: they can fail. There the template check stops the
// poisoned template from being laid out again.
func TestProcessSandboxContainsTestCode(t *testing.T) {
	recs, mods := oracleTasks(t)
	var task *env.Task
	for i := range recs {
		if r := &recs[i]; r.Repo == "example.com/tiny" && r.Features.K == 1 && r.Task.Dir() == "calc" {
			task = &r.Task
			break
		}
	}
	if task == nil {
		t.Fatal("no single-bug task of example.com/tiny")
	}
	goCache, modCache := goEnv(t, "GOCACHE"), goEnv(t, "GOMODCACHE")
	t.Run("contained", func(t *testing.T) {
		a := newAttack(t, mods, task, true)
		res := a.run(t, goCache, modCache)
		for attempt, got := range res {
			if got == "ok" {
				t.Errorf("%s: it worked", attempt)
			}
		}
		a.checkHost(t)
		a.laterEpisode(t)
	})
	t.Run("uncontained", func(t *testing.T) {
		a := newAttack(t, mods, task, false)
		res := a.run(t, "", "")
		want := []string{"write:" + a.templateTest, "create:" + filepath.Join(a.ws.Root(), "frog-redteam"),
			"append:" + a.metrics, "write:" + a.sentinel, "write:" + a.otherFile, "dial:tcp:" + a.listener.Addr().String(),
			"signal:" + strconv.Itoa(os.Getpid())}
		if os.Geteuid() == 0 {
			want = append(want, "read:/etc/shadow")
		}
		for _, attempt := range want {
			if res[attempt] != "ok" {
				t.Errorf("%s: %s; want it to work in an uncontained sandbox (the test would prove nothing)", attempt, res[attempt])
			}
		}
		if a.accepted.Load() == 0 {
			t.Error("the host's listener accepted nothing from an uncontained sandbox")
		}
		// The poisoned template (and the module copy it links) is not laid
		// out again: a later episode cannot open, so it is never scored.
		_, err := a.prov.Open(context.Background(), env.OpenOptions{Run: "redteam", Episode: 3, Task: task})
		if !errors.Is(err, ErrModified) {
			t.Errorf("Open after the template was poisoned = %v; want an error wrapping ErrModified", err)
		}
	})
}

// attack is one task's setup for the attack: its workspaces, harness and
// provider, the sandboxes of two episodes, and the host files it aims at.
type attack struct {
	task     *env.Task
	ws       *Workspaces
	h        *Harness
	prov     *process.Provider
	log      *bytes.Buffer
	a, b     env.Sandbox
	module   string // the task's module's local copy, which the template links
	template string
	// templateTest is the test file of the task's package in the template.
	templateTest string
	bin          string
	runDir       string // a run directory
	metrics      string
	sentinel     string // a file of the host's /tmp
	otherFile    string // a file of b's workspace
	listener     net.Listener
	accepted     atomic.Int64
	before       map[string]string // host files and their hashes before the attack
}

func newAttack(t *testing.T, mods []source.Module, task *env.Task, contain bool) *attack {
	t.Helper()
	ctx := context.Background()
	a := &attack{task: task, log: &bytes.Buffer{}}
	var err error
	if a.ws, err = NewWorkspaces(filepath.Join(t.TempDir(), "ws"), zerolog.New(a.log)); err != nil {
		t.Fatal(err)
	}
	for _, m := range mods {
		src := m.Dir
		m.Dir = filepath.Join(t.TempDir(), "module")
		if err := os.CopyFS(m.Dir, os.DirFS(src)); err != nil {
			t.Fatal(err)
		}
		a.ws.AddLocal(m)
		if m.Path == task.Repo {
			a.module = m.Dir
		}
	}
	if a.template, err = a.ws.Template(ctx, task); err != nil {
		t.Fatal(err)
	}
	a.bin = filepath.Join(a.ws.Root(), "bin")
	a.h = NewHarness(a.ws, HarnessConfig{BinCache: a.bin})
	cfg := process.DefaultConfig()
	cfg.Contain, cfg.Unshare, cfg.Dir, cfg.Workspaces = contain, false, t.TempDir(), a.ws
	if a.prov, err = process.New(cfg, zerolog.Nop()); err != nil {
		t.Fatal(err)
	}
	// The task's check, as a run starts: it fills the binary cache.
	if err := NewQuarantine(a.ws, a.h, a.prov, "redteam", zerolog.Nop()).Check(ctx, task); err != nil {
		t.Fatalf("check: %v", err)
	}
	if ents, _ := os.ReadDir(a.bin); len(ents) == 0 {
		t.Fatal("the check shared no binary")
	}
	a.runDir = filepath.Join(t.TempDir(), "runs", "r")
	a.metrics = filepath.Join(a.runDir, "metrics.jsonl")
	if err := os.MkdirAll(a.runDir, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(a.metrics, []byte("{\"update\":1}\n"), 0o644)
	a.sentinel = filepath.Join(t.TempDir(), "sentinel")
	os.WriteFile(a.sentinel, []byte("host /tmp\n"), 0o644)
	if a.a, err = a.prov.Open(ctx, env.OpenOptions{Run: "redteam", Episode: 1, Task: task}); err != nil {
		t.Fatal(err)
	}
	if a.b, err = a.prov.Open(ctx, env.OpenOptions{Run: "redteam", Episode: 2, Task: task}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		a.a.Close(context.Background())
		a.b.Close(context.Background())
	})
	a.otherFile = filepath.Join(a.b.(*process.Sandbox).Workspace(), "calc", "calc.go")
	if a.listener, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.listener.Close() })
	go func() {
		for {
			c, err := a.listener.Accept()
			if err != nil {
				return
			}
			a.accepted.Add(1)
			c.Close()
		}
	}()
	a.templateTest = filepath.Join(a.template, "calc", "calc_test.go")
	a.before = map[string]string{}
	for _, d := range []string{a.ws.Root(), a.module, a.runDir, filepath.Dir(a.sentinel), a.b.(*process.Sandbox).Workspace()} {
		for p, h := range hashFiles(t, d) {
			a.before[p] = h
		}
	}
	return a
}

// run plays the attack in episode a through the harness and returns what
// each attempt got. goCache and modCache are aimed at too where not "".
func (a *attack) run(t *testing.T, goCache, modCache string) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bins, _ := filepath.Glob(filepath.Join(a.bin, "*.test"))
	exe, _ := os.Executable()
	attempts := []string{
		"write:" + a.templateTest,
		"create:" + filepath.Join(a.template, "calc", "zz_test.go"),
		"chmod:" + a.template,
		"write:" + filepath.Join(a.module, "calc", "calc_test.go"),
		"open-w:" + bins[0],
		"create:" + filepath.Join(a.bin, "frog-redteam.test"),
		"create:" + filepath.Join(a.ws.Root(), "frog-redteam"),
		"append:" + a.metrics,
		"write:" + a.sentinel,
		"create:" + filepath.Join(filepath.Dir(a.sentinel), "frog-redteam"),
		"write:" + a.otherFile,
		"open-w:" + exe,
		"read:/etc/shadow",
		"open-w:/etc/passwd",
		"dial:unix:/var/run/docker.sock",
		"dial:unix:/run/docker.sock",
		"dial:tcp:" + a.listener.Addr().String(),
		"dial:tcp:1.1.1.1:80",
		"signal:" + strconv.Itoa(os.Getpid()),
	}
	if goCache != "" {
		entries, _ := filepath.Glob(filepath.Join(goCache, "00", "*-a"))
		if len(entries) > 0 {
			attempts = append(attempts, "open-w:"+entries[0])
		}
		attempts = append(attempts, "create:"+filepath.Join(goCache, "frog-redteam-"+strconv.Itoa(os.Getpid())), "chmod:"+goCache)
	}
	if modCache != "" {
		attempts = append(attempts, "create:"+filepath.Join(modCache, "frog-redteam-"+strconv.Itoa(os.Getpid())),
			"open-w:"+filepath.Join(modCache, "cache", "download"))
	}
	cfg, _ := json.Marshal(attempts)
	ep := env.NewEpisode(a.task, env.RunOptions{Harness: a.h, MaxSteps: 8, Episode: 1})
	if err := ep.Apply(ctx, a.a, env.Action{Tool: env.ToolEdit, Path: "calc/attack_test.go", New: fmt.Sprintf(attackTest, cfg)}); err != nil {
		t.Fatal(err)
	}
	if err := ep.Apply(ctx, a.a, env.Action{Tool: env.ToolRunTests, Args: &env.ActionArgs{Tests: []string{"TestAttack"}}}); err != nil {
		t.Fatal(err)
	}
	data, err := a.a.ReadFile(ctx, "calc/attack.json")
	if err != nil {
		steps := ep.Trajectory().Steps
		t.Fatalf("the attack left no report (%v); run_tests said: %+v", err, steps[len(steps)-1].Result)
	}
	var got map[string]string
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	for _, attempt := range attempts {
		t.Logf("%-60.60s %s", attempt, got[attempt])
	}
	if goCache != "" {
		junk := filepath.Join(goCache, "frog-redteam-"+strconv.Itoa(os.Getpid()))
		if _, err := os.Stat(junk); err == nil {
			os.Remove(junk)
			t.Errorf("the attack made %s", junk)
		}
	}
	if modCache != "" {
		junk := filepath.Join(modCache, "frog-redteam-"+strconv.Itoa(os.Getpid()))
		if _, err := os.Stat(junk); err == nil {
			os.Remove(junk)
			t.Errorf("the attack made %s", junk)
		}
	}
	return got
}

// checkHost: every host file the attack aimed at is as it was, and it
// made none beside them (the harness's own new binaries aside).
func (a *attack) checkHost(t *testing.T) {
	t.Helper()
	for p, h := range a.before {
		if got := hashFile1(p); got != h {
			t.Errorf("%s changed", p)
		}
	}
	for _, p := range []string{filepath.Join(a.template, "calc", "zz_test.go"), filepath.Join(a.bin, "frog-redteam.test"),
		filepath.Join(a.ws.Root(), "frog-redteam"), filepath.Join(filepath.Dir(a.sentinel), "frog-redteam")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("the attack made %s", p)
		}
	}
	if n := a.accepted.Load(); n != 0 {
		t.Errorf("the host's listener accepted %d connections from the sandbox", n)
	}
	// The other episode's workspace has none of a's files.
	if _, err := a.b.ReadFile(context.Background(), "calc/attack_test.go"); err == nil {
		t.Error("another sandbox sees the attack's file")
	}
}

// laterEpisode: a later episode of the task starts from the template as it
// was made, and a comment is rewarded 0.
func (a *attack) laterEpisode(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	sb, err := a.prov.Open(ctx, env.OpenOptions{Run: "redteam", Episode: 3, Task: a.task})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close(ctx)
	if strings.Contains(a.log.String(), "made again") {
		t.Errorf("a template was made again: %s", a.log.String())
	}
	for _, f := range []string{"calc/calc_test.go", "calc/calc.go"} {
		want, _ := os.ReadFile(filepath.Join(a.template, f))
		if got, err := sb.ReadFile(ctx, f); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s in a later episode: %v; want the template's", f, err)
		}
	}
	if _, err := sb.ReadFile(ctx, "calc/attack_test.go"); err == nil {
		t.Error("a later episode finds the attack's test")
	}
	ep := env.NewEpisode(a.task, env.RunOptions{Harness: a.h, MaxSteps: 4, Episode: 3})
	src, _ := os.ReadFile(filepath.Join(a.template, a.task.File))
	if err := ep.Apply(ctx, sb, env.Action{Tool: env.ToolEdit, Path: a.task.File, New: string(src) + "\n// fixed, honest\n"}); err != nil {
		t.Fatal(err)
	}
	ep.Apply(ctx, sb, env.Action{Tool: env.ToolSubmit})
	traj, err := ep.Finish(ctx, sb)
	if err != nil || traj.Reward != 0 {
		t.Errorf("a comment-only edit: reward %v, %v; want 0", traj.Reward, err)
	}
}

func goEnv(t *testing.T, key string) string {
	t.Helper()
	out, err := exec.Command("go", "env", key).Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// hashFiles hashes every regular file under dir.
func hashFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			out[p] = hashFile1(p)
		}
		return nil
	})
	if len(out) == 0 {
		t.Fatalf("no file under %s", dir)
	}
	return out
}

func hashFile1(p string) string {
	data, err := os.ReadFile(p)
	if err != nil {
		return "missing: " + err.Error()
	}
	h := sha256.Sum256(data)
	return string(h[:])
}
