package docker

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/client"

	"github.com/frognano/frog/env/envtest"
)

var (
	sharedOnce sync.Once
	sharedCli  *client.Client
	sharedImg  string
	sharedErr  error
	skipErr    error
)

// daemon returns a client and frog's sandbox image, building it once per
// test binary when the daemon lacks it. Without a daemon the test is
// skipped, saying so, except under CI=true, where it fails: Docker tests
// never skip in CI.
func daemon(t testing.TB) (*client.Client, string) {
	t.Helper()
	sharedOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cli, err := NewClient(ctx)
		if err != nil {
			skipErr = err
			return
		}
		sharedCli = cli
		sharedImg, sharedErr = EnsureImage(ctx, cli, BuildOptions{})
	})
	if skipErr != nil {
		envtest.Unavailable(t, "no Docker daemon answers", skipErr)
	}
	if sharedErr != nil {
		t.Fatalf("sandbox image: %v", sharedErr)
	}
	return sharedCli, sharedImg
}

func TestMain(m *testing.M) {
	if run := os.Getenv("FROG_TEST_CHILD_RUN"); run != "" {
		if err := holdSandboxes(run); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}
