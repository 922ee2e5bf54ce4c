package cuda

import (
	"os"
	"testing"
)

// requireGPU ends a test that needs the GPU backend, which did not open
// (err): a skip, or a failure that says why when $FROG_REQUIRE_GPU is set,
// as gpu-check sets it on a machine with an NVIDIA device, where a missing
// library is a fault to report, not a reason to skip.
func requireGPU(t *testing.T, err error) {
	t.Helper()
	if os.Getenv("FROG_REQUIRE_GPU") != "" {
		t.Fatalf("FROG_REQUIRE_GPU is set and the GPU backend did not open: %v", err)
	}
	t.Skipf("no GPU backend here, GPU path not tested: %v", err)
}
