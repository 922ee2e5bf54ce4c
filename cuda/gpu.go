//go:build linux && cgo

package cuda

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"unsafe"
)

// gpu is the Backend on an NVIDIA GPU. Every CUDA call runs on one goroutine,
// serve, locked to its OS thread (the primary context is made current there
// once), which takes closures from calls; a method checks its arguments on
// the caller's goroutine, sends the work and waits for its error. Kernels and
// cuBLAS run on the legacy default stream, in call order; reads wait for them.
type gpu struct {
	mu     sync.Mutex // guards closed and sends on calls
	closed bool
	calls  chan func()
	done   chan struct{} // closed when serve returns
	name   string
	s      gpuState // touched only by serve's goroutine
}

var _ Backend = (*gpu)(nil)

// gpuState is the device state, owned by the serving goroutine.
type gpuState struct {
	dev      int32
	ctx      unsafe.Pointer
	retained bool
	blas     unsafe.Pointer
	mod      unsafe.Pointer
	fns      map[string]unsafe.Pointer
	cacheHit bool // the kernels came from the CUBIN cache
	live     map[*allocation]struct{}
}

// OpenGPU opens the GPU backend on device o.Device: it loads the CUDA
// driver, NVRTC and cuBLAS, retains the device's primary context, creates a
// cuBLAS handle and loads frog's kernels, compiled by NVRTC for the device's
// compute capability or read from the CUBIN cache. Its errors wrap
// ErrUnavailable and name the library or call that failed.
func OpenGPU(o GPUOptions) (Backend, error) {
	libs, err := loadLibs()
	if err != nil {
		return nil, err
	}
	g := &gpu{calls: make(chan func()), done: make(chan struct{})}
	ready := make(chan error, 1)
	go g.serve(o, libs, ready)
	if err := <-ready; err != nil {
		<-g.done
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return g, nil
}

// serve runs every CUDA call of g. It returns (ending its locked thread)
// when Close closes calls, or at once when opening fails.
func (g *gpu) serve(o GPUOptions, libs gpuLibs, ready chan<- error) {
	runtime.LockOSThread() // never unlocked: the thread exits with serve
	defer close(g.done)
	name, err := g.s.open(o, libs)
	if err != nil {
		err = errors.Join(err, g.s.teardown())
		ready <- err
		return
	}
	g.name = name
	ready <- nil
	for f := range g.calls {
		f()
	}
}

func (s *gpuState) open(o GPUOptions, libs gpuLibs) (string, error) {
	n, err := cuDeviceCount()
	if err != nil {
		return "", err
	}
	if n == 0 {
		return "", errors.New("cuDeviceGetCount: no CUDA device")
	}
	if o.Device < 0 || o.Device >= n {
		return "", fmt.Errorf("device %d of %d", o.Device, n)
	}
	if s.dev, err = cuDevice(o.Device); err != nil {
		return "", err
	}
	devName, err := cuDeviceName(s.dev)
	if err != nil {
		return "", err
	}
	major, err := cuDeviceAttr(s.dev, attrCCMajor)
	if err != nil {
		return "", err
	}
	minor, err := cuDeviceAttr(s.dev, attrCCMinor)
	if err != nil {
		return "", err
	}
	if s.ctx, err = cuPrimaryCtxRetain(s.dev); err != nil {
		return "", err
	}
	s.retained = true
	if err := cuCtxSetCurrent(s.ctx); err != nil {
		return "", err
	}
	if s.blas, err = cublasCreate(); err != nil {
		return "", err
	}
	blasVersion, err := cublasVersion(s.blas)
	if err != nil {
		return "", err
	}
	arch, err := s.loadKernels(major*10+minor, libs, o)
	if err != nil {
		return "", err
	}
	s.live = make(map[*allocation]struct{})
	from := "compiled"
	if s.cacheHit {
		from = "cached"
	}
	return fmt.Sprintf("cuda (%s, sm_%d%d, kernels sm_%d %s, driver %d.%d, %s %d.%d, %s %d)",
		devName, major, minor, arch, from, libs.driverVersion/1000, libs.driverVersion%1000/10,
		libs.nvrtc.name, libs.nvrtcMajor, libs.nvrtcMinor, libs.cublas.name, blasVersion), nil
}

// loadKernels loads frog's kernels for a device of compute capability dev,
// from the CUBIN cache or compiled by NVRTC, and returns the architecture
// they were built for.
func (s *gpuState) loadKernels(dev int, libs gpuLibs, o GPUOptions) (int, error) {
	src, err := kernelSource()
	if err != nil {
		return 0, err
	}
	arch, err := pickArch(dev, nvrtcSupportedArchs())
	if err != nil {
		return 0, err
	}
	cache := cubinCache{}
	if !o.NoCache {
		cache.dir = o.CacheDir
		if cache.dir == "" {
			cache.dir, _ = DefaultCubinDir() // no cache dir: compile every time
		}
	}
	key := cubinKey(src, arch, libs.nvrtcMajor, libs.nvrtcMinor)
	compile := func() ([]byte, error) { return nvrtcCompile(src, "frog_kernels.cu", nvrtcOptions(arch)) }
	if s.mod, s.cacheHit, err = loadCached(cache, key, compile, cuModuleLoadData); err != nil {
		return 0, err
	}
	s.fns = make(map[string]unsafe.Pointer, len(kernelNames))
	for _, name := range kernelNames {
		if s.fns[name], err = cuModuleGetFunction(s.mod, name); err != nil {
			return 0, err
		}
	}
	return arch, nil
}

// teardown releases what open acquired, in reverse; it is safe on a
// partly opened state.
func (s *gpuState) teardown() error {
	var errs []error
	if s.retained {
		errs = append(errs, cuCtxSynchronize())
	}
	for a := range s.live {
		errs = append(errs, s.free(a))
	}
	if s.mod != nil {
		errs = append(errs, cuModuleUnload(s.mod))
		s.mod = nil
	}
	if s.blas != nil {
		errs = append(errs, cublasDestroy(s.blas))
		s.blas = nil
	}
	if s.retained {
		errs = append(errs, cuPrimaryCtxRelease(s.dev))
		s.retained = false
	}
	return errors.Join(errs...)
}

func (s *gpuState) free(a *allocation) error {
	var err error
	if a.dptr != 0 {
		err = cuMemFree(a.dptr)
	}
	a.freed, a.dptr = true, 0
	delete(s.live, a)
	return err
}

// do runs f on the serving goroutine and returns its error.
func (g *gpu) do(f func(s *gpuState) error) error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return ErrClosed
	}
	errc := make(chan error, 1)
	g.calls <- func() { errc <- f(&g.s) }
	g.mu.Unlock()
	return <-errc
}

func (g *gpu) isClosed() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.closed
}

// Kernel arguments travel in 8-byte slots (see frog_launch).
func dptr(b Buffer) uint64    { return b.a.dptr + uint64(b.off)*4 }
func i32arg(v int) uint64     { return uint64(uint32(int32(v))) }
func i64arg(v int) uint64     { return uint64(int64(v)) }
func f32arg(v float32) uint64 { return uint64(math.Float32bits(v)) }
func boolarg(v bool) uint64 {
	if v {
		return 1
	}
	return 0
}

// launch runs a grid-stride kernel over n elements in blocks of 256.
func (s *gpuState) launch(name string, n int64, args ...uint64) error {
	if n <= 0 {
		return nil
	}
	return s.launch2(name, [2]uint32{launchGrid(n, 256), 1}, [2]uint32{256, 1}, args...)
}

func (s *gpuState) launch2(name string, grid, block [2]uint32, args ...uint64) error {
	if err := cuLaunch(s.fns[name], grid, block, 0, args); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// Name implements Backend.
func (g *gpu) Name() string { return g.name }

// Alloc implements Backend.
func (g *gpu) Alloc(dt DType, n int) (Buffer, error) {
	if err := checkAlloc(dt, n); err != nil {
		return Buffer{}, err
	}
	a := &allocation{owner: g, dt: dt, n: n}
	err := g.do(func(s *gpuState) error {
		if n > 0 {
			p, err := cuMemAlloc(n * 4)
			if err != nil {
				return fmt.Errorf("alloc %d × %v: %w", n, dt, err)
			}
			a.dptr = p
			if err := s.launch("frog_fill", int64(n), p, i64arg(n), 0); err != nil { // 0.0f and 0 share their bits
				cuMemFree(p)
				return err
			}
		}
		s.live[a] = struct{}{}
		return nil
	})
	if err != nil {
		return Buffer{}, err
	}
	return Buffer{a: a, n: n}, nil
}

// Free implements Backend.
func (g *gpu) Free(b Buffer) error {
	if g.isClosed() {
		return ErrClosed
	}
	if err := checkFree(g, b); err != nil {
		return err
	}
	return g.do(func(s *gpuState) error { return s.free(b.a) })
}

// WriteFloat32 implements Backend.
func (g *gpu) WriteFloat32(dst Buffer, src []float32) error {
	if g.isClosed() {
		return ErrClosed
	}
	if err := checkWrite(g, "write float32", dst, Float32, len(src)); err != nil || len(src) == 0 {
		return err
	}
	return g.do(func(*gpuState) error {
		return cuMemcpyHtoD(dptr(dst), unsafe.Pointer(&src[0]), len(src)*4)
	})
}

// ReadFloat32 implements Backend.
func (g *gpu) ReadFloat32(dst []float32, src Buffer) error {
	if g.isClosed() {
		return ErrClosed
	}
	if err := checkRead(g, "read float32", src, Float32, len(dst)); err != nil || len(dst) == 0 {
		return err
	}
	return g.do(func(*gpuState) error {
		return cuMemcpyDtoH(unsafe.Pointer(&dst[0]), dptr(src), len(dst)*4)
	})
}

// WriteInt32 implements Backend.
func (g *gpu) WriteInt32(dst Buffer, src []int32) error {
	if g.isClosed() {
		return ErrClosed
	}
	if err := checkWrite(g, "write int32", dst, Int32, len(src)); err != nil || len(src) == 0 {
		return err
	}
	return g.do(func(*gpuState) error {
		return cuMemcpyHtoD(dptr(dst), unsafe.Pointer(&src[0]), len(src)*4)
	})
}

// ReadInt32 implements Backend.
func (g *gpu) ReadInt32(dst []int32, src Buffer) error {
	if g.isClosed() {
		return ErrClosed
	}
	if err := checkRead(g, "read int32", src, Int32, len(dst)); err != nil || len(dst) == 0 {
		return err
	}
	return g.do(func(*gpuState) error {
		return cuMemcpyDtoH(unsafe.Pointer(&dst[0]), dptr(src), len(dst)*4)
	})
}

// Copy implements Backend.
func (g *gpu) Copy(dst, src Buffer) error {
	if g.isClosed() {
		return ErrClosed
	}
	if err := checkCopy(g, dst, src); err != nil || src.n == 0 {
		return err
	}
	return g.do(func(*gpuState) error { return cuMemcpyDtoD(dptr(dst), dptr(src), src.n*4) })
}

// Fill implements Backend.
func (g *gpu) Fill(dst Buffer, v float32) error {
	if g.isClosed() {
		return ErrClosed
	}
	if err := checkFill(g, dst); err != nil {
		return err
	}
	return g.do(func(s *gpuState) error {
		return s.launch("frog_fill", int64(dst.n), dptr(dst), i64arg(dst.n), f32arg(v))
	})
}

// Gemm implements Backend with cublasSgemm_v2 (or
// cublasSgemmStridedBatched): a row-major C = op(A)·op(B) is the
// column-major Cᵀ = op(B)ᵀ·op(A)ᵀ, so B and A trade places and keep their
// transposes.
func (g *gpu) Gemm(o GemmOptions) error {
	if g.isClosed() {
		return ErrClosed
	}
	p, err := checkGemm(g, o)
	if err != nil || p.M == 0 || p.N == 0 {
		return err
	}
	return g.do(func(s *gpuState) error {
		if p.K == 0 || p.Alpha == 0 {
			return s.launch("frog_scale_matrix", int64(p.Batch)*int64(p.M)*int64(p.N), dptr(p.C),
				i32arg(p.M), i32arg(p.N), i32arg(p.LDC), i64arg(p.StrideC), i32arg(p.Batch), f32arg(p.Beta))
		}
		a, b, c := dptr(p.A), dptr(p.B), dptr(p.C)
		if p.Batch == 1 {
			return sgemmColMajor(s.blas, p.TransB, p.TransA, p.N, p.M, p.K, p.Alpha,
				b, p.LDB, a, p.LDA, p.Beta, c, p.LDC)
		}
		ok, err := sgemmStridedColMajor(s.blas, p.TransB, p.TransA, p.N, p.M, p.K, p.Alpha,
			b, p.LDB, p.StrideB, a, p.LDA, p.StrideA, p.Beta, c, p.LDC, p.StrideC, p.Batch)
		if ok {
			return err
		}
		for i := range p.Batch {
			err := sgemmColMajor(s.blas, p.TransB, p.TransA, p.N, p.M, p.K, p.Alpha,
				b+uint64(i*p.StrideB)*4, p.LDB, a+uint64(i*p.StrideA)*4, p.LDA, p.Beta,
				c+uint64(i*p.StrideC)*4, p.LDC)
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// AddBias implements Backend.
func (g *gpu) AddBias(x, bias Buffer) error {
	if g.isClosed() {
		return ErrClosed
	}
	if _, err := checkAddBias(g, x, bias); err != nil || x.n == 0 {
		return err
	}
	return g.do(func(s *gpuState) error {
		return s.launch("frog_add_bias", int64(x.n), dptr(x), dptr(bias), i64arg(x.n), i32arg(bias.n))
	})
}

// Activate implements Backend.
func (g *gpu) Activate(f Activation, dst, src Buffer) error {
	if g.isClosed() {
		return ErrClosed
	}
	if err := checkActivate(g, f, dst, src); err != nil {
		return err
	}
	kernel := map[Activation]string{ReLU: "frog_relu", Tanh: "frog_tanh"}[f]
	return g.do(func(s *gpuState) error {
		return s.launch(kernel, int64(src.n), dptr(dst), dptr(src), i64arg(src.n))
	})
}

// ActivateGrad implements Backend.
func (g *gpu) ActivateGrad(f Activation, dx, dy, y Buffer) error {
	if g.isClosed() {
		return ErrClosed
	}
	if err := checkActivateGrad(g, f, dx, dy, y); err != nil {
		return err
	}
	kernel := map[Activation]string{ReLU: "frog_relu_grad", Tanh: "frog_tanh_grad"}[f]
	return g.do(func(s *gpuState) error {
		return s.launch(kernel, int64(y.n), dptr(dx), dptr(dy), dptr(y), i64arg(y.n))
	})
}

// warpsGrid returns the launch shape for one warp per segment.
func warpsGrid(nseg int) (grid, block [2]uint32) {
	const threads = 256
	blocks := (int64(nseg)*32 + threads - 1) / threads
	return [2]uint32{uint32(blocks), 1}, [2]uint32{threads, 1}
}

// Softmax implements Backend: one warp per segment.
func (g *gpu) Softmax(o SoftmaxOptions) error {
	if g.isClosed() {
		return ErrClosed
	}
	nseg, err := checkSoftmax(g, o)
	if err != nil || nseg == 0 {
		return err
	}
	grid, block := warpsGrid(nseg)
	return g.do(func(s *gpuState) error {
		return s.launch2("frog_softmax", grid, block, dptr(o.Dst), dptr(o.Src), dptr(o.Offsets),
			i32arg(nseg), i32arg(o.Src.n), boolarg(o.Log))
	})
}

// SoftmaxGrad implements Backend.
func (g *gpu) SoftmaxGrad(o SoftmaxGradOptions) error {
	if g.isClosed() {
		return ErrClosed
	}
	nseg, err := checkSoftmaxGrad(g, o)
	if err != nil || nseg == 0 {
		return err
	}
	grid, block := warpsGrid(nseg)
	return g.do(func(s *gpuState) error {
		return s.launch2("frog_softmax_grad", grid, block, dptr(o.DX), dptr(o.DY), dptr(o.Y),
			dptr(o.Offsets), i32arg(nseg), i32arg(o.Y.n), boolarg(o.Log))
	})
}

// Gather implements Backend. Out-of-range indices give rows of zeros.
func (g *gpu) Gather(dst, src, idx Buffer, cols int) error {
	if g.isClosed() {
		return ErrClosed
	}
	rows, err := checkRows(g, "gather", dst, src, idx, cols, true)
	if err != nil || dst.n == 0 {
		return err
	}
	return g.do(func(s *gpuState) error {
		return s.launch("frog_gather", int64(dst.n), dptr(dst), dptr(src), dptr(idx),
			i64arg(dst.n), i32arg(cols), i32arg(rows))
	})
}

// ScatterAdd implements Backend with atomicAdd: repeated indices
// accumulate in no fixed order. Out-of-range indices are skipped.
func (g *gpu) ScatterAdd(dst, src, idx Buffer, cols int) error {
	if g.isClosed() {
		return ErrClosed
	}
	rows, err := checkRows(g, "scatter add", dst, src, idx, cols, false)
	if err != nil || src.n == 0 {
		return err
	}
	return g.do(func(s *gpuState) error {
		return s.launch("frog_scatter_add", int64(src.n), dptr(dst), dptr(src), dptr(idx),
			i64arg(src.n), i32arg(cols), i32arg(rows))
	})
}

// Sum implements Backend, without atomics: one result per input.
func (g *gpu) Sum(o SumOptions) error {
	if g.isClosed() {
		return ErrClosed
	}
	rows, err := checkSum(g, o)
	if err != nil || o.Dst.n == 0 {
		return err
	}
	return g.do(func(s *gpuState) error {
		if o.Axis == Cols {
			return s.launch2("frog_sum_cols", [2]uint32{uint32(min(rows, 1<<16)), 1}, [2]uint32{256, 1},
				dptr(o.Dst), dptr(o.Src), i32arg(rows), i64arg(o.Cols), boolarg(o.Squares))
		}
		return s.launch2("frog_sum_rows", [2]uint32{uint32((o.Cols + 31) / 32), 1}, [2]uint32{32, 32},
			dptr(o.Dst), dptr(o.Src), i32arg(rows), i32arg(o.Cols), boolarg(o.Squares))
	})
}

// Adam implements Backend.
func (g *gpu) Adam(o AdamOptions) error {
	if g.isClosed() {
		return ErrClosed
	}
	p, err := checkAdam(g, o)
	if err != nil || o.Params.n == 0 {
		return err
	}
	return g.do(func(s *gpuState) error {
		return s.launch("frog_adam", int64(o.Params.n), dptr(o.Params), dptr(o.Grads), dptr(o.M), dptr(o.V),
			i64arg(o.Params.n), f32arg(p.lr), f32arg(p.b1), f32arg(p.b2), f32arg(p.eps), f32arg(p.wd),
			f32arg(p.scale), f32arg(p.c1), f32arg(p.c2))
	})
}

// Close implements Backend: it waits for queued work, frees every buffer,
// releases the device and ends the serving goroutine.
func (g *gpu) Close() error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil
	}
	errc := make(chan error, 1)
	g.calls <- func() { errc <- g.s.teardown() }
	g.closed = true
	close(g.calls)
	g.mu.Unlock()
	err := <-errc
	<-g.done
	return err
}
