//go:build linux && cgo

package cuda

import (
	"bytes"
	"testing"
)

// TestKernelsCompile compiles the embedded kernels with the NVRTC found on
// this machine, when there is one (no GPU needed), and checks that the CUBIN
// defines every kernel the GPU backend resolves.
func TestKernelsCompile(t *testing.T) {
	name, major, minor, err := loadNVRTC([]int{13, 12})
	if err != nil {
		t.Skipf("no NVRTC on this machine, kernels not compiled: %v", err)
	}
	t.Logf("%s: NVRTC %d.%d, supported archs %v", name, major, minor, nvrtcSupportedArchs())
	src, err := kernelSource()
	if err != nil {
		t.Fatal(err)
	}
	for _, dev := range []int{80, 90} {
		arch, err := pickArch(dev, nvrtcSupportedArchs())
		if err != nil {
			t.Fatal(err)
		}
		img, err := nvrtcCompile(src, "frog_kernels.cu", nvrtcOptions(arch))
		if err != nil {
			t.Fatalf("sm_%d: %v", arch, err)
		}
		// A CUBIN is an ELF file whose version field Go's debug/elf rejects:
		// look for the magic and for each kernel in the string table.
		if !bytes.HasPrefix(img, []byte("\x7fELF")) {
			t.Fatalf("sm_%d: cubin is not ELF", arch)
		}
		for _, k := range kernelNames {
			if !bytes.Contains(img, []byte("\x00"+k+"\x00")) {
				t.Errorf("sm_%d: cubin lacks kernel %s", arch, k)
			}
		}
		t.Logf("sm_%d: cubin of %d bytes", arch, len(img))
	}
}

// TestCompileErrorLog checks that a compile error carries NVRTC's log.
func TestCompileErrorLog(t *testing.T) {
	if _, _, _, err := loadNVRTC([]int{13, 12}); err != nil {
		t.Skipf("no NVRTC on this machine: %v", err)
	}
	_, err := nvrtcCompile("extern \"C\" __global__ void k() { undefined_thing(); }", "bad.cu", nvrtcOptions(80))
	e, ok := err.(*Error)
	if !ok || e.Call != "nvrtcCompileProgram" || e.Name != "NVRTC_ERROR_COMPILATION" || !bytes.Contains([]byte(e.Log), []byte("undefined_thing")) {
		t.Fatalf("nvrtcCompile(bad) = %v, want an NVRTC_ERROR_COMPILATION with a log naming undefined_thing", err)
	}
}
