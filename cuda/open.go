package cuda

import "fmt"

// GPUOptions configures OpenGPU.
type GPUOptions struct {
	// Device is the CUDA device ordinal.
	Device int
	// CacheDir holds compiled kernels; "" means DefaultCubinDir. NoCache
	// compiles every time and stores nothing.
	CacheDir string
	NoCache  bool
}

// Devices are the values of --device that Open accepts.
var Devices = []string{"auto", "cpu", "cuda"}

// Open implements --device: "cpu" is the CPU backend; "cuda" is the GPU
// backend or an error, wrapping ErrUnavailable, that names the library or
// call that failed; "auto" (or "") is the GPU backend when one opens, else
// the CPU backend. why says in words which was chosen and why, for the log:
// "no usable GPU: cuda unavailable: dlopen: libcuda.so.1: cannot open shared
// object file: No such file or directory".
func Open(kind string) (b Backend, why string, err error) {
	switch kind {
	case "cpu":
		return NewCPU(), "--device cpu", nil
	case "cuda":
		g, err := OpenGPU(GPUOptions{})
		if err != nil {
			return nil, "", fmt.Errorf("--device cuda: %w", err)
		}
		return g, "--device cuda", nil
	case "auto", "":
		g, err := OpenGPU(GPUOptions{})
		if err != nil {
			return NewCPU(), "no usable GPU: " + err.Error(), nil
		}
		return g, "GPU found", nil
	}
	return nil, "", invalid("--device %q, want one of %v", kind, Devices)
}
