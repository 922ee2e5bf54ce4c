package dockertest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/frognano/frog/env/docker"
	"github.com/frognano/frog/env/envtest"
)

// setupTimeout bounds connecting to the daemon and building the image.
const setupTimeout = 3 * time.Minute

// sandboxImage is built once per test binary.
type sandboxImage struct {
	name    string
	noCli   error // no daemon answers
	imgFail error // the daemon answers but the image cannot be built
}

var shared = sync.OnceValue(func() sandboxImage {
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	cli, err := docker.NewClient(ctx)
	if err != nil {
		return sandboxImage{noCli: err}
	}
	defer cli.Close()
	name, err := docker.EnsureImage(ctx, cli, docker.BuildOptions{})
	return sandboxImage{name: name, imgFail: err}
})

// Image returns frog's sandbox image, building it on the daemon, once per
// test binary, when the daemon lacks it.
func Image(t testing.TB) string {
	t.Helper()
	img := shared()
	if img.noCli != nil {
		envtest.Unavailable(t, "no Docker daemon answers", img.noCli)
	}
	if img.imgFail != nil {
		t.Fatalf("sandbox image: %v", img.imgFail)
	}
	return img.name
}

// Provider returns a Docker provider for cfg, with cfg.Image set to the
// sandbox image and, when empty, cfg.Run to a name unique to the test. When
// the test ends the provider is closed (an error fails the test), then
// whatever containers of the run are still on the daemon are removed, so a
// failed test leaves nothing behind. A test may close the provider itself
// first, to check what it leaves: Close is idempotent.
func Provider(t testing.TB, cfg docker.Config) *docker.Provider {
	t.Helper()
	cfg.Image = Image(t)
	if cfg.Run == "" {
		cfg.Run = RunName(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	cli, err := docker.NewClient(ctx)
	if err != nil {
		envtest.Unavailable(t, "no Docker daemon answers", err)
	}
	prov, err := docker.New(ctx, cli, cfg, zerolog.Nop())
	if err != nil {
		cli.Close()
		t.Fatalf("docker provider: %v", err)
	}
	t.Cleanup(func() {
		defer cli.Close()
		ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
		defer cancel()
		if err := prov.Close(ctx); err != nil {
			t.Errorf("close provider: %v", err)
		}
		if _, err := docker.Reap(ctx, cli, docker.ReapOptions{Run: cfg.Run, Force: true}); err != nil {
			t.Errorf("remove the containers of run %s: %v", cfg.Run, err)
		}
	})
	return prov
}

// RunName is a run name unique to the test and this process, which Docker
// accepts in container names and labels.
func RunName(t testing.TB) string {
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, t.Name())
	b := make([]byte, 3)
	rand.Read(b)
	return fmt.Sprintf("test-%.30s-%d-%s", name, os.Getpid(), hex.EncodeToString(b))
}
