package docker

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/frognano/frog/env"
)

// Config describes the containers a Provider makes. Start from DefaultConfig
// and change what you need: a zero Config is not valid.
type Config struct {
	// Image is the sandbox image. DefaultImage is frog's own, built by
	// BuildImage; any other image must be on the daemon (or pullable) and
	// must contain the agent at AgentPath (see BuildImage).
	Image string
	// Run labels every container (frog.run) when OpenOptions.Run is empty,
	// and always labels the warm pool's containers.
	Run string
	// User runs the agent and every command ("uid:gid"); never root.
	User string
	// Network is the container's network mode; "none" (the default) gives
	// it a loopback interface only.
	Network string
	// ReadOnlyRootfs mounts the image's file system read-only; the
	// workspace and /tmp are tmpfs mounts either way.
	ReadOnlyRootfs bool
	// NoNewPrivileges sets no-new-privileges; all capabilities are always
	// dropped.
	NoNewPrivileges bool
	// Memory is the memory limit in bytes (swap included: no swap);
	// CPUs the share of CPUs; Pids the most processes. 0 means unlimited.
	Memory int64
	CPUs   float64
	Pids   int64
	// WorkspaceBytes and TmpBytes size the tmpfs mounts at Workspace and
	// /tmp (they count against Memory).
	WorkspaceBytes int64
	TmpBytes       int64
	// GoRoot and GoModCache are host directories mounted read-only at
	// /usr/local/go and /go/pkg/mod; "" mounts nothing.
	GoRoot     string
	GoModCache string
	// BuildCacheVolume is a named volume that holds the Go build cache
	// shared by all sandboxes (/cache/go-build, in the go command's
	// format). Sandboxes mount it read-only, and each command they run
	// gets a fresh, writable layer of its own over it (see the agent's
	// gocacheprog), so that nothing a command writes into a build cache is
	// read by any later command or sandbox. "" mounts nothing: commands
	// still get their own layers.
	BuildCacheVolume string
	// BuildCacheWarm are the packages the provider compiles into the
	// shared build cache when it starts (once per process, volume and
	// image), in a container of its own that mounts the volume writable
	// and runs only the go command: the harness is the cache's only
	// writer. When the cache is warm this costs a container start and the
	// go command finding everything cached (2–3 s). nil warms nothing;
	// WarmTimeout bounds it.
	BuildCacheWarm []string
	WarmTimeout    time.Duration
	// Workspaces lays out the workspaces of real tasks (env.Task.Real):
	// Open asks it for the task's template and has the agent copy the
	// template into the new sandbox's workspace. nil serves simulated
	// tasks only: a real task is then an error at Open, never a sandbox
	// with an empty workspace.
	Workspaces env.Workspaces
	// WorkspaceRoot is the host directory under which Workspaces makes
	// its templates. Every sandbox, pooled ones included, mounts it
	// read-only at TasksDir, and a template outside it is an error at
	// Open. Its files must be readable by User. "" mounts nothing; it is
	// required with Workspaces.
	WorkspaceRoot string
	// ExecTimeout is a command's timeout when ExecOptions.Timeout is 0;
	// MaxOutput the cap of stdout and of stderr when ExecOptions.MaxOutput
	// is 0.
	ExecTimeout time.Duration
	MaxOutput   int
	// StartTimeout bounds creating and starting a container and its
	// agent's hello; CloseTimeout bounds removing it; AgentGrace is how
	// long past a command's timeout the agent may take to answer before
	// the sandbox counts as dead.
	StartTimeout time.Duration
	CloseTimeout time.Duration
	AgentGrace   time.Duration
	// PoolSize is the number of started containers kept ready per image;
	// PoolParallel how many of them are made at once. 0 disables the pool.
	PoolSize     int
	PoolParallel int
	// Reuse is how many episodes one container may serve, one after the
	// other (1: a fresh container for every episode). Between two, the
	// agent resets it (see Sandbox.Close): no process left, the workspace,
	// /tmp and /dev/shm emptied, the System V IPC objects removed; all else
	// an episode could write is read-only. A container goes back to the
	// pool only when its episode's calls all ended, its agent answers and
	// the pool has room; otherwise it is removed. Needs the pool.
	Reuse int
	// PullTimeout bounds the attempt to pull an image that is missing.
	PullTimeout time.Duration
	// Reap removes, when the provider starts, the containers of frog runs
	// whose process is gone (see Reap).
	Reap bool
}

// Paths inside the container.
const (
	Workspace = "/workspace"
	AgentPath = "/frog/agent"
	// TasksDir is where Config.WorkspaceRoot is mounted, read-only.
	TasksDir = "/frog/tasks"
)

// DefaultConfig is a networkless, unprivileged, read-only sandbox of frog's
// own image with 2 GiB of memory, one CPU, 512 processes, the host's Go
// toolchain and module cache mounted read-only, the shared build cache
// read-only and warmed with the standard library, and a warm pool of 4
// whose containers serve up to 16 episodes each, reset between them.
func DefaultConfig() Config {
	return Config{
		Image:            DefaultImage,
		Run:              "frog",
		User:             "1000:1000",
		Network:          "none",
		ReadOnlyRootfs:   true,
		NoNewPrivileges:  true,
		Memory:           2 << 30,
		CPUs:             1,
		Pids:             512,
		WorkspaceBytes:   1 << 30,
		TmpBytes:         1 << 30,
		GoRoot:           hostGo().root,
		GoModCache:       hostGo().modCache,
		BuildCacheVolume: "frog-go-build",
		BuildCacheWarm:   []string{"std"},
		WarmTimeout:      15 * time.Minute,
		ExecTimeout:      10 * time.Minute,
		MaxOutput:        1 << 20,
		StartTimeout:     60 * time.Second,
		CloseTimeout:     30 * time.Second,
		AgentGrace:       30 * time.Second,
		PoolSize:         4,
		PoolParallel:     2,
		Reuse:            16,
		PullTimeout:      10 * time.Second,
		Reap:             true,
	}
}

// Validate reports the first nonsensical field.
func (c Config) Validate() error {
	switch {
	case c.Image == "":
		return errors.New("docker: config: no image")
	case c.User == "" || c.User == "0" || c.User == "root" || strings.HasPrefix(c.User, "0:") || strings.HasPrefix(c.User, "root:"):
		return fmt.Errorf("docker: config: user %q: sandboxes never run as root", c.User)
	case c.Memory < 0 || c.CPUs < 0 || c.Pids < 0 || c.WorkspaceBytes < 0 || c.TmpBytes < 0:
		return errors.New("docker: config: negative limit")
	case c.ExecTimeout <= 0 || c.StartTimeout <= 0 || c.CloseTimeout <= 0 || c.AgentGrace <= 0 || (len(c.BuildCacheWarm) > 0 && c.WarmTimeout <= 0):
		return errors.New("docker: config: timeouts must be > 0")
	case c.MaxOutput <= 0:
		return errors.New("docker: config: max output must be > 0")
	case c.PoolSize < 0 || (c.PoolSize > 0 && c.PoolParallel <= 0):
		return errors.New("docker: config: pool size must be >= 0 and pool parallelism > 0")
	case c.Reuse < 0:
		return fmt.Errorf("docker: config: reuse %d: want >= 0 episodes a container (0 or 1: a fresh one each)", c.Reuse)
	case c.WorkspaceRoot != "" && !filepath.IsAbs(c.WorkspaceRoot):
		return fmt.Errorf("docker: config: workspace root %q is not an absolute path", c.WorkspaceRoot)
	case c.Workspaces != nil && c.WorkspaceRoot == "":
		return errors.New("docker: config: Workspaces without a WorkspaceRoot: sandboxes could not see the templates")
	}
	return nil
}

type goDirs struct{ root, modCache string }

// hostGo asks the go command, once, where the host's toolchain and module
// cache are; without a go command it falls back to this binary's GOROOT and
// no module cache.
var hostGo = sync.OnceValue(func() goDirs {
	d := goDirs{root: runtime.GOROOT()}
	out, err := exec.Command("go", "env", "GOROOT", "GOMODCACHE").Output()
	if f := strings.Split(strings.TrimSpace(string(out)), "\n"); err == nil && len(f) == 2 {
		d.root, d.modCache = strings.TrimSpace(f[0]), strings.TrimSpace(f[1])
	}
	return d
})
