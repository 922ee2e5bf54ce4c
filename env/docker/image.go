package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
)

//go:embed agent/main.go
var agentSource []byte

// dockerfile builds the sandbox image from the context that buildContext
// makes: a static busybox with its applets, the agent, an /etc/passwd, mount
// points, and the directories the sandbox user owns.
const dockerfile = `FROM scratch
COPY rootfs/ /
COPY --chown=1000:1000 user/ /
ENV PATH=/usr/local/go/bin:/bin:/usr/bin HOME=/tmp GOCACHE=/cache/go-build GOMODCACHE=/go/pkg/mod GOPATH=/tmp/gopath GOTOOLCHAIN=local GOPROXY=off GOTELEMETRY=off CGO_ENABLED=0
LABEL frog.sandbox=%s
USER 1000:1000
WORKDIR /workspace
CMD ["/frog/agent", "-root", "/workspace"]
`

// ImageVersion identifies the sandbox image this frog builds: a hash of the
// agent's source and of the Dockerfile.
var ImageVersion = func() string {
	h := sha256.New()
	h.Write(agentSource)
	h.Write([]byte(dockerfile))
	return "1-" + hex.EncodeToString(h.Sum(nil))[:12]
}()

// DefaultImage is frog's own sandbox image, frog-sandbox:<ImageVersion>.
var DefaultImage = "frog-sandbox:" + ImageVersion

// BuildOptions says how to build the sandbox image.
type BuildOptions struct {
	// Tag names the image; "" means DefaultImage.
	Tag string
	// Busybox is a statically linked busybox (Debian's busybox-static
	// installs /bin/busybox); "" means /bin/busybox, else busybox on PATH.
	Busybox string
	// Go is the go command that builds the agent; "" means "go".
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
// API (no registry is needed): a static busybox, frog's agent (built here by
// the go command with CGO_ENABLED=0), and mount points for the Go toolchain
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
	bb, err := findBusybox(opts.Busybox)
	if err != nil {
		return nil, err
	}
	bbData, err := os.ReadFile(bb)
	if err != nil {
		return nil, err
	}
	applets, err := exec.CommandContext(ctx, bb, "--list").Output()
	if err != nil {
		return nil, fmt.Errorf("list the applets of %s: %w", bb, err)
	}
	agent, err := buildAgent(ctx, opts.Go)
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
	for _, d := range []string{"rootfs", "rootfs/bin", "rootfs/usr", "rootfs/usr/bin", "rootfs/usr/local", "rootfs/usr/local/go",
		"rootfs/go", "rootfs/go/pkg", "rootfs/go/pkg/mod", "rootfs/etc", "rootfs/frog", "rootfs/home"} {
		dir(d, 0o755)
	}
	dir("rootfs/tmp", 0o1777)
	file("rootfs/bin/busybox", 0o755, bbData)
	for a := range strings.FieldsSeq(string(applets)) {
		if a != "busybox" && !strings.Contains(a, "/") {
			link("rootfs/bin/"+a, "busybox")
		}
	}
	link("rootfs/usr/bin/env", "/bin/busybox")
	file("rootfs/frog/agent", 0o755, agent)
	file("rootfs/etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/bin/sh\nfrog:x:1000:1000:frog:/home/frog:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n"))
	file("rootfs/etc/group", 0o644, []byte("root:x:0:\nfrog:x:1000:\nnobody:x:65534:\n"))
	for _, d := range []string{"user", "user/workspace", "user/cache", "user/cache/go-build", "user/home", "user/home/frog"} {
		dir(d, 0o755)
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func findBusybox(p string) (string, error) {
	if p != "" {
		return p, nil
	}
	if _, err := os.Stat("/bin/busybox"); err == nil {
		return "/bin/busybox", nil
	}
	if p, err := exec.LookPath("busybox"); err == nil {
		return p, nil
	}
	return "", errors.New("no busybox: install a static one (Debian: apt-get install busybox-static)")
}

// buildAgent compiles the embedded agent source into a static binary for
// the daemon's platform (linux, this machine's architecture).
func buildAgent(ctx context.Context, goCmd string) ([]byte, error) {
	if goCmd == "" {
		goCmd = "go"
	}
	dir, err := os.MkdirTemp("", "frog-agent-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "main.go"), agentSource, 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module frogagent\n\ngo 1.25\n"), 0o644); err != nil {
		return nil, err
	}
	out := filepath.Join(dir, "agent")
	cmd := exec.CommandContext(ctx, goCmd, "build", "-trimpath", "-ldflags=-s -w", "-o", out, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH, "GOWORK=off", "GOFLAGS=", "GO111MODULE=on")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build the agent with %s: %w\n%s", goCmd, err, msg)
	}
	return os.ReadFile(out)
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
