package cuda

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestKernelSource(t *testing.T) {
	src, err := kernelSource()
	if err != nil {
		t.Fatal(err)
	}
	// common.cu first: the others use its helpers.
	if !strings.HasPrefix(src, `#line 1 "kernels/common.cu"`) {
		t.Errorf("source starts %q, want common.cu first", src[:40])
	}
	for _, name := range kernelNames {
		if !strings.Contains(src, `extern "C" __global__ void `+name+"(") {
			t.Errorf("no kernel %s in the sources", name)
		}
	}
}

func TestPickArch(t *testing.T) {
	supported := []int{75, 80, 86, 87, 89, 90}
	for _, tc := range []struct {
		dev       int
		supported []int
		want      int
		wantErr   bool
	}{
		{dev: 90, supported: supported, want: 90},
		{dev: 90, supported: nil, want: 90},       // NVRTC cannot say: try the device's own
		{dev: 88, supported: supported, want: 87}, // same major, lower minor
		{dev: 100, supported: supported, wantErr: true},
		{dev: 70, supported: supported, wantErr: true},
	} {
		got, err := pickArch(tc.dev, tc.supported)
		if tc.wantErr {
			if !errors.Is(err, ErrUnavailable) {
				t.Errorf("pickArch(%d) error %v, want ErrUnavailable", tc.dev, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("pickArch(%d) = %d, %v, want %d", tc.dev, got, err, tc.want)
		}
	}
}

func TestCubinKey(t *testing.T) {
	base := cubinKey("src", 90, 12, 8)
	for name, other := range map[string]string{
		"source": cubinKey("src2", 90, 12, 8),
		"arch":   cubinKey("src", 80, 12, 8),
		"nvrtc":  cubinKey("src", 90, 13, 0),
	} {
		if other == base {
			t.Errorf("changing the %s keeps the key %s", name, base)
		}
	}
	if got := cubinKey("src", 90, 12, 8); got != base {
		t.Errorf("key not stable: %s then %s", base, got)
	}
}

func TestCubinCache(t *testing.T) {
	c := cubinCache{dir: filepath.Join(t.TempDir(), "frog", "cubin")}
	if _, ok := c.load("k"); ok {
		t.Fatal("load from an empty cache succeeded")
	}
	want := []byte("\x7fELF cubin")
	if err := c.store("k", want); err != nil {
		t.Fatal(err)
	}
	got, ok := c.load("k")
	if !ok {
		t.Fatal("load after store failed")
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("load (-want +got):\n%s", diff)
	}
	entries, err := os.ReadDir(c.dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("cache holds %d files, want 1 (no temporary left)", len(entries))
	}
	c.remove("k")
	if _, ok := c.load("k"); ok {
		t.Error("load after remove succeeded")
	}
	var none cubinCache
	if err := none.store("k", want); err != nil {
		t.Errorf("store without a folder: %v", err)
	}
	if _, ok := none.load("k"); ok {
		t.Error("load without a folder succeeded")
	}
}

func TestLaunchGrid(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want uint32
	}{{1, 1}, {256, 1}, {257, 2}, {1 << 40, 1 << 16}} {
		if got := launchGrid(tc.n, 256); got != tc.want {
			t.Errorf("launchGrid(%d) = %d, want %d", tc.n, got, tc.want)
		}
	}
}

func TestErrorText(t *testing.T) {
	e := &Error{Call: "cuMemAlloc_v2", Code: 2, Name: "CUDA_ERROR_OUT_OF_MEMORY"}
	if got, want := e.Error(), "cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (2)"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if got := cublasStatusName(13); got != "CUBLAS_STATUS_EXECUTION_FAILED" {
		t.Errorf("cublasStatusName(13) = %q", got)
	}
}

// TestLoadCached checks the CUBIN cache as OpenGPU uses it, with a fake
// compiler and loader: a miss compiles and stores, a hit compiles nothing,
// and a stale entry (one the driver refuses) is compiled afresh and
// replaced.
func TestLoadCached(t *testing.T) {
	c := cubinCache{dir: filepath.Join(t.TempDir(), "cubin")}
	compiles := 0
	compile := func() ([]byte, error) { compiles++; return []byte("\x7fELF v2"), nil }
	load := func(img []byte) (string, error) {
		if !strings.HasPrefix(string(img), "\x7fELF") {
			return "", errors.New("CUDA_ERROR_INVALID_IMAGE")
		}
		return string(img), nil
	}
	step := func(what string, wantHit bool, wantCompiles int) {
		t.Helper()
		m, hit, err := loadCached(c, "k", compile, load)
		if err != nil || m != "\x7fELF v2" || hit != wantHit || compiles != wantCompiles {
			t.Errorf("%s: loadCached = %q, hit %v, %v after %d compiles; want the module, hit %v, after %d",
				what, m, hit, err, compiles, wantHit, wantCompiles)
		}
	}
	step("miss", false, 1)
	step("hit", true, 1)
	if err := os.WriteFile(c.path("k"), []byte("stale"), 0o644); err != nil {
		t.Fatal(err)
	}
	step("stale", false, 2)
	if got, _ := os.ReadFile(c.path("k")); string(got) != "\x7fELF v2" {
		t.Errorf("after a stale entry the cache holds %q, want the fresh CUBIN", got)
	}
	step("hit after replace", true, 2)
	// Without a folder every open compiles.
	c = cubinCache{}
	step("no cache", false, 3)
	step("no cache again", false, 4)
	// A compile error is the error.
	if _, _, err := loadCached(cubinCache{}, "k", func() ([]byte, error) { return nil, errors.New("nvrtc failed") }, load); err == nil {
		t.Error("a failed compile gave no error")
	}
}
