package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/frognano/frog/env"
)

// dockerAPI lists the Docker client methods env/docker calls, so that tests
// can inject faults. *client.Client implements it.
type dockerAPI interface {
	Ping(ctx context.Context) (types.Ping, error)
	ContainerCreate(ctx context.Context, config *container.Config, hostConfig *container.HostConfig, networkingConfig *network.NetworkingConfig, platform *ocispec.Platform, containerName string) (container.CreateResponse, error)
	ContainerStart(ctx context.Context, containerID string, options container.StartOptions) error
	ContainerAttach(ctx context.Context, containerID string, options container.AttachOptions) (types.HijackedResponse, error)
	ContainerInspect(ctx context.Context, containerID string) (container.InspectResponse, error)
	ContainerList(ctx context.Context, options container.ListOptions) ([]container.Summary, error)
	ContainerRemove(ctx context.Context, containerID string, options container.RemoveOptions) error
	ContainerRename(ctx context.Context, containerID, newContainerName string) error
	ContainerWait(ctx context.Context, containerID string, condition container.WaitCondition) (<-chan container.WaitResponse, <-chan error)
	CopyToContainer(ctx context.Context, containerID, dstPath string, content io.Reader, options container.CopyToContainerOptions) error
	ContainerExecCreate(ctx context.Context, containerID string, options container.ExecOptions) (container.ExecCreateResponse, error)
	ContainerExecAttach(ctx context.Context, execID string, config container.ExecAttachOptions) (types.HijackedResponse, error)
	ContainerExecInspect(ctx context.Context, execID string) (container.ExecInspect, error)
	ImageInspect(ctx context.Context, imageID string, inspectOpts ...client.ImageInspectOption) (image.InspectResponse, error)
	ImagePull(ctx context.Context, refStr string, options image.PullOptions) (io.ReadCloser, error)
	ImageBuild(ctx context.Context, buildContext io.Reader, options build.ImageBuildOptions) (build.ImageBuildResponse, error)
}

var _ dockerAPI = (*client.Client)(nil)

// ErrNoDaemon is wrapped (with env.ErrInfra) by NewClient when no Docker
// daemon answers: the command line falls back to env/process on it.
var ErrNoDaemon = errors.New("no docker daemon answers")

// NewClient connects to the daemon named by the environment (DOCKER_HOST and
// friends, else the local socket), negotiates the API version and pings it.
// When no daemon answers the error wraps ErrNoDaemon and env.ErrInfra.
func NewClient(ctx context.Context) (*client.Client, error) {
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, env.Infra(fmt.Errorf("docker: client: %w", err))
	}
	if _, err := cli.Ping(ctx); err != nil {
		cli.Close()
		return nil, env.Infra(fmt.Errorf("docker: ping %s: %w: %w", cli.DaemonHost(), ErrNoDaemon, err))
	}
	cli.NegotiateAPIVersion(ctx)
	return cli, nil
}

func isNotFound(err error) bool { return cerrdefs.IsNotFound(err) }

// isGone says a container removal needs no more doing: the container is
// not there, or another remover (a reaper in another frog) is removing it.
func isGone(err error) bool {
	return isNotFound(err) || (cerrdefs.IsConflict(err) && strings.Contains(err.Error(), "already in progress"))
}

// infra wraps a daemon fault: "docker: <what>: <err>" in the ErrInfra category.
func infra(err error, format string, args ...any) error {
	return env.Infra(fmt.Errorf("docker: "+format+": %w", append(args, err)...))
}
