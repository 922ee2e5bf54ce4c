package cudatest

import (
	"errors"
	"fmt"
	"math"

	"github.com/frognano/frog/cuda"
)

// RankerConfig shapes a Ranker.
type RankerConfig struct {
	// Candidates is the number of candidate edits in a batch, split into
	// Decisions ragged segments (0 means Candidates/16).
	Candidates, Decisions int
	// Features per candidate and Hidden units of the one hidden layer.
	Features, Hidden int
	Seed             uint64
}

// Ranker is the learner's computation in miniature, built only on
// cuda.Backend: a one-hidden-layer ReLU network scores each candidate, a
// log-softmax over each decision's candidates gives log-probabilities, and a
// policy-gradient loss −Σ_d A_d·log p(chosen_d)/D is minimized by Adam. The
// data (features, segments, choices, advantages) is a fixed seeded batch.
// It is used by the conformance suite (the loss curve on a backend against
// the CPU's) and by the update benchmark.
type Ranker struct {
	b                  cuda.Backend
	cfg                RankerConfig
	n, d, p            int
	adv                []float32
	x, h, s, lp, dlp   cuda.Buffer
	dh, coef, lpc      cuda.Buffer
	params, grads      cuda.Buffer
	m, v               cuda.Buffer
	w1, b1, w2, b2     cuda.Buffer // views of params
	gw1, gb1, gw2, gb2 cuda.Buffer // views of grads
	off, chosen        cuda.Buffer
	allocs             []cuda.Buffer
	step               int
	lpcHost            []float32
}

// NewRanker allocates a Ranker's buffers on b and uploads its batch.
func NewRanker(b cuda.Backend, cfg RankerConfig) (*Ranker, error) {
	if cfg.Decisions == 0 {
		cfg.Decisions = max(cfg.Candidates/16, 1)
	}
	if cfg.Candidates == 0 {
		cfg.Candidates = 16 * cfg.Decisions
	}
	if cfg.Candidates < cfg.Decisions || cfg.Features < 1 || cfg.Hidden < 1 {
		return nil, fmt.Errorf("ranker config %+v: %w", cfg, cuda.ErrInvalid)
	}
	r := &Ranker{b: b, cfg: cfg, n: cfg.Candidates, d: cfg.Decisions}
	F, H := cfg.Features, cfg.Hidden
	r.p = F*H + H + H + 1
	rg := rng(cfg.Seed)

	// Segments of about n/d candidates, jittered, summing to n.
	lens := make([]int, r.d)
	for i := range lens {
		lens[i] = r.n / r.d
	}
	lens[r.d-1] += r.n % r.d
	for i := 0; i+1 < r.d; i += 2 {
		k := rg.IntN(lens[i])
		lens[i] -= k
		lens[i+1] += k
	}
	off := segmentsOf(lens)
	chosen := make([]int32, r.d)
	coef := make([]float32, r.d)
	r.adv = uniform(rg, r.d, -1, 1)
	for i := range chosen {
		chosen[i] = off[i] + int32(rg.IntN(lens[i]))
		coef[i] = -r.adv[i] / float32(r.d)
	}
	params := make([]float32, r.p)
	w1 := uniform(rg, F*H, -1, 1)
	w2 := uniform(rg, H, -1, 1)
	for i := range w1 {
		params[i] = w1[i] / float32(math.Sqrt(float64(F)))
	}
	for i := range w2 {
		params[F*H+H+i] = w2[i] / float32(math.Sqrt(float64(H)))
	}

	var err error
	alloc := func(dt cuda.DType, n int) cuda.Buffer {
		if err != nil {
			return cuda.Buffer{}
		}
		var buf cuda.Buffer
		buf, err = b.Alloc(dt, n)
		if err == nil {
			r.allocs = append(r.allocs, buf)
		}
		return buf
	}
	view := func(buf cuda.Buffer, off, n int) cuda.Buffer {
		if err != nil {
			return cuda.Buffer{}
		}
		var v cuda.Buffer
		v, err = buf.Slice(off, n)
		return v
	}
	r.x, r.h, r.dh = alloc(cuda.Float32, r.n*F), alloc(cuda.Float32, r.n*H), alloc(cuda.Float32, r.n*H)
	r.s, r.lp, r.dlp = alloc(cuda.Float32, r.n), alloc(cuda.Float32, r.n), alloc(cuda.Float32, r.n)
	r.coef, r.lpc = alloc(cuda.Float32, r.d), alloc(cuda.Float32, r.d)
	r.params, r.grads = alloc(cuda.Float32, r.p), alloc(cuda.Float32, r.p)
	r.m, r.v = alloc(cuda.Float32, r.p), alloc(cuda.Float32, r.p)
	r.off, r.chosen = alloc(cuda.Int32, r.d+1), alloc(cuda.Int32, r.d)
	r.w1, r.b1, r.w2, r.b2 = view(r.params, 0, F*H), view(r.params, F*H, H), view(r.params, F*H+H, H), view(r.params, F*H+2*H, 1)
	r.gw1, r.gb1, r.gw2, r.gb2 = view(r.grads, 0, F*H), view(r.grads, F*H, H), view(r.grads, F*H+H, H), view(r.grads, F*H+2*H, 1)
	if err == nil {
		err = errors.Join(
			b.WriteFloat32(r.x, uniform(rg, r.n*F, -1, 1)),
			b.WriteFloat32(r.params, params),
			b.WriteFloat32(r.coef, coef),
			b.WriteInt32(r.off, off),
			b.WriteInt32(r.chosen, chosen),
		)
	}
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("new ranker: %w", err)
	}
	r.lpcHost = make([]float32, r.d)
	return r, nil
}

// Step runs one forward pass, backward pass and Adam update, and returns the
// loss before the update.
func (r *Ranker) Step() (float64, error) {
	b, F, H := r.b, r.cfg.Features, r.cfg.Hidden
	r.step++
	// Forward.
	err := errors.Join(
		b.Gemm(cuda.GemmOptions{M: r.n, N: H, K: F, Alpha: 1, A: r.x, B: r.w1, C: r.h}),
		b.AddBias(r.h, r.b1),
		b.Activate(cuda.ReLU, r.h, r.h),
		b.Gemm(cuda.GemmOptions{M: r.n, N: 1, K: H, Alpha: 1, A: r.h, B: r.w2, C: r.s}),
		b.AddBias(r.s, r.b2),
		b.Softmax(cuda.SoftmaxOptions{Dst: r.lp, Src: r.s, Offsets: r.off, Log: true}),
		b.Gather(r.lpc, r.lp, r.chosen, 1),
	)
	if err != nil {
		return 0, fmt.Errorf("ranker forward: %w", err)
	}
	if err := b.ReadFloat32(r.lpcHost, r.lpc); err != nil {
		return 0, fmt.Errorf("ranker loss: %w", err)
	}
	var loss float64
	for i, lp := range r.lpcHost {
		loss -= float64(r.adv[i]) * float64(lp)
	}
	loss /= float64(r.d)
	// Backward and update.
	err = errors.Join(
		b.Fill(r.dlp, 0),
		b.ScatterAdd(r.dlp, r.coef, r.chosen, 1),
		b.SoftmaxGrad(cuda.SoftmaxGradOptions{DX: r.dlp, DY: r.dlp, Y: r.lp, Offsets: r.off, Log: true}),
		b.Gemm(cuda.GemmOptions{TransA: true, M: H, N: 1, K: r.n, Alpha: 1, A: r.h, B: r.dlp, C: r.gw2}),
		b.Sum(cuda.SumOptions{Dst: r.gb2, Src: r.dlp, Cols: 1, Axis: cuda.Rows}),
		b.Gemm(cuda.GemmOptions{TransB: true, M: r.n, N: H, K: 1, Alpha: 1, A: r.dlp, B: r.w2, C: r.dh}),
		b.ActivateGrad(cuda.ReLU, r.dh, r.dh, r.h),
		b.Gemm(cuda.GemmOptions{TransA: true, M: F, N: H, K: r.n, Alpha: 1, A: r.x, B: r.dh, C: r.gw1}),
		b.Sum(cuda.SumOptions{Dst: r.gb1, Src: r.dh, Cols: H, Axis: cuda.Rows}),
		b.Adam(cuda.AdamOptions{Params: r.params, Grads: r.grads, M: r.m, V: r.v,
			LR: 1e-2, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, Step: r.step}),
	)
	if err != nil {
		return 0, fmt.Errorf("ranker backward: %w", err)
	}
	return loss, nil
}

// Close frees the Ranker's buffers.
func (r *Ranker) Close() error {
	var errs []error
	for _, buf := range r.allocs {
		errs = append(errs, r.b.Free(buf))
	}
	r.allocs = nil
	return errors.Join(errs...)
}
