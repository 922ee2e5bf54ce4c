package neural

import (
	"errors"
	"fmt"
	"math"

	"github.com/frognano/frog/cuda"
)

// work holds one update's buffers on the backend: N options, D decisions.
type work struct {
	l                                                *Learner
	N, D                                             int
	x, h1, h2, s, lp, p, dlp, ds, dyH, dsH, dh2, dh1 cuda.Buffer
	lpc, coef, hsum, gn                              cuda.Buffer
	off, chosen                                      cuda.Buffer
	// views of the parameters, the gradients and the reference parameters
	w1, b1, w2, b2, w3, wl       cuda.Buffer
	gw1, gb1, gw2, gb2, gw3, gwl cuda.Buffer
	ref                          params
	allocs                       []cuda.Buffer
	lpcHost                      []float32
	// lref holds the reference policy's log-probability of each
	// decision's choice (the KL penalty's), nil without one.
	lref []float64
}

// params are views of one parameter vector's parts.
type params struct{ w1, b1, w2, b2, w3, wl cuda.Buffer }

// stepStats is what one pass over the batch measured, before its update.
type stepStats struct {
	loss, kl, entropy, gradNorm, clipFrac float64
	// klRef is the mean KL divergence from the reference policy (k3, at
	// the chosen options).
	klRef float64
}

func (l *Learner) newWork(N, D int) (*work, error) {
	d := l.cfg.Dims
	w := &work{l: l, N: N, D: D, lpcHost: make([]float32, D)}
	var err error
	a := func(dt cuda.DType, n int) cuda.Buffer {
		if err != nil {
			return cuda.Buffer{}
		}
		var b cuda.Buffer
		if b, err = l.b.Alloc(dt, n); err == nil {
			w.allocs = append(w.allocs, b)
		}
		return b
	}
	f := cuda.Float32
	w.x, w.h1, w.h2 = a(f, N*d.F), a(f, N*d.H1), a(f, N*d.H2)
	w.s, w.lp, w.p, w.dlp, w.ds, w.dyH, w.dsH = a(f, N), a(f, N), a(f, N), a(f, N), a(f, N), a(f, N), a(f, N)
	w.dh2, w.dh1 = a(f, N*d.H2), a(f, N*d.H1)
	w.lpc, w.coef, w.hsum, w.gn = a(f, D), a(f, D), a(f, 1), a(f, 1)
	w.off, w.chosen = a(cuda.Int32, D+1), a(cuda.Int32, D)
	if err != nil {
		w.free()
		return nil, fmt.Errorf("neural: allocate a batch of %d options: %w", N, err)
	}
	lay := d.layout()
	view := func(b cuda.Buffer, off, n int) cuda.Buffer {
		if err != nil {
			return cuda.Buffer{}
		}
		var v cuda.Buffer
		v, err = b.Slice(off, n)
		return v
	}
	views := []struct {
		b    cuda.Buffer
		dsts []*cuda.Buffer
	}{{l.params, []*cuda.Buffer{&w.w1, &w.b1, &w.w2, &w.b2, &w.w3, &w.wl}}, {l.grads, []*cuda.Buffer{&w.gw1, &w.gb1, &w.gw2, &w.gb2, &w.gw3, &w.gwl}}}
	if l.ref.Len() > 0 {
		r := &w.ref
		views = append(views, struct {
			b    cuda.Buffer
			dsts []*cuda.Buffer
		}{l.ref, []*cuda.Buffer{&r.w1, &r.b1, &r.w2, &r.b2, &r.w3, &r.wl}})
	}
	for _, pair := range views {
		*pair.dsts[0] = view(pair.b, lay.w1, d.F*d.H1)
		*pair.dsts[1] = view(pair.b, lay.b1, d.H1)
		*pair.dsts[2] = view(pair.b, lay.w2, d.H1*d.H2)
		*pair.dsts[3] = view(pair.b, lay.b2, d.H2)
		*pair.dsts[4] = view(pair.b, lay.w3, d.H2)
		*pair.dsts[5] = view(pair.b, lay.wl, d.F)
	}
	if err != nil {
		w.free()
		return nil, err
	}
	return w, nil
}

func (w *work) free() {
	for _, b := range w.allocs {
		w.l.b.Free(b)
	}
	w.allocs = nil
}

func (w *work) upload(b batch) error {
	be := w.l.b
	if err := errors.Join(be.WriteFloat32(w.x, b.x), be.WriteInt32(w.off, b.off), be.WriteInt32(w.chosen, b.chosen)); err != nil {
		return fmt.Errorf("neural: upload the batch: %w", err)
	}
	return nil
}

// forward computes, for the parameters p, s = (relu(relu(x·W1+b1)·W2+b2)·w3
// + x·wl) / T, the log-softmax per decision (lp) and the chosen options'
// log-probabilities (lpc).
func (w *work) forward(p params) error {
	be, d, N := w.l.b, w.l.cfg.Dims, w.N
	invT := float32(1 / w.l.cfg.Temperature)
	return errors.Join(
		be.Gemm(cuda.GemmOptions{M: N, N: d.H1, K: d.F, Alpha: 1, A: w.x, B: p.w1, C: w.h1}),
		be.AddBias(w.h1, p.b1),
		be.Activate(cuda.ReLU, w.h1, w.h1),
		be.Gemm(cuda.GemmOptions{M: N, N: d.H2, K: d.H1, Alpha: 1, A: w.h1, B: p.w2, C: w.h2}),
		be.AddBias(w.h2, p.b2),
		be.Activate(cuda.ReLU, w.h2, w.h2),
		be.Gemm(cuda.GemmOptions{M: N, N: 1, K: d.H2, Alpha: invT, A: w.h2, B: p.w3, C: w.s}),
		be.Gemm(cuda.GemmOptions{M: N, N: 1, K: d.F, Alpha: invT, Beta: 1, A: w.x, B: p.wl, C: w.s}),
		be.Softmax(cuda.SoftmaxOptions{Dst: w.lp, Src: w.s, Offsets: w.off, Log: true}),
		be.Gather(w.lpc, w.lp, w.chosen, 1),
	)
}

// reference computes the reference policy's log-probability of each
// decision's choice, once a batch (w.lref), when the KL penalty is on.
func (w *work) reference() error {
	if w.l.ref.Len() == 0 {
		return nil
	}
	if err := errors.Join(w.forward(w.ref), w.l.b.ReadFloat32(w.lpcHost, w.lpc)); err != nil {
		return fmt.Errorf("neural: reference policy: %w", err)
	}
	w.lref = make([]float64, w.D)
	for i, v := range w.lpcHost {
		w.lref[i] = float64(v)
	}
	return nil
}

// step runs one forward pass, the loss, one backward pass and one Adam
// update; the figures are those of the parameters before the update.
func (w *work) step(b batch) (stepStats, error) {
	l, be, d := w.l, w.l.b, w.l.cfg.Dims
	N, D := w.N, w.D
	invT := float32(1 / l.cfg.Temperature)
	err := errors.Join(
		w.forward(params{w.w1, w.b1, w.w2, w.b2, w.w3, w.wl}),
		be.Softmax(cuda.SoftmaxOptions{Dst: w.p, Src: w.s, Offsets: w.off}),
		// Σ_i p_i·log p_i over every decision: minus the summed entropy.
		be.Gemm(cuda.GemmOptions{TransA: true, M: 1, N: 1, K: N, Alpha: 1, A: w.p, B: w.lp, C: w.hsum}),
	)
	if err != nil {
		return stepStats{}, fmt.Errorf("neural: forward: %w", err)
	}
	hs := make([]float32, 1)
	if err := errors.Join(be.ReadFloat32(w.lpcHost, w.lpc), be.ReadFloat32(hs, w.hsum)); err != nil {
		return stepStats{}, fmt.Errorf("neural: forward: %w", err)
	}
	st, coef := w.surrogate(b, hs[0])
	if err := be.WriteFloat32(w.coef, coef); err != nil {
		return st, err
	}
	// Backward. ds = ∂loss/∂s: the surrogate's part through the chosen
	// log-probabilities and the log-softmax, and the entropy bonus's:
	// ∂(−βΣH)/∂s = (β/D)·softmax'(p)ᵀ·(log p + 1), with −(log p + 1) formed
	// as a 1×1 product over a filled buffer.
	err = errors.Join(
		be.Fill(w.dlp, 0),
		be.ScatterAdd(w.dlp, w.coef, w.chosen, 1),
		be.SoftmaxGrad(cuda.SoftmaxGradOptions{DX: w.ds, DY: w.dlp, Y: w.lp, Offsets: w.off, Log: true}),
	)
	if err == nil && l.cfg.Entropy > 0 {
		err = errors.Join(
			be.Fill(w.dyH, -1),
			be.Gemm(cuda.GemmOptions{M: N, N: 1, K: 1, Alpha: -1, Beta: 1, A: w.lp, B: l.one, C: w.dyH}),
			be.SoftmaxGrad(cuda.SoftmaxGradOptions{DX: w.dsH, DY: w.dyH, Y: w.p, Offsets: w.off}),
			be.Gemm(cuda.GemmOptions{M: N, N: 1, K: 1, Alpha: float32(-l.cfg.Entropy / float64(D)), Beta: 1, A: w.dsH, B: l.one, C: w.ds}),
		)
	}
	if err == nil {
		err = errors.Join(
			be.Gemm(cuda.GemmOptions{TransA: true, M: d.H2, N: 1, K: N, Alpha: invT, A: w.h2, B: w.ds, C: w.gw3}),
			be.Gemm(cuda.GemmOptions{TransA: true, M: d.F, N: 1, K: N, Alpha: invT, A: w.x, B: w.ds, C: w.gwl}),
			be.Gemm(cuda.GemmOptions{TransB: true, M: N, N: d.H2, K: 1, Alpha: invT, A: w.ds, B: w.w3, C: w.dh2}),
			be.ActivateGrad(cuda.ReLU, w.dh2, w.dh2, w.h2),
			be.Gemm(cuda.GemmOptions{TransA: true, M: d.H1, N: d.H2, K: N, Alpha: 1, A: w.h1, B: w.dh2, C: w.gw2}),
			be.Sum(cuda.SumOptions{Dst: w.gb2, Src: w.dh2, Cols: d.H2, Axis: cuda.Rows}),
			be.Gemm(cuda.GemmOptions{TransB: true, M: N, N: d.H1, K: d.H2, Alpha: 1, A: w.dh2, B: w.w2, C: w.dh1}),
			be.ActivateGrad(cuda.ReLU, w.dh1, w.dh1, w.h1),
			be.Gemm(cuda.GemmOptions{TransA: true, M: d.F, N: d.H1, K: N, Alpha: 1, A: w.x, B: w.dh1, C: w.gw1}),
			be.Sum(cuda.SumOptions{Dst: w.gb1, Src: w.dh1, Cols: d.H1, Axis: cuda.Rows}),
			be.Sum(cuda.SumOptions{Dst: w.gn, Src: l.grads, Cols: l.grads.Len(), Axis: cuda.Cols, Squares: true}),
		)
	}
	if err != nil {
		return st, fmt.Errorf("neural: backward: %w", err)
	}
	gn := make([]float32, 1)
	if err := be.ReadFloat32(gn, w.gn); err != nil {
		return st, err
	}
	st.gradNorm = math.Sqrt(float64(gn[0]))
	if math.IsNaN(st.gradNorm) || math.IsInf(st.gradNorm, 0) {
		return st, errors.New("neural: the gradient is not finite: the update is refused")
	}
	scale := float32(1)
	if mg := l.cfg.MaxGradNorm; mg > 0 && st.gradNorm > mg {
		scale = float32(mg / st.gradNorm)
	}
	l.step++
	if err := l.adam(scale); err != nil {
		return st, fmt.Errorf("neural: adam: %w", err)
	}
	return st, nil
}

// surrogate is the clipped surrogate per decision and its derivative with
// respect to the chosen log-probability (coef): the only host arithmetic
// of a step, D scalars. hsum is Σ p·log p over every decision.
func (w *work) surrogate(b batch, hsum float32) (stepStats, []float32) {
	l, D := w.l, w.D
	var st stepStats
	coef := make([]float32, D)
	eps := l.cfg.Clip
	clipped := 0
	beta := l.cfg.KL
	for i, lpc := range w.lpcHost {
		ratio := math.Exp(float64(lpc) - b.old[i])
		a := float64(b.adv[i])
		st.loss -= math.Min(ratio*a, math.Max(math.Min(ratio, 1+eps), 1-eps)*a)
		st.kl += ratio - 1 - (float64(lpc) - b.old[i])
		var c float64
		if a > 0 && ratio > 1+eps || a < 0 && ratio < 1-eps {
			clipped++
		} else {
			c = -a * ratio
		}
		if w.lref != nil {
			// k3 = π_ref/π − log(π_ref/π) − 1 at the choice; its derivative
			// by log π is 1 − π_ref/π.
			q := math.Exp(w.lref[i] - float64(lpc))
			st.klRef += q - (w.lref[i] - float64(lpc)) - 1
			c += beta * (1 - q)
		}
		coef[i] = float32(c / float64(D))
	}
	st.entropy = -float64(hsum) / float64(D)
	st.klRef /= float64(D)
	st.loss = st.loss/float64(D) - l.cfg.Entropy*st.entropy + beta*st.klRef
	st.kl /= float64(D)
	st.clipFrac = float64(clipped) / float64(D)
	return st, coef
}

// adam steps the parameters: the deep part at LR, the wide part at WideLR
// (one step over all of them when the two are the same).
func (l *Learner) adam(scale float32) error {
	step := func(b [4]cuda.Buffer, lr float64) error {
		return l.b.Adam(cuda.AdamOptions{Params: b[0], Grads: b[1], M: b[2], V: b[3], LR: float32(lr),
			Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, Step: l.step, GradScale: scale})
	}
	all := [4]cuda.Buffer{l.params, l.grads, l.m, l.v}
	wide := l.cfg.WideLR
	if wide == 0 || wide == l.cfg.LR {
		return step(all, l.cfg.LR)
	}
	n := l.cfg.Dims.layout().wl
	var deepPart, widePart [4]cuda.Buffer
	for i, b := range all {
		var err1, err2 error
		deepPart[i], err1 = b.Slice(0, n)
		widePart[i], err2 = b.Slice(n, b.Len()-n)
		if err := errors.Join(err1, err2); err != nil {
			return err
		}
	}
	return errors.Join(step(deepPart, l.cfg.LR), step(widePart, wide))
}

// Gradient computes the loss and its gradient with respect to every
// parameter for a batch, without updating: for tests and checks.
func (l *Learner) gradient(b batch) (float64, []float32, error) {
	w, err := l.newWork(len(b.x)/l.cfg.Dims.F, len(b.chosen))
	if err != nil {
		return 0, nil, err
	}
	defer w.free()
	if err := w.upload(b); err != nil {
		return 0, nil, err
	}
	if err := w.reference(); err != nil {
		return 0, nil, err
	}
	saved := l.cfg.MaxGradNorm
	// Run the step with the update undone: Adam with a zero learning rate
	// would still move the moments, so save and restore them.
	m, v, p := make([]float32, l.params.Len()), make([]float32, l.params.Len()), make([]float32, l.params.Len())
	if err := errors.Join(l.b.ReadFloat32(m, l.m), l.b.ReadFloat32(v, l.v), l.b.ReadFloat32(p, l.params)); err != nil {
		return 0, nil, err
	}
	st, err := w.step(b)
	l.step--
	l.cfg.MaxGradNorm = saved
	if err != nil {
		return 0, nil, err
	}
	g := make([]float32, l.grads.Len())
	if err := errors.Join(l.b.ReadFloat32(g, l.grads), l.b.WriteFloat32(l.m, m), l.b.WriteFloat32(l.v, v), l.b.WriteFloat32(l.params, p)); err != nil {
		return 0, nil, err
	}
	return st.loss, g, nil
}
