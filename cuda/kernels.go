package cuda

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// The GPU backend's kernels are CUDA C sources embedded in the binary and
// compiled by NVRTC, on the machine that runs them, to a CUBIN for the
// device's compute capability. This file holds the parts of that which need
// no GPU, so that they are built and tested everywhere.

//go:embed kernels/*.cu
var kernelFiles embed.FS

// kernelNames are the kernels the GPU backend resolves after loading the
// module; a missing one is an error at open.
var kernelNames = []string{
	"frog_fill", "frog_scale_matrix", "frog_add_bias",
	"frog_relu", "frog_tanh", "frog_relu_grad", "frog_tanh_grad",
	"frog_gather", "frog_scatter_add", "frog_adam",
	"frog_softmax", "frog_softmax_grad",
	"frog_sum_cols", "frog_sum_rows",
}

// kernelSource returns every kernels/*.cu file, in name order, as one
// program, each preceded by a #line directive so that NVRTC's log names the
// file and line.
func kernelSource() (string, error) {
	names, err := fs.Glob(kernelFiles, "kernels/*.cu")
	if err != nil {
		return "", fmt.Errorf("kernel sources: %w", err)
	}
	slices.Sort(names)
	var b strings.Builder
	for _, name := range names {
		data, err := kernelFiles.ReadFile(name)
		if err != nil {
			return "", fmt.Errorf("kernel sources: %w", err)
		}
		fmt.Fprintf(&b, "#line 1 %q\n", name)
		b.Write(data)
		b.WriteString("\n")
	}
	return b.String(), nil
}

// pickArch chooses the sm_XY to compile for on a device of compute capability
// dev (major·10+minor) given the architectures NVRTC supports (nil when it
// cannot say). A CUBIN runs on devices of its major version and an equal or
// higher minor one, so an unsupported sm_XY falls back to the highest
// supported sm_XZ with Z < Y.
func pickArch(dev int, supported []int) (int, error) {
	if len(supported) == 0 || slices.Contains(supported, dev) {
		return dev, nil
	}
	best := -1
	for _, s := range supported {
		if s/10 == dev/10 && s < dev && s > best {
			best = s
		}
	}
	if best < 0 {
		return 0, fmt.Errorf("nvrtc supports no architecture that runs on sm_%d (it supports %v): %w", dev, supported, ErrUnavailable)
	}
	return best, nil
}

// nvrtcOptions are the compile options for sm_XY.
func nvrtcOptions(arch int) []string {
	return []string{
		fmt.Sprintf("--gpu-architecture=sm_%d", arch),
		"--std=c++17",
		"--fmad=true",
	}
}

// cubinKey names the CUBIN of src compiled for arch by one NVRTC version.
func cubinKey(src string, arch, nvrtcMajor, nvrtcMinor int) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00sm_%d\x00nvrtc %d.%d\x00%s", src, arch, nvrtcMajor, nvrtcMinor, strings.Join(nvrtcOptions(arch), " "))
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// DefaultCubinDir is where compiled kernels are cached:
// os.UserCacheDir()/frog/cubin.
func DefaultCubinDir() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("cubin cache: %w", err)
	}
	return filepath.Join(dir, "frog", "cubin"), nil
}

// cubinCache is a folder of CUBINs named by cubinKey. The empty cache (no
// folder) stores nothing.
type cubinCache struct{ dir string }

func (c cubinCache) path(key string) string { return filepath.Join(c.dir, key+".cubin") }

// load returns the cached CUBIN for key, if any.
func (c cubinCache) load(key string) ([]byte, bool) {
	if c.dir == "" {
		return nil, false
	}
	data, err := os.ReadFile(c.path(key))
	if err != nil || len(data) == 0 {
		return nil, false
	}
	return data, true
}

// store writes data under key atomically (temporary file, fsync, rename), so
// that concurrent processes never read half a CUBIN.
func (c cubinCache) store(key string, data []byte) error {
	if c.dir == "" {
		return nil
	}
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return fmt.Errorf("cubin cache: %w", err)
	}
	f, err := os.CreateTemp(c.dir, key+".*.tmp")
	if err != nil {
		return fmt.Errorf("cubin cache: %w", err)
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, c.path(key))
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("cubin cache: %w", err)
	}
	return nil
}

// loadCached returns the module of key, loaded by load: from the CUBIN in
// c when there is one that loads (hit), else compiled by compile and stored,
// replacing a stale or damaged entry. Only compile and a failing load of a
// fresh CUBIN are errors; a failed store costs a compile next time.
func loadCached[M any](c cubinCache, key string, compile func() ([]byte, error), load func([]byte) (M, error)) (m M, hit bool, err error) {
	if img, ok := c.load(key); ok {
		if m, err := load(img); err == nil {
			return m, true, nil
		}
		c.remove(key)
	}
	img, err := compile()
	if err != nil {
		return m, false, err
	}
	if m, err = load(img); err != nil {
		return m, false, err
	}
	_ = c.store(key, img)
	return m, false, nil
}

// remove drops a CUBIN that failed to load.
func (c cubinCache) remove(key string) {
	if c.dir != "" {
		os.Remove(c.path(key))
	}
}

// launchGrid returns the number of blocks of threads threads for a
// grid-stride loop over n elements, capped so that huge n loop instead.
func launchGrid(n int64, threads int) uint32 {
	const maxBlocks = 1 << 16
	b := (n + int64(threads) - 1) / int64(threads)
	return uint32(min(max(b, 1), maxBlocks))
}

// cublasStatusName names a cublasStatus_t for a cuBLAS too old to do it
// itself (cublasGetStatusName).
func cublasStatusName(code int) string {
	names := map[int]string{
		0: "CUBLAS_STATUS_SUCCESS", 1: "CUBLAS_STATUS_NOT_INITIALIZED",
		3: "CUBLAS_STATUS_ALLOC_FAILED", 7: "CUBLAS_STATUS_INVALID_VALUE",
		8: "CUBLAS_STATUS_ARCH_MISMATCH", 11: "CUBLAS_STATUS_MAPPING_ERROR",
		13: "CUBLAS_STATUS_EXECUTION_FAILED", 14: "CUBLAS_STATUS_INTERNAL_ERROR",
		15: "CUBLAS_STATUS_NOT_SUPPORTED", 16: "CUBLAS_STATUS_LICENSE_ERROR",
	}
	if n, ok := names[code]; ok {
		return n
	}
	return "CUBLAS_STATUS_UNKNOWN"
}
