//go:build linux && cgo

package cuda

// This file set (gpu_cgo.go, loader.c, loader.h) is all of frog's C: it
// dlopens the CUDA driver, NVRTC and cuBLAS, resolves their ABI symbols into
// the function-pointer table frog (loader.h), and wraps each call in a Go
// function that returns an error. Nothing links against CUDA: only -ldl.

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "loader.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"unsafe"
)

// symbol is one entry of the table to resolve.
type symbol struct {
	name     string
	slot     unsafe.Pointer // address of the table's field
	optional bool
}

func driverSymbols() []symbol {
	f := &C.frog
	return []symbol{
		{"cuInit", unsafe.Pointer(&f.cuInit), false},
		{"cuDriverGetVersion", unsafe.Pointer(&f.cuDriverGetVersion), false},
		{"cuDeviceGetCount", unsafe.Pointer(&f.cuDeviceGetCount), false},
		{"cuDeviceGet", unsafe.Pointer(&f.cuDeviceGet), false},
		{"cuDeviceGetName", unsafe.Pointer(&f.cuDeviceGetName), false},
		{"cuDeviceGetAttribute", unsafe.Pointer(&f.cuDeviceGetAttribute), false},
		{"cuDevicePrimaryCtxRetain", unsafe.Pointer(&f.cuDevicePrimaryCtxRetain), false},
		{"cuDevicePrimaryCtxRelease_v2", unsafe.Pointer(&f.cuDevicePrimaryCtxRelease_v2), false},
		{"cuCtxSetCurrent", unsafe.Pointer(&f.cuCtxSetCurrent), false},
		{"cuCtxSynchronize", unsafe.Pointer(&f.cuCtxSynchronize), false},
		{"cuMemAlloc_v2", unsafe.Pointer(&f.cuMemAlloc_v2), false},
		{"cuMemFree_v2", unsafe.Pointer(&f.cuMemFree_v2), false},
		{"cuMemcpyHtoD_v2", unsafe.Pointer(&f.cuMemcpyHtoD_v2), false},
		{"cuMemcpyDtoH_v2", unsafe.Pointer(&f.cuMemcpyDtoH_v2), false},
		{"cuMemcpyDtoD_v2", unsafe.Pointer(&f.cuMemcpyDtoD_v2), false},
		{"cuModuleLoadData", unsafe.Pointer(&f.cuModuleLoadData), false},
		{"cuModuleUnload", unsafe.Pointer(&f.cuModuleUnload), false},
		{"cuModuleGetFunction", unsafe.Pointer(&f.cuModuleGetFunction), false},
		{"cuLaunchKernel", unsafe.Pointer(&f.cuLaunchKernel), false},
		{"cuGetErrorName", unsafe.Pointer(&f.cuGetErrorName), false},
	}
}

func nvrtcSymbols() []symbol {
	f := &C.frog
	return []symbol{
		{"nvrtcVersion", unsafe.Pointer(&f.nvrtcVersion), false},
		{"nvrtcGetNumSupportedArchs", unsafe.Pointer(&f.nvrtcGetNumSupportedArchs), true},
		{"nvrtcGetSupportedArchs", unsafe.Pointer(&f.nvrtcGetSupportedArchs), true},
		{"nvrtcCreateProgram", unsafe.Pointer(&f.nvrtcCreateProgram), false},
		{"nvrtcCompileProgram", unsafe.Pointer(&f.nvrtcCompileProgram), false},
		{"nvrtcGetProgramLogSize", unsafe.Pointer(&f.nvrtcGetProgramLogSize), false},
		{"nvrtcGetProgramLog", unsafe.Pointer(&f.nvrtcGetProgramLog), false},
		{"nvrtcGetCUBINSize", unsafe.Pointer(&f.nvrtcGetCUBINSize), false},
		{"nvrtcGetCUBIN", unsafe.Pointer(&f.nvrtcGetCUBIN), false},
		{"nvrtcDestroyProgram", unsafe.Pointer(&f.nvrtcDestroyProgram), false},
		{"nvrtcGetErrorString", unsafe.Pointer(&f.nvrtcGetErrorString), false},
	}
}

func cublasSymbols() []symbol {
	f := &C.frog
	return []symbol{
		{"cublasCreate_v2", unsafe.Pointer(&f.cublasCreate_v2), false},
		{"cublasDestroy_v2", unsafe.Pointer(&f.cublasDestroy_v2), false},
		{"cublasGetVersion_v2", unsafe.Pointer(&f.cublasGetVersion_v2), false},
		{"cublasSgemm_v2", unsafe.Pointer(&f.cublasSgemm_v2), false},
		{"cublasSgemmStridedBatched", unsafe.Pointer(&f.cublasSgemmStridedBatched), true},
		{"cublasGetStatusName", unsafe.Pointer(&f.cublasGetStatusName), true},
		{"cublasGetProperty", unsafe.Pointer(&f.cublasGetProperty), true},
	}
}

// dlopen opens name, a bare name (searched as the dynamic loader searches)
// or a path, and returns the handle and the path the loader opened.
func dlopen(name string) (unsafe.Pointer, string, error) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var cerr *C.char
	lib := C.frog_dlopen(cname, &cerr)
	if lib == nil {
		return nil, "", errors.New(C.GoString(cerr))
	}
	path := name
	if p := C.frog_dlpath(lib); p != nil && C.GoString(p) != "" {
		path = C.GoString(p)
	}
	return lib, path, nil
}

// openLib opens the first of names (one library, highest major first) that
// loads: each through the loader's own path (LD_LIBRARY_PATH, ld.so.cache,
// the default folders), then from each of dirs in order, where it exists.
// companions(name) are libraries to open from the same place first, so that
// name's own dependencies on them resolve to the same folder (libcublasLt
// for libcublas, NVRTC's builtins); in a folder they are glob patterns. The
// error lists what was tried and why each failed. It returns the library,
// which of names it is, and the path the loader opened.
func openLib(names, dirs []string, companions func(name string) []string) (lib unsafe.Pointer, f libFile, err error) {
	var loaderErrs []string
	for _, name := range names {
		if companions != nil {
			for _, c := range companions(name) {
				if !strings.ContainsAny(c, "*?[") {
					dlopen(c) // best effort: name's own error says what is missing
				}
			}
		}
		if lib, path, err := dlopen(name); err == nil {
			return lib, libFile{name, path}, nil
		} else {
			loaderErrs = append(loaderErrs, err.Error())
		}
	}
	var dirErrs []string
	for _, dir := range dirs {
		for _, name := range names {
			p := filepath.Join(dir, name)
			if _, err := os.Stat(p); err != nil {
				continue
			}
			if companions != nil {
				for _, c := range companions(name) {
					m, _ := filepath.Glob(filepath.Join(dir, c))
					for _, cp := range m {
						dlopen(cp)
					}
				}
			}
			if lib, path, err := dlopen(p); err == nil {
				return lib, libFile{name, path}, nil
			} else {
				dirErrs = append(dirErrs, err.Error())
			}
		}
	}
	msg := fmt.Sprintf("%s not found: not in the loader's path (LD_LIBRARY_PATH=%q, ld.so.cache, /lib, /usr/lib): %s",
		strings.Join(names, " or "), os.Getenv("LD_LIBRARY_PATH"), strings.Join(loaderErrs, "; "))
	switch {
	case len(dirs) == 0:
		msg += "; and no CUDA toolkit folder ($CUDA_HOME, /usr/local/cuda*/lib64) or Python wheel folder (site-packages/nvidia/*/lib) exists here"
	case len(dirErrs) == 0:
		msg += fmt.Sprintf("; nor in %s", strings.Join(dirs, ", "))
	default:
		msg += fmt.Sprintf("; searched %s: %s", strings.Join(dirs, ", "), strings.Join(dirErrs, "; "))
	}
	return nil, libFile{}, errors.New(msg)
}

// resolve fills the table's slots for syms from lib.
func resolve(lib unsafe.Pointer, libName string, syms []symbol) error {
	for _, s := range syms {
		cname := C.CString(s.name)
		var cerr *C.char
		r := C.frog_dlsym(lib, cname, (*unsafe.Pointer)(s.slot), &cerr)
		C.free(unsafe.Pointer(cname))
		if r != 0 && !s.optional {
			return fmt.Errorf("dlsym %s in %s: %s", s.name, libName, C.GoString(cerr))
		}
	}
	return nil
}

// gpuLibs describes what loadLibs loaded (as far as it got).
type gpuLibs struct {
	driverVersion                 int // cuDriverGetVersion: 1000·major + 10·minor
	driver, nvrtc, cublas, blasLt libFile
	nvrtcMajor, nvrtcMinor        int
	cublasVersion                 string // "13.0.2", from cublasGetProperty; "" if unknown
}

// libFile is one library: the name asked for and the file the loader opened.
type libFile struct{ name, path string }

// report describes the libraries loaded, one line each: the name, the file
// (its links resolved, which shows the full version) and the version.
func (l gpuLibs) report() []string {
	var lines []string
	line := func(what string, f libFile, version string) {
		if f.path == "" {
			return
		}
		real := f.path
		if r, err := filepath.EvalSymlinks(f.path); err == nil && r != f.path {
			real = f.path + " -> " + r
		}
		s := fmt.Sprintf("%-9s %s: %s", what, f.name, real)
		if version != "" {
			s += " (" + version + ")"
		}
		lines = append(lines, s)
	}
	var driver, nvrtc, blas string
	if l.driverVersion > 0 {
		driver = fmt.Sprintf("driver supports CUDA %d.%d", l.driverVersion/1000, l.driverVersion%1000/10)
	}
	if l.nvrtcMajor > 0 {
		nvrtc = fmt.Sprintf("NVRTC %d.%d", l.nvrtcMajor, l.nvrtcMinor)
	}
	if l.cublasVersion != "" {
		blas = "cuBLAS " + l.cublasVersion
	}
	line("driver", l.driver, driver)
	line("nvrtc", l.nvrtc, nvrtc)
	line("cublas", l.cublas, blas)
	line("cublasLt", l.blasLt, "")
	return lines
}

// loadLibs loads the three libraries once per process: dlopen and the
// function table are process-wide. Its error wraps ErrUnavailable and names
// the library or call that failed; its gpuLibs says what loaded before.
var loadLibs = sync.OnceValues(func() (gpuLibs, error) {
	l, err := loadLibsOnce(defaultLibSearch())
	if err != nil {
		return l, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return l, nil
})

func loadLibsOnce(search libSearch) (gpuLibs, error) {
	var l gpuLibs
	lib, f, err := openLib([]string{"libcuda.so.1"}, search.driverDirs(), nil)
	if err != nil {
		return l, err
	}
	l.driver = f
	if err := resolve(lib, f.path, driverSymbols()); err != nil {
		return l, err
	}
	if err := cuErr("cuInit", C.frog_cuInit()); err != nil {
		return l, err
	}
	var v C.int
	if err := cuErr("cuDriverGetVersion", C.frog_cuDriverGetVersion(&v)); err != nil {
		return l, err
	}
	l.driverVersion = int(v)
	// Use no library of a higher major version than the driver supports.
	var majors []int
	for m := min(13, l.driverVersion/1000); m >= 12; m-- {
		majors = append(majors, m)
	}
	if len(majors) == 0 {
		return l, fmt.Errorf("driver supports CUDA %d.%d, frog needs 12 or later", l.driverVersion/1000, l.driverVersion%1000/10)
	}
	if l.nvrtc, l.nvrtcMajor, l.nvrtcMinor, err = loadNVRTC(majors, search); err != nil {
		return l, err
	}
	var names []string
	for _, m := range majors {
		names = append(names, fmt.Sprintf("libcublas.so.%d", m))
	}
	lt := func(name string) []string { return []string{strings.Replace(name, "libcublas.", "libcublasLt.", 1)} }
	if lib, l.cublas, err = openLib(names, append(search.toolkitDirs(), search.wheelDirs()...), lt); err != nil {
		return l, err
	}
	ltName := lt(l.cublas.name)[0]
	if _, ltPath, err := dlopen(ltName); err == nil { // loaded with libcublas: this finds its path
		l.blasLt = libFile{ltName, ltPath}
	}
	if err := resolve(lib, l.cublas.path, cublasSymbols()); err != nil {
		return l, err
	}
	var major, minor, patch C.int
	if C.frog_cublasGetProperty(0, &major) == 0 && C.frog_cublasGetProperty(1, &minor) == 0 && C.frog_cublasGetProperty(2, &patch) == 0 {
		l.cublasVersion = fmt.Sprintf("%d.%d.%d", major, minor, patch)
	}
	return l, nil
}

// loadNVRTC loads the first libnvrtc.so.M of majors (see openLib for where
// it looks) and fills its part of the table. It needs no driver: kernels
// compile on any machine.
func loadNVRTC(majors []int, search libSearch) (f libFile, major, minor int, err error) {
	var names []string
	for _, m := range majors {
		names = append(names, fmt.Sprintf("libnvrtc.so.%d", m))
	}
	builtins := func(name string) []string {
		return []string{strings.Replace(name, "libnvrtc.", "libnvrtc-builtins.", 1) + ".*"}
	}
	lib, f, err := openLib(names, append(search.toolkitDirs(), search.wheelDirs()...), builtins)
	if err != nil {
		return f, 0, 0, err
	}
	if err := resolve(lib, f.path, nvrtcSymbols()); err != nil {
		return f, 0, 0, err
	}
	var cmajor, cminor C.int
	if err := nvrtcErr("nvrtcVersion", C.frog_nvrtcVersion(&cmajor, &cminor), ""); err != nil {
		return f, 0, 0, err
	}
	return f, int(cmajor), int(cminor), nil
}

func cuErr(call string, r C.frog_result) error {
	if r == 0 {
		return nil
	}
	name := "CUDA_ERROR_UNKNOWN_CODE"
	if p := C.frog_cuGetErrorName(r); p != nil {
		name = C.GoString(p)
	}
	return &Error{Call: call, Code: int(r), Name: name}
}

func nvrtcErr(call string, r C.frog_result, log string) error {
	if r == 0 {
		return nil
	}
	name := "NVRTC_ERROR_UNKNOWN_CODE"
	if p := C.frog_nvrtcGetErrorString(r); p != nil {
		name = C.GoString(p)
	}
	return &Error{Call: call, Code: int(r), Name: name, Log: log}
}

func cublasErr(call string, r C.frog_result) error {
	if r == 0 {
		return nil
	}
	name := cublasStatusName(int(r))
	if p := C.frog_cublasGetStatusName(r); p != nil {
		name = C.GoString(p)
	}
	return &Error{Call: call, Code: int(r), Name: name}
}

// Device attributes (CUdevice_attribute).
const (
	attrMultiprocessors = 16
	attrCCMajor         = 75
	attrCCMinor         = 76
)

func cuDeviceCount() (int, error) {
	var n C.int
	err := cuErr("cuDeviceGetCount", C.frog_cuDeviceGetCount(&n))
	return int(n), err
}

func cuDevice(ordinal int) (int32, error) {
	var d C.frog_device
	err := cuErr("cuDeviceGet", C.frog_cuDeviceGet(&d, C.int(ordinal)))
	return int32(d), err
}

func cuDeviceName(dev int32) (string, error) {
	var buf [256]C.char
	if err := cuErr("cuDeviceGetName", C.frog_cuDeviceGetName(&buf[0], C.int(len(buf)), C.frog_device(dev))); err != nil {
		return "", err
	}
	return C.GoString(&buf[0]), nil
}

func cuDeviceAttr(dev int32, attr int) (int, error) {
	var v C.int
	err := cuErr("cuDeviceGetAttribute", C.frog_cuDeviceGetAttribute(&v, C.int(attr), C.frog_device(dev)))
	return int(v), err
}

func cuPrimaryCtxRetain(dev int32) (unsafe.Pointer, error) {
	var ctx C.frog_handle
	err := cuErr("cuDevicePrimaryCtxRetain", C.frog_cuDevicePrimaryCtxRetain(&ctx, C.frog_device(dev)))
	return unsafe.Pointer(ctx), err
}

func cuPrimaryCtxRelease(dev int32) error {
	return cuErr("cuDevicePrimaryCtxRelease_v2", C.frog_cuDevicePrimaryCtxRelease(C.frog_device(dev)))
}

func cuCtxSetCurrent(ctx unsafe.Pointer) error {
	return cuErr("cuCtxSetCurrent", C.frog_cuCtxSetCurrent(C.frog_handle(ctx)))
}

func cuCtxSynchronize() error {
	return cuErr("cuCtxSynchronize", C.frog_cuCtxSynchronize())
}

func cuMemAlloc(bytes int) (uint64, error) {
	var p C.frog_deviceptr
	err := cuErr("cuMemAlloc_v2", C.frog_cuMemAlloc(&p, C.size_t(bytes)))
	return uint64(p), err
}

func cuMemFree(p uint64) error {
	return cuErr("cuMemFree_v2", C.frog_cuMemFree(C.frog_deviceptr(p)))
}

// cuMemcpyHtoD copies bytes from host memory src, which the caller keeps
// alive and unmoved for the call (a Go slice's backing array is).
func cuMemcpyHtoD(dst uint64, src unsafe.Pointer, bytes int) error {
	return cuErr("cuMemcpyHtoD_v2", C.frog_cuMemcpyHtoD(C.frog_deviceptr(dst), src, C.size_t(bytes)))
}

func cuMemcpyDtoH(dst unsafe.Pointer, src uint64, bytes int) error {
	return cuErr("cuMemcpyDtoH_v2", C.frog_cuMemcpyDtoH(dst, C.frog_deviceptr(src), C.size_t(bytes)))
}

func cuMemcpyDtoD(dst, src uint64, bytes int) error {
	return cuErr("cuMemcpyDtoD_v2", C.frog_cuMemcpyDtoD(C.frog_deviceptr(dst), C.frog_deviceptr(src), C.size_t(bytes)))
}

func cuModuleLoadData(image []byte) (unsafe.Pointer, error) {
	cimg := C.CBytes(image)
	defer C.free(cimg)
	var mod C.frog_handle
	err := cuErr("cuModuleLoadData", C.frog_cuModuleLoadData(&mod, cimg))
	return unsafe.Pointer(mod), err
}

func cuModuleUnload(mod unsafe.Pointer) error {
	return cuErr("cuModuleUnload", C.frog_cuModuleUnload(C.frog_handle(mod)))
}

func cuModuleGetFunction(mod unsafe.Pointer, name string) (unsafe.Pointer, error) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var fn C.frog_handle
	if err := cuErr("cuModuleGetFunction", C.frog_cuModuleGetFunction(&fn, C.frog_handle(mod), cname)); err != nil {
		return nil, fmt.Errorf("kernel %s: %w", name, err)
	}
	return unsafe.Pointer(fn), nil
}

// cuLaunch launches fn on grid×block threads; args holds one 8-byte slot per
// kernel parameter.
func cuLaunch(fn unsafe.Pointer, grid, block [2]uint32, shared uint32, args []uint64) error {
	var p *C.ulonglong
	if len(args) > 0 {
		p = (*C.ulonglong)(unsafe.Pointer(&args[0]))
	}
	return cuErr("cuLaunchKernel", C.frog_launch(C.frog_handle(fn), C.uint(grid[0]), C.uint(grid[1]),
		C.uint(block[0]), C.uint(block[1]), C.uint(shared), p, C.int(len(args))))
}

// nvrtcSupportedArchs returns the architectures NVRTC compiles for (as
// major·10+minor), or nil when it cannot say.
func nvrtcSupportedArchs() []int {
	var buf [128]C.int
	n := int(C.frog_nvrtcSupportedArchs(&buf[0], C.int(len(buf))))
	if n < 0 {
		return nil
	}
	archs := make([]int, n)
	for i := range archs {
		archs[i] = int(buf[i])
	}
	return archs
}

// nvrtcCompile compiles src (named name in NVRTC's log) with opts and
// returns the CUBIN.
func nvrtcCompile(src, name string, opts []string) ([]byte, error) {
	csrc, cname := C.CString(src), C.CString(name)
	defer C.free(unsafe.Pointer(csrc))
	defer C.free(unsafe.Pointer(cname))
	copts := C.malloc(C.size_t(len(opts)+1) * C.size_t(unsafe.Sizeof(uintptr(0))))
	defer C.free(copts)
	optv := unsafe.Slice((**C.char)(copts), len(opts)+1)
	for i, o := range opts {
		optv[i] = C.CString(o)
		defer C.free(unsafe.Pointer(optv[i]))
	}
	var (
		cubin  *C.char
		size   C.size_t
		clog   *C.char
		failed *C.char
	)
	r := C.frog_nvrtc_compile(csrc, cname, (**C.char)(copts), C.int(len(opts)), &cubin, &size, &clog, &failed)
	var log string
	if clog != nil {
		log = strings.TrimSpace(C.GoString(clog))
		C.free(unsafe.Pointer(clog))
	}
	if r != 0 {
		return nil, nvrtcErr(C.GoString(failed), r, log)
	}
	defer C.free(unsafe.Pointer(cubin))
	return C.GoBytes(unsafe.Pointer(cubin), C.int(size)), nil
}

func cublasCreate() (unsafe.Pointer, error) {
	var h C.frog_handle
	err := cublasErr("cublasCreate_v2", C.frog_cublasCreate(&h))
	return unsafe.Pointer(h), err
}

func cublasDestroy(h unsafe.Pointer) error {
	return cublasErr("cublasDestroy_v2", C.frog_cublasDestroy(C.frog_handle(h)))
}

func cublasVersion(h unsafe.Pointer) (int, error) {
	var v C.int
	err := cublasErr("cublasGetVersion_v2", C.frog_cublasGetVersion(C.frog_handle(h), &v))
	return int(v), err
}

// cublasOp is cublasOperation_t: CUBLAS_OP_N or CUBLAS_OP_T.
func cublasOp(t bool) C.int {
	if t {
		return 1
	}
	return 0
}

// sgemmColMajor calls cublasSgemm_v2 (column-major, device pointers).
func sgemmColMajor(h unsafe.Pointer, ta, tb bool, m, n, k int, alpha float32, a uint64, lda int,
	b uint64, ldb int, beta float32, c uint64, ldc int) error {
	return cublasErr("cublasSgemm_v2", C.frog_sgemm(C.frog_handle(h), cublasOp(ta), cublasOp(tb),
		C.int(m), C.int(n), C.int(k), C.float(alpha), C.frog_deviceptr(a), C.int(lda),
		C.frog_deviceptr(b), C.int(ldb), C.float(beta), C.frog_deviceptr(c), C.int(ldc)))
}

// sgemmStridedColMajor calls cublasSgemmStridedBatched; ok is false when
// this cuBLAS lacks it.
func sgemmStridedColMajor(h unsafe.Pointer, ta, tb bool, m, n, k int, alpha float32, a uint64, lda, sa int,
	b uint64, ldb, sb int, beta float32, c uint64, ldc, sc, batch int) (ok bool, err error) {
	r := C.frog_sgemm_strided(C.frog_handle(h), cublasOp(ta), cublasOp(tb),
		C.int(m), C.int(n), C.int(k), C.float(alpha), C.frog_deviceptr(a), C.int(lda), C.longlong(sa),
		C.frog_deviceptr(b), C.int(ldb), C.longlong(sb), C.float(beta), C.frog_deviceptr(c), C.int(ldc),
		C.longlong(sc), C.int(batch))
	if r == -1 {
		return false, nil
	}
	return true, cublasErr("cublasSgemmStridedBatched", r)
}
