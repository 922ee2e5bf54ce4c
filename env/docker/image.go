package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
)

// agentFS is the agent's source: its Go files, its wire package (which
// frog compiles too), and agent.mod and agent.sum, which are its go.mod and
// go.sum when BuildImage compiles it.
//
//go:embed agent/*.go agent/wire/*.go agent/agent.mod agent/agent.sum
var agentFS embed.FS

// agentSources is agentFS less the tests, by path below agent/.
var agentSources = func() map[string][]byte {
	src := map[string][]byte{}
	err := fs.WalkDir(agentFS, "agent", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, "_test.go") {
			return err
		}
		data, err := fs.ReadFile(agentFS, p)
		src[strings.TrimPrefix(p, "agent/")] = data
		return err
	})
	if err != nil {
		panic(err)
	}
	return src
}()

// dockerfile builds the sandbox image from the context that buildContext
// makes: the agent, which is also the shell and every tool (each a link to
// it), an /etc/passwd, mount points, and the directories the sandbox user
// owns. GOENV=off and GOWORK=off: a go.env or go.work file that a command
// writes changes no later go command.
const dockerfile = `FROM scratch
COPY rootfs/ /
COPY --chown=1000:1000 user/ /
ENV PATH=/usr/local/go/bin:/bin:/usr/bin HOME=/tmp GOCACHE=/cache/go-build GOMODCACHE=/go/pkg/mod GOPATH=/tmp/gopath GOTOOLCHAIN=local GOPROXY=off GOTELEMETRY=off CGO_ENABLED=0 GOENV=off GOWORK=off
LABEL frog.sandbox=%s
USER 1000:1000
WORKDIR /workspace
CMD ["/frog/agent", "-root", "/workspace"]
`

// imageDirs are the directories of the image's root file system (mode
// 0755; /tmp is added with 1777), and userDirs those the sandbox user owns,
// in the build context.
var (
	imageDirs = []string{"bin", "usr", "usr/bin", "usr/local", "usr/local/go",
		"go", "go/pkg", "go/pkg/mod", "etc", "frog", "frog/tasks", "home"}
	userDirs = []string{"workspace", "cache", "cache/go-build", "home", "home/frog"}
)

// ImageVersion identifies the sandbox image this frog builds: a hash of the
// agent's source, its module files, the Dockerfile and the image's
// directories.
var ImageVersion = func() string {
	h := sha256.New()
	names := slices.Sorted(maps.Keys(agentSources))
	for _, n := range names {
		fmt.Fprintf(h, "%s %d\n", n, len(agentSources[n]))
		h.Write(agentSources[n])
	}
	h.Write([]byte(dockerfile))
	fmt.Fprintf(h, "%q %q\n", imageDirs, userDirs)
	return "2-" + hex.EncodeToString(h.Sum(nil))[:12]
}()

// DefaultImage is frog's own sandbox image, frog-sandbox:<ImageVersion>.
var DefaultImage = "frog-sandbox:" + ImageVersion

// BuildOptions says how to build the sandbox image.
type BuildOptions struct {
	// Tag names the image; "" means DefaultImage.
	Tag string
	// Go is the go command that builds the agent (the image's whole
	// userland), fetching its modules through the module proxy when they
	// are not in the module cache; "" means "go".
	Go string
	// Force builds even when the image exists.
	Force bool
	// Progress receives the daemon's build output; nil discards it.
	Progress io.Writer
}

// EnsureImage builds the sandbox image unless the daemon already has it, and
// returns its name. With the image present it costs one inspect.
func EnsureImage(ctx context.Context, cli *client.Client, opts BuildOptions) (string, error) {
	return ensureImage(ctx, cli, opts)
}

// BuildImage builds the sandbox image FROM scratch through the daemon's build
// API (no registry is needed, and nothing from the host but the go command):
// frog's agent (built here by the go command with CGO_ENABLED=0), which is
// also the image's shell and tools, and mount points for the Go toolchain
// (/usr/local/go), the module cache (/go/pkg/mod), the shared build cache
// (/cache) and the workspace (/workspace). It returns the image's name.
func BuildImage(ctx context.Context, cli *client.Client, opts BuildOptions) (string, error) {
	opts.Force = true
	return ensureImage(ctx, cli, opts)
}

func ensureImage(ctx context.Context, api dockerAPI, opts BuildOptions) (string, error) {
	tag := opts.Tag
	if tag == "" {
		tag = DefaultImage
	}
	if !opts.Force {
		_, err := api.ImageInspect(ctx, tag)
		if err == nil {
			return tag, nil
		}
		if !isNotFound(err) {
			return "", infra(err, "inspect image %s", tag)
		}
	}
	buildCtx, err := buildContext(ctx, opts)
	if err != nil {
		return "", fmt.Errorf("docker: build image %s: %w", tag, err)
	}
	resp, err := api.ImageBuild(ctx, bytes.NewReader(buildCtx), build.ImageBuildOptions{
		Tags:        []string{tag},
		Remove:      true,
		ForceRemove: true,
		Labels:      map[string]string{"frog.sandbox": ImageVersion},
		Version:     build.BuilderV1,
	})
	if err != nil {
		return "", infra(err, "build image %s", tag)
	}
	defer resp.Body.Close()
	if err := readBuildOutput(resp.Body, opts.Progress); err != nil {
		return "", infra(err, "build image %s", tag)
	}
	return tag, nil
}

// readBuildOutput copies the daemon's JSON progress stream to w and returns
// the error it reports, if any.
func readBuildOutput(r io.Reader, w io.Writer) error {
	if w == nil {
		w = io.Discard
	}
	dec := json.NewDecoder(r)
	for {
		var msg struct {
			Stream      string `json:"stream"`
			Error       string `json:"error"`
			ErrorDetail struct {
				Message string `json:"message"`
			} `json:"errorDetail"`
		}
		if err := dec.Decode(&msg); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		io.WriteString(w, msg.Stream)
		if msg.Error != "" || msg.ErrorDetail.Message != "" {
			return errors.New(strings.TrimSpace(msg.Error + " " + msg.ErrorDetail.Message))
		}
	}
}

// buildContext makes the tar the daemon builds from.
func buildContext(ctx context.Context, opts BuildOptions) ([]byte, error) {
	agent, names, err := buildAgent(ctx, opts.Go)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	now := time.Unix(0, 0)
	dir := func(name string, mode int64) {
		tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode, ModTime: now})
	}
	file := func(name string, mode int64, data []byte) {
		tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)), ModTime: now})
		tw.Write(data)
	}
	link := func(name, target string) {
		tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: target, Mode: 0o777, ModTime: now})
	}
	file("Dockerfile", 0o644, fmt.Appendf(nil, dockerfile, ImageVersion))
	dir("rootfs", 0o755)
	for _, d := range imageDirs {
		dir("rootfs/"+d, 0o755)
	}
	dir("rootfs/tmp", 0o1777)
	file("rootfs"+AgentPath, 0o755, agent)
	for _, n := range names {
		link("rootfs/bin/"+n, AgentPath)
	}
	link("rootfs/usr/bin/env", AgentPath)
	file("rootfs/etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/bin/sh\nfrog:x:1000:1000:frog:/home/frog:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n"))
	file("rootfs/etc/group", 0o644, []byte("root:x:0:\nfrog:x:1000:\nnobody:x:65534:\n"))
	dir("user", 0o755)
	for _, d := range userDirs {
		dir("user/"+d, 0o755)
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// buildAgent compiles the embedded agent source, as its own module (agent.mod
// and agent.sum, whose versions match frog's go.mod), into a static binary
// for the daemon's platform (linux, this machine's architecture), and lists
// the tools it provides (the names the image links to it).
func buildAgent(ctx context.Context, goCmd string) (bin []byte, tools []string, err error) {
	if goCmd == "" {
		goCmd = "go"
	}
	dir, err := os.MkdirTemp("", "frog-agent-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(dir)
	for name, data := range agentSources {
		switch name {
		case "agent.mod":
			name = "go.mod"
		case "agent.sum":
			name = "go.sum"
		}
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, nil, err
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return nil, nil, err
		}
	}
	out := filepath.Join(dir, "agent")
	cmd := exec.CommandContext(ctx, goCmd, "build", "-trimpath", "-ldflags=-s -w", "-o", out, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH, "GOWORK=off", "GOFLAGS=-mod=readonly", "GO111MODULE=on")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return nil, nil, fmt.Errorf("build the agent with %s: %w\n%s", goCmd, err, msg)
	}
	list, err := exec.CommandContext(ctx, out, "--list").Output()
	if err != nil {
		return nil, nil, fmt.Errorf("list the agent's tools: %w", err)
	}
	bin, err = os.ReadFile(out)
	return bin, strings.Fields(string(list)), err
}

// checkImage makes sure the daemon has ref: present, or pulled within
// timeout. The error names the image and says how to get frog's own.
func checkImage(ctx context.Context, api dockerAPI, ref string, timeout time.Duration) error {
	_, err := api.ImageInspect(ctx, ref)
	if err == nil {
		return nil
	}
	if !isNotFound(err) {
		return infra(err, "inspect image %s", ref)
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	rc, perr := api.ImagePull(pctx, ref, image.PullOptions{})
	if perr == nil {
		perr = readBuildOutput(rc, nil)
		rc.Close()
		if perr == nil {
			if _, err = api.ImageInspect(ctx, ref); err == nil {
				return nil
			}
			perr = err
		}
	}
	hint := "pull it or build it"
	if strings.HasPrefix(ref, "frog-sandbox:") {
		hint = "build it with `frog image build` (docker.BuildImage)"
	}
	return infra(perr, "image %s is not on the daemon and could not be pulled; %s", ref, hint)
}
