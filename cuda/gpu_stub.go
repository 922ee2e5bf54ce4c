//go:build !linux || !cgo

package cuda

import (
	"fmt"
	"runtime"
)

// OpenGPU reports that this build has no GPU backend: it needs cgo and
// Linux (dlopen). Its error wraps ErrUnavailable.
func OpenGPU(o GPUOptions) (Backend, error) {
	if runtime.GOOS != "linux" {
		return nil, fmt.Errorf("gpu backend needs linux, this is %s: %w", runtime.GOOS, ErrUnavailable)
	}
	return nil, fmt.Errorf("frog built without cgo (CGO_ENABLED=0): %w", ErrUnavailable)
}
