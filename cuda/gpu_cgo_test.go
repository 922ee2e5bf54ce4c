//go:build linux && cgo

package cuda

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestKernelsCompile compiles the embedded kernels with the NVRTC found on
// this machine, when there is one (no GPU needed), and checks that the CUBIN
// defines every kernel the GPU backend resolves.
func TestKernelsCompile(t *testing.T) {
	f, major, minor, err := loadNVRTC([]int{13, 12}, defaultLibSearch())
	if err != nil {
		requireGPU(t, err) // a GPU machine without NVRTC fails here
	}
	t.Logf("%s (%s): NVRTC %d.%d, supported archs %v", f.name, f.path, major, minor, nvrtcSupportedArchs())
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
	if _, _, _, err := loadNVRTC([]int{13, 12}, defaultLibSearch()); err != nil {
		requireGPU(t, err)
	}
	_, err := nvrtcCompile("extern \"C\" __global__ void k() { undefined_thing(); }", "bad.cu", nvrtcOptions(80))
	e, ok := err.(*Error)
	if !ok || e.Call != "nvrtcCompileProgram" || e.Name != "NVRTC_ERROR_COMPILATION" || !bytes.Contains([]byte(e.Log), []byte("undefined_thing")) {
		t.Fatalf("nvrtcCompile(bad) = %v, want an NVRTC_ERROR_COMPILATION with a log naming undefined_thing", err)
	}
}

// TestGPUKernelCache opens the GPU backend three times on one cache folder:
// the first compiles and stores the CUBIN, the second loads it (a hit), and
// after the entry is damaged the third compiles again and replaces it.
func TestGPUKernelCache(t *testing.T) {
	dir := t.TempDir()
	open := func(what string, wantHit bool) {
		t.Helper()
		b, err := OpenGPU(GPUOptions{CacheDir: dir})
		if err != nil {
			requireGPU(t, err)
		}
		g := b.(*gpu)
		if g.s.cacheHit != wantHit {
			t.Errorf("%s: cache hit %v, want %v (%s)", what, g.s.cacheHit, wantHit, g.Name())
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
	}
	entries := func() []string {
		m, _ := filepath.Glob(filepath.Join(dir, "*.cubin"))
		return m
	}
	open("first open", false)
	files := entries()
	if len(files) != 1 {
		t.Fatalf("cache holds %v after the first open, want one CUBIN", files)
	}
	open("second open", true)
	if err := os.WriteFile(files[0], []byte("stale"), 0o644); err != nil {
		t.Fatal(err)
	}
	open("after a stale entry", false)
	if img, err := os.ReadFile(files[0]); err != nil || !bytes.HasPrefix(img, []byte("\x7fELF")) {
		t.Errorf("the stale entry was not replaced by a CUBIN: %q, %v", img[:min(len(img), 8)], err)
	}
	open("after the replacement", true)
}

// TestGPULibraries says which CUDA libraries this process loads, from which
// files, at which versions; gpu-check prints it first.
func TestGPULibraries(t *testing.T) {
	l, err := loadLibs()
	for _, line := range l.report() {
		t.Log(line)
	}
	if err != nil {
		requireGPU(t, err)
	}
}

// TestOpenLibFolders builds two small shared libraries with the C compiler
// (it skips without one): libfrogfake.so.13, which needs
// libfrogfakeLt.so.13 as libcublas needs libcublasLt, in a Python wheel's
// folder, and a damaged libfrogfake.so.13 in a toolkit folder searched
// before it. openLib must report the damaged file, need the companion to
// load the good one, find it, and name every place it tried when nothing
// is found.
func TestOpenLibFolders(t *testing.T) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skipf("no C compiler to build test libraries: %v", err)
	}
	root := t.TempDir()
	wheel := filepath.Join(root, "venv/lib/python3.12/site-packages/nvidia/cu13/lib")
	toolkit := filepath.Join(root, "usr/local/cuda-13.0/lib64")
	for _, d := range []string{wheel, toolkit} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	build := func(name, src string, extra ...string) {
		t.Helper()
		c := filepath.Join(t.TempDir(), "x.c")
		if err := os.WriteFile(c, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		args := append([]string{"-shared", "-fPIC", "-o", filepath.Join(wheel, name), "-Wl,-soname," + name, c}, extra...)
		if out, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
			t.Fatalf("cc %v: %v\n%s", args, err, out)
		}
	}
	build("libfrogfakeLt.so.13", "int frog_fake_lt(void) { return 13; }\n")
	build("libfrogfake.so.13", "int frog_fake_lt(void);\nint frog_fake(void) { return frog_fake_lt(); }\n",
		"-L"+wheel, "-l:libfrogfakeLt.so.13")
	if err := os.WriteFile(filepath.Join(toolkit, "libfrogfake.so.13"), []byte("not an ELF file"), 0o644); err != nil {
		t.Fatal(err)
	}
	search := libSearch{root: root, getenv: func(k string) string {
		return map[string]string{"VIRTUAL_ENV": filepath.Join(root, "venv")}[k]
	}}
	dirs := append(search.toolkitDirs(), search.wheelDirs()...)
	if want := []string{toolkit, wheel}; !slices.Equal(dirs, want) {
		t.Fatalf("folders %v, want %v", dirs, want)
	}
	names := []string{"libfrogfake.so.14", "libfrogfake.so.13"}
	_, _, err = openLib(names, dirs, nil)
	for _, want := range []string{"loader's path", filepath.Join(toolkit, "libfrogfake.so.13"), "libfrogfakeLt.so.13"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("without its companion: %v, want an error naming %s", err, want)
		}
	}
	lt := func(name string) []string {
		return []string{strings.Replace(name, "libfrogfake.", "libfrogfakeLt.", 1)}
	}
	_, f, err := openLib(names, dirs, lt)
	if err != nil || f.name != "libfrogfake.so.13" || f.path != filepath.Join(wheel, "libfrogfake.so.13") {
		t.Errorf("openLib = %+v, %v, want libfrogfake.so.13 from %s", f, err, wheel)
	}
	_, _, err = openLib([]string{"libfrognothing.so.13"}, dirs, nil)
	for _, want := range []string{"libfrognothing.so.13 not found", "LD_LIBRARY_PATH", toolkit, wheel} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("nothing found: %v, want an error naming %s", err, want)
		}
	}
	t.Logf("nothing found: %v", err)
}
