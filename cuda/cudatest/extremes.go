package cudatest

import (
	"math"
	"testing"

	"github.com/frognano/frog/cuda"
)

// testSoftmaxExtremes runs softmax and log-softmax where a kernel that
// skipped the max subtraction, took the log of the softmax or clamped
// log-probabilities would be wrong: segments shifted by ±100 (exp overflows
// or underflows without the max), a segment spread over 350 (its small
// probabilities underflow, their logs must not), −inf entries (probability
// exactly 0, log-probability exactly −inf) and a segment of only −inf
// (no distribution: NaN).
func testSoftmaxExtremes(t *testing.T, b cuda.Backend) {
	r := rng(13)
	lens := raggedLens(r, 120)
	lens[7] = 3 // the all −inf segment
	off := segmentsOf(lens)
	n := int(off[len(off)-1])
	x := uniform(r, n, -8, 8)
	ninf := float32(math.Inf(-1))
	shifts := []float32{100, -100, 0, 60, -90}
	for s := 0; s+1 < len(off); s++ {
		lo, hi := int(off[s]), int(off[s+1])
		for i := lo; i < hi; i++ {
			x[i] += shifts[s%len(shifts)]
		}
		if s%3 == 0 && hi-lo >= 2 {
			x[lo], x[lo+(hi-lo)/2] = ninf, ninf // never the whole segment
		}
	}
	for i := off[7]; i < off[8]; i++ {
		x[i] = ninf
	}
	long := len(lens) - 1 // 700 elements
	for i := off[long]; i < off[long+1]; i++ {
		x[i] = 100 - 0.5*float32(i-off[long])
	}
	ob := uploadInt(t, b, off)
	for _, log := range []bool{false, true} {
		name := "softmax extremes"
		if log {
			name = "log-softmax extremes"
		}
		e := newErrs(t, name)
		want, tol := softmaxRef(x, off, log)
		src := upload(t, b, x)
		dst := upload(t, b, make([]float32, n))
		must(t, "Softmax", b.Softmax(cuda.SoftmaxOptions{Dst: dst, Src: src, Offsets: ob, Log: log}))
		e.check("out", download(t, b, dst), want, func(i int) float64 { return tol[i] })
		e.report()
	}
}

// testInt32 checks Int32 buffers: zeroed by Alloc (even where a freed buffer
// left other contents), copied exactly (values no float32 holds), through
// views.
func testInt32(t *testing.T, b cuda.Backend) {
	const n = 4099
	junk := make([]int32, n)
	for i := range junk {
		junk[i] = int32(0x7f7f7f7f) - int32(i)
	}
	// Allocate, dirty and free first, so that a backend that reuses the
	// memory without zeroing it shows what was there.
	for _, dt := range []cuda.DType{cuda.Int32, cuda.Float32} {
		first, err := b.Alloc(dt, n)
		must(t, "alloc", err)
		if dt == cuda.Int32 {
			must(t, "write", b.WriteInt32(first, junk))
		} else {
			must(t, "fill", b.Fill(first, 12345))
		}
		must(t, "free", b.Free(first))
		z, err := b.Alloc(dt, n)
		must(t, "alloc", err)
		got := make([]int32, n)
		if dt == cuda.Int32 {
			must(t, "read", b.ReadInt32(got, z))
		} else {
			f := make([]float32, n)
			must(t, "read", b.ReadFloat32(f, z))
			for i, v := range f {
				got[i] = int32(math.Float32bits(v))
			}
		}
		for i, v := range got {
			if v != 0 {
				t.Errorf("Alloc(%v, %d)[%d] = %#x, want 0", dt, n, i, v)
				break
			}
		}
		must(t, "free", b.Free(z))
	}

	vals := []int32{0, -1, 1, math.MaxInt32, math.MinInt32, 16777217, -16777219, 123456789}
	r := rng(14)
	for len(vals) < 1000 {
		vals = append(vals, int32(r.Uint32()))
	}
	src := uploadInt(t, b, append(make([]int32, 3), vals...))
	dst := uploadInt(t, b, make([]int32, len(vals)+10))
	must(t, "copy", b.Copy(slice(t, dst, 7, len(vals)), slice(t, src, 3, len(vals))))
	got := make([]int32, len(vals)+10)
	must(t, "read", b.ReadInt32(got, dst))
	for i, v := range got {
		want := int32(0)
		if i >= 7 && i < 7+len(vals) {
			want = vals[i-7]
		}
		if v != want {
			t.Errorf("int32 copy: dst[%d] = %d, want %d", i, v, want)
		}
	}
	// Copy within one allocation, between views that do not overlap.
	must(t, "copy within", b.Copy(slice(t, dst, 0, 7), slice(t, dst, 7, 7)))
	part := make([]int32, 7)
	must(t, "read view", b.ReadInt32(part, slice(t, dst, 0, 7)))
	for i, v := range part {
		if v != vals[i] {
			t.Errorf("int32 copy within: dst[%d] = %d, want %d", i, v, vals[i])
		}
	}
}
