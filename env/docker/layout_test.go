package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rs/zerolog"

	"github.com/frognano/frog/env"
)

// dirWorkspaces serves each task's template from dirs, by task ID, or
// fails with err.
type dirWorkspaces struct {
	dirs  map[string]string
	err   error
	calls atomic.Int64
}

func (w *dirWorkspaces) Template(_ context.Context, task *env.Task) (string, error) {
	w.calls.Add(1)
	if w.err != nil {
		return "", w.err
	}
	d, ok := w.dirs[task.ID]
	if !ok {
		return "", fmt.Errorf("task %s: no template", task.ID)
	}
	return d, nil
}

// realTask is a task with a mutation: one a Workspaces must lay out.
func realTask(id string) *env.Task {
	return &env.Task{ID: id, Repo: "example.com/m", Mutations: []env.Mutation{{Op: "negate", File: "m.go", Line: 3}}}
}

// hostEntry is one path of a tree on the host: its mode and its content
// (a link's target).
type hostEntry struct {
	Mode fs.FileMode
	Data string
}

// writeTree makes dir hold entries (directories have ModeDir, links
// ModeSymlink); modes are set once everything is written. dir itself is
// made 0755, so that the sandbox user may enter it.
func writeTree(t *testing.T, dir string, entries map[string]hostEntry) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for p, e := range entries {
		full := filepath.Join(dir, p)
		if e.Mode.IsDir() {
			os.MkdirAll(full, 0o755)
			continue
		}
		os.MkdirAll(filepath.Dir(full), 0o755)
		var err error
		if e.Mode&fs.ModeSymlink != 0 {
			err = os.Symlink(e.Data, full)
		} else {
			err = os.WriteFile(full, []byte(e.Data), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	for p, e := range entries {
		if e.Mode&fs.ModeSymlink == 0 {
			if err := os.Chmod(filepath.Join(dir, p), e.Mode.Perm()); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Cleanup(func() {
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				os.Chmod(p, 0o755)
			}
			return nil
		})
	})
}

// readTree lists every entry under dir on the host.
func readTree(t *testing.T, dir string) map[string]hostEntry {
	t.Helper()
	got := map[string]hostEntry{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		e := hostEntry{Mode: info.Mode() & (fs.ModeType | fs.ModePerm)}
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			e.Data, err = os.Readlink(p)
		case info.Mode().IsRegular():
			var b []byte
			b, err = os.ReadFile(p)
			e.Data = string(b)
		}
		rel, _ := filepath.Rel(dir, p)
		got[filepath.ToSlash(rel)] = e
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// sandboxTree lists every entry of sb's workspace as the sandbox sees it:
// each path with its mode (octal permissions and type from stat, content
// or link target from the agent).
func sandboxTree(t *testing.T, sb env.Sandbox) map[string]string {
	t.Helper()
	ctx := context.Background()
	res, err := sb.Exec(ctx, env.ExecOptions{Cmd: []string{"find", ".", "-mindepth", "1"}})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("find: %v, exit %d: %s", err, res.ExitCode, res.Stderr)
	}
	paths := strings.Fields(string(res.Stdout))
	sort.Strings(paths)
	got := map[string]string{}
	for _, p := range paths {
		st, err := sb.Exec(ctx, env.ExecOptions{Cmd: []string{"stat", "-c", "%a %F", p}})
		if err != nil || st.ExitCode != 0 {
			t.Fatalf("stat %s: %v, exit %d: %s", p, err, st.ExitCode, st.Stderr)
		}
		desc := strings.TrimSpace(string(st.Stdout))
		switch {
		case strings.HasSuffix(desc, "regular file"):
			data, err := sb.ReadFile(ctx, p)
			if err != nil {
				t.Fatalf("read %s: %v", p, err)
			}
			desc += " " + string(data)
		case strings.HasSuffix(desc, "symbolic link"):
			rl, err := sb.Exec(ctx, env.ExecOptions{Cmd: []string{"readlink", p}})
			if err != nil {
				t.Fatal(err)
			}
			desc = "link " + strings.TrimSpace(string(rl.Stdout))
		}
		got[strings.TrimPrefix(p, "./")] = desc
	}
	return got
}

// TestLayoutTask: a real task's workspace is its template, laid out in
// warm-pool containers: files, nested directories, modes, content and
// links; the agent can edit it; two sandboxes of one task do not see each
// other's edits; the template on the host is unchanged after an episode
// wrote to its workspace.
func TestLayoutTask(t *testing.T) {
	_, img := daemon(t)
	root := t.TempDir()
	os.Chmod(root, 0o755)
	tmpl := filepath.Join(root, "tasks", "t1")
	writeTree(t, tmpl, map[string]hostEntry{
		"go.mod":                  {0o644, "module example.com/m\n\ngo 1.22\n"},
		"m.go":                    {0o644, "package m\n\nfunc Neg(x int) int { return x }\n"},
		"run.sh":                  {0o755, "#!/bin/sh\necho ran\n"},
		"odd":                     {0o604, "rw----r--"},
		"ro.go":                   {0o444, "package m // read-only, as in the module cache\n"},
		"ro":                      {fs.ModeDir | 0o555, ""},
		"ro/r.go":                 {0o444, "package ro\n"},
		"internal/deep/er/x.go":   {0o644, "package er\n"},
		"internal/deep/er/x.json": {0o644, "{}"},
		"empty":                   {fs.ModeDir | 0o755, ""},
		"link":                    {fs.ModeSymlink | 0o777, "internal/deep/er/x.go"},
	})
	before := readTree(t, tmpl)
	ws := &dirWorkspaces{dirs: map[string]string{"t1": tmpl}}
	cfg := testConfig(img, testRun(t))
	cfg.Workspaces, cfg.WorkspaceRoot = ws, root
	p := newTestProvider(t, cfg)
	waitIdle(t, p, 2)
	ctx := context.Background()
	task := realTask("t1")

	open := func(ep uint64) *Sandbox {
		t.Helper()
		sb, err := p.Open(ctx, env.OpenOptions{Run: cfg.Run, Episode: ep, Task: task})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() { sb.Close(ctx) })
		return sb.(*Sandbox)
	}
	sb1 := open(1)
	want := map[string]string{
		"go.mod":                  "644 regular file module example.com/m\n\ngo 1.22\n",
		"m.go":                    "644 regular file package m\n\nfunc Neg(x int) int { return x }\n",
		"run.sh":                  "755 regular file #!/bin/sh\necho ran\n",
		"odd":                     "604 regular file rw----r--",
		"ro.go":                   "644 regular file package m // read-only, as in the module cache\n",
		"ro":                      "755 directory",
		"ro/r.go":                 "644 regular file package ro\n",
		"internal":                "755 directory",
		"internal/deep":           "755 directory",
		"internal/deep/er":        "755 directory",
		"internal/deep/er/x.go":   "644 regular file package er\n",
		"internal/deep/er/x.json": "644 regular file {}",
		"empty":                   "755 directory",
		"link":                    "link internal/deep/er/x.go",
	}
	if diff := cmp.Diff(want, sandboxTree(t, sb1)); diff != "" {
		t.Errorf("workspace of a laid out task (-want +got):\n%s", diff)
	}
	lay := sb1.Layout()
	if lay.Task != "t1" || lay.Template != tmpl || lay.Files != 8 || lay.Dirs != 5 || lay.Links != 1 || lay.Bytes != 173 {
		t.Errorf("Layout() = %+v, want task t1 from %s: 8 files (173 bytes), 5 dirs, 1 link", lay, tmpl)
	}
	t.Logf("layout: %+v", lay)

	// The agent edits: through the file API, and with commands, also a
	// file that is read-only in the template.
	if err := sb1.WriteFile(ctx, "m.go", []byte("package m\n\nfunc Neg(x int) int { return -x }\n")); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range [][]string{
		{"sh", "-c", "echo '// edited' >> ro.go && echo x > ro/new.go && rm internal/deep/er/x.json"},
		{"./run.sh"},
	} {
		res, err := sb1.Exec(ctx, env.ExecOptions{Cmd: cmd})
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("%q: %v, exit %d: %s", cmd, err, res.ExitCode, res.Stderr)
		}
	}
	sb2 := open(2)
	for _, tc := range []struct {
		sb   *Sandbox
		file string
		want string // "" for absent
	}{
		{sb1, "m.go", "package m\n\nfunc Neg(x int) int { return -x }\n"},
		{sb1, "ro.go", "package m // read-only, as in the module cache\n// edited\n"},
		{sb1, "internal/deep/er/x.json", ""},
		{sb2, "m.go", "package m\n\nfunc Neg(x int) int { return x }\n"},
		{sb2, "ro.go", "package m // read-only, as in the module cache\n"},
		{sb2, "ro/new.go", ""},
		{sb2, "internal/deep/er/x.json", "{}"},
	} {
		got, err := tc.sb.ReadFile(ctx, tc.file)
		switch {
		case tc.want == "" && err == nil:
			t.Errorf("%s: %s exists: %q", tc.sb.Name(), tc.file, got)
		case tc.want != "" && (err != nil || string(got) != tc.want):
			t.Errorf("%s: %s = %q, %v; want %q", tc.sb.Name(), tc.file, got, err, tc.want)
		}
	}
	sb1.Close(ctx)
	sb2.Close(ctx)
	if diff := cmp.Diff(before, readTree(t, tmpl)); diff != "" {
		t.Errorf("the template on the host changed after episodes wrote their workspaces (-before +after):\n%s", diff)
	}
	if st := p.PoolStats(); len(st) != 1 || st[0].WarmHits < 2 {
		t.Errorf("pool stats %+v: want both sandboxes from the warm pool", st)
	}
	// A task that is not real gets the empty workspace, without Template.
	calls := ws.calls.Load()
	sb, err := p.Open(ctx, env.OpenOptions{Run: cfg.Run, Episode: 3, Task: &env.Task{ID: "sim-1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close(ctx)
	if got := sandboxTree(t, sb); len(got) != 0 || ws.calls.Load() != calls {
		t.Errorf("a simulated task's workspace holds %v (Template called %d times), want nothing", got, ws.calls.Load()-calls)
	}
}

// TestLayoutErrors: what cannot be laid out is an error at Open that
// names the task, an infrastructure fault only when it is the machine's,
// and it leaves no container.
func TestLayoutErrors(t *testing.T) {
	_, img := daemon(t)
	root := t.TempDir()
	os.Chmod(root, 0o755)
	outside := t.TempDir()
	os.Chmod(outside, 0o755)
	writeTree(t, filepath.Join(root, "abs-link"), map[string]hostEntry{"go.mod": {0o644, "module m\n"}, "l": {fs.ModeSymlink | 0o777, "/etc/passwd"}})
	writeTree(t, filepath.Join(root, "out-link"), map[string]hostEntry{"d/l": {fs.ModeSymlink | 0o777, "../../../x"}})
	writeTree(t, filepath.Join(outside, "t"), map[string]hostEntry{"go.mod": {0o644, "module m\n"}})
	if err := os.Symlink(outside, filepath.Join(root, "to-outside")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		workspaces env.Workspaces // nil: none configured
		task       string
		infra      bool
		says       []string
	}{
		{name: "real task without workspaces", task: "t-none", says: []string{"t-none", "no Workspaces"}},
		{name: "template outside the root", task: "t-out", says: []string{"t-out", filepath.Join(outside, "t"), root},
			workspaces: &dirWorkspaces{dirs: map[string]string{"t-out": filepath.Join(outside, "t")}}},
		{name: "template through a link out of the root", task: "t-via", says: []string{"t-via", "escapes"},
			workspaces: &dirWorkspaces{dirs: map[string]string{"t-via": filepath.Join(root, "to-outside", "t")}}},
		{name: "module cannot be had", task: "t-gone", says: []string{"t-gone", "module example.com/m@v1.0.0: not found"},
			workspaces: &dirWorkspaces{err: errors.New("module example.com/m@v1.0.0: not found")}},
		{name: "machine fault", task: "t-disk", infra: true, says: []string{"t-disk", "no space left"},
			workspaces: &dirWorkspaces{err: env.Infra(errors.New("write template: no space left on device"))}},
		{name: "absolute link in the template", task: "t-abs", says: []string{"t-abs", "absolute"},
			workspaces: &dirWorkspaces{dirs: map[string]string{"t-abs": filepath.Join(root, "abs-link")}}},
		{name: "link out of the workspace", task: "t-up", says: []string{"t-up", "outside the workspace"},
			workspaces: &dirWorkspaces{dirs: map[string]string{"t-up": filepath.Join(root, "out-link")}}},
		{name: "template missing", task: "t-miss", infra: true, says: []string{"t-miss", "no such file"},
			workspaces: &dirWorkspaces{dirs: map[string]string{"t-miss": filepath.Join(root, "nope")}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(img, testRun(t))
			cfg.PoolSize = 0
			if tc.workspaces != nil {
				cfg.Workspaces, cfg.WorkspaceRoot = tc.workspaces, root
			}
			p := newTestProvider(t, cfg)
			ctx := context.Background()
			sb, err := p.Open(ctx, env.OpenOptions{Run: cfg.Run, Episode: 1, Task: realTask(tc.task)})
			if err == nil {
				sb.Close(ctx)
				t.Fatal("Open succeeded")
			}
			t.Logf("error: %v", err)
			if got := errors.Is(err, env.ErrInfra); got != tc.infra {
				t.Errorf("errors.Is(err, env.ErrInfra) = %v, want %v", got, tc.infra)
			}
			for _, s := range tc.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error does not say %q", s)
				}
			}
			if st := p.Stats(); st.Live != 0 {
				t.Errorf("stats %+v: a sandbox is left open", st)
			}
		})
	}
}

// TestRemoveFile: Remove deletes files and links of the workspace through
// the agent, as rm -f does, and refuses what is not the workspace's or is a
// directory, as the agent's mistake.
func TestRemoveFile(t *testing.T) {
	_, img := daemon(t)
	cfg := testConfig(img, testRun(t))
	cfg.PoolSize = 0
	p := newTestProvider(t, cfg)
	ctx := context.Background()
	sb, err := p.Open(ctx, env.OpenOptions{Run: cfg.Run, Episode: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close(ctx)
	for _, f := range []string{"a.go", "d/b.go"} {
		if err := sb.WriteFile(ctx, f, []byte("package x\n")); err != nil {
			t.Fatal(err)
		}
	}
	if res, err := sb.Exec(ctx, env.ExecOptions{Cmd: []string{"ln", "-s", "d/b.go", "l"}}); err != nil || res.ExitCode != 0 {
		t.Fatalf("ln: %v %s", err, res.Stderr)
	}
	r, ok := sb.(env.Remover)
	if !ok {
		t.Fatal("a docker sandbox is no env.Remover")
	}
	tests := []struct {
		path string
		ok   bool
	}{
		{"a.go", true},
		{"a.go", true},
		{"/workspace/l", true},
		{"d", false},
		{"../etc/passwd", false},
		{"/etc/passwd", false},
		{".", false},
	}
	for _, tc := range tests {
		err := r.Remove(ctx, tc.path)
		if (err == nil) != tc.ok || errors.Is(err, env.ErrInfra) {
			t.Errorf("Remove(%q) = %v, want ok %v and no infrastructure fault", tc.path, err, tc.ok)
		}
	}
	res, err := sb.Exec(ctx, env.ExecOptions{Cmd: []string{"find", "."}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Fields(string(res.Stdout)), []string{".", "./d", "./d/b.go"}; !cmp.Equal(got, want) {
		t.Errorf("workspace after Remove holds %q, want %q", got, want)
	}
}

// TestWorkspaceConfig: the workspace root and Workspaces go together, and
// a root the sandbox user cannot enter is refused when the provider starts,
// without a daemon.
func TestWorkspaceConfig(t *testing.T) {
	ws := &dirWorkspaces{}
	private := t.TempDir()
	os.Chmod(private, 0o700)
	open := t.TempDir()
	os.Chmod(open, 0o755)
	file := filepath.Join(open, "f")
	os.WriteFile(file, nil, 0o644)
	tests := []struct {
		name string
		set  func(*Config)
		says string // "" for valid
	}{
		{"workspaces without a root", func(c *Config) { c.Workspaces = ws }, "without a WorkspaceRoot"},
		{"relative root", func(c *Config) { c.Workspaces, c.WorkspaceRoot = ws, "tasks" }, "not an absolute path"},
		{"missing root", func(c *Config) { c.Workspaces, c.WorkspaceRoot = ws, filepath.Join(open, "nope") }, "no such file"},
		{"root is a file", func(c *Config) { c.Workspaces, c.WorkspaceRoot = ws, file }, "not a directory"},
		{"root the user cannot enter", func(c *Config) { c.Workspaces, c.WorkspaceRoot = ws, private }, "not readable by the sandbox user 4242:4242"},
		{"root without workspaces", func(c *Config) { c.WorkspaceRoot = open }, ""},
		{"both", func(c *Config) { c.Workspaces, c.WorkspaceRoot = ws, open }, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Reap, cfg.PoolSize, cfg.BuildCacheWarm = false, 0, nil
			cfg.User = "4242:4242" // not the owner of the test's directories
			tc.set(&cfg)
			p, err := newProvider(context.Background(), &fakeAPI{}, cfg, zerolog.Nop())
			if err == nil {
				defer p.Close(context.Background())
			}
			switch {
			case tc.says == "" && err != nil:
				t.Errorf("New: %v", err)
			case tc.says != "" && (err == nil || !strings.Contains(err.Error(), tc.says)):
				t.Errorf("New = %v, want an error saying %q", err, tc.says)
			}
		})
	}
}

// TestSandboxPath: how sandboxes see a path under the workspace root.
func TestSandboxPath(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "real", "t"), 0o755)
	os.Symlink(filepath.Join(root, "real"), filepath.Join(root, "alias"))
	p := &Provider{cfg: Config{WorkspaceRoot: filepath.Join(root, "alias")}}
	tests := []struct {
		host, want string
	}{
		{filepath.Join(root, "alias"), TasksDir},
		{filepath.Join(root, "alias", "t"), TasksDir + "/t"},
		{filepath.Join(root, "alias", "x", "..", "t"), TasksDir + "/t"},
		{filepath.Join(root, "real", "t"), TasksDir + "/t"}, // the root named through its link
		{filepath.Join(root, "alias", "..", "other"), ""},
		{"/etc", ""},
	}
	for _, tc := range tests {
		got, err := p.SandboxPath(tc.host)
		if got != tc.want || (err != nil) != (tc.want == "") {
			t.Errorf("SandboxPath(%s) = %q, %v; want %q", tc.host, got, err, tc.want)
		}
	}
	if _, err := (&Provider{}).SandboxPath("/x"); err == nil {
		t.Errorf("SandboxPath without a workspace root succeeded")
	}
}

// TestBenchLayout runs BenchLayout small on a template of its own, to keep
// it working; timings are logged, never asserted. FROG_BENCH_TEMPLATE (a
// host directory, a module in the module cache say) and
// FROG_BENCH_SAMPLES measure for real:
//
//	FROG_BENCH_TEMPLATE=$(go env GOMODCACHE)/github.com/emirpasic/gods@v1.18.1 \
//	FROG_BENCH_SAMPLES=30 go test -run TestBenchLayout -v ./env/docker
func TestBenchLayout(t *testing.T) {
	cli, img := daemon(t)
	tmpl, samples := os.Getenv("FROG_BENCH_TEMPLATE"), 2
	if tmpl == "" {
		root := t.TempDir()
		os.Chmod(root, 0o755)
		tmpl = filepath.Join(root, "t")
		files := map[string]hostEntry{}
		for i := range 20 {
			files[fmt.Sprintf("p%d/f%d.go", i%4, i)] = hostEntry{0o644, strings.Repeat("x", 100*i)}
		}
		writeTree(t, tmpl, files)
	}
	if n, err := strconv.Atoi(os.Getenv("FROG_BENCH_SAMPLES")); err == nil {
		samples = n
	}
	cfg := testConfig(img, testRun(t))
	res, err := BenchLayout(context.Background(), cli, cfg, LayoutBenchOptions{Template: tmpl, Samples: samples})
	if err != nil {
		t.Fatal(err)
	}
	out, _ := json.MarshalIndent(res, "", "  ")
	t.Logf("%s", out)
	if res.WarmAcquireTask.N != samples || res.CopyToContainer.N != samples {
		t.Errorf("measured %d and %d samples, want %d", res.WarmAcquireTask.N, res.CopyToContainer.N, samples)
	}
	assertNoContainers(t, cli, cfg.Run)
}
