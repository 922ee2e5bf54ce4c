package neural

import (
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/frognano/frog/cuda"
	"github.com/frognano/frog/policy"
	"github.com/frognano/frog/policy/repair"
)

// The recorded-batches fixture (testdata/recorded-batches.*) holds the
// batches of a real `frog train` run (process sandboxes, real tasks and
// tests), written by --record-batches, and the learner config and final
// weights' SHA-256 of that run. It lets the learner's updates be checked on
// a machine with no tasks, sandboxes or Go toolchain: the GPU machine.

var (
	batchesPath   = flag.String("neural.batches", "testdata/recorded-batches.jsonl.gz", "recorded batches to replay")
	checkpointOut = flag.String("neural.checkpoint-out", "", "write the checkpoint of the GPU replay here (for a CPU to load elsewhere)")
)

// Tolerances of a GPU replay against the CPU's (docs/cuda.md): per update,
// the loss, entropy and gradient norm within replayStatTol relative; after
// every update, the weights within replayWeightTol of the CPU's, relative to
// how far the CPU's weights moved from the start (max norm), leaving out the
// weights the policy does not depend on (invariantWide); and every
// log-probability the policy gives a recorded option within
// replayLogProbTol.
const (
	replayStatTol    = 1e-3
	replayWeightTol  = 5e-2
	replayLogProbTol = 1e-3
)

type recordedRun struct {
	Config       Config `json:"config"`
	Updates      int64  `json:"updates"`
	AdamStep     int    `json:"adam_step"`
	ParamsSHA256 string `json:"params_sha256"`
}

func loadRecorded(t *testing.T) (recordedRun, [][]policy.Group) {
	t.Helper()
	batches, err := ReadBatches(*batchesPath)
	if err != nil {
		t.Fatal(err)
	}
	meta := *batchesPath
	meta = meta[:len(meta)-len(".jsonl.gz")] + ".json"
	data, err := os.ReadFile(meta)
	if err != nil {
		t.Fatal(err)
	}
	var run recordedRun
	if err := json.Unmarshal(data, &run); err != nil {
		t.Fatalf("%s: %v", meta, err)
	}
	if int64(len(batches)) != run.Updates {
		t.Fatalf("%s: %d batches, the run made %d updates", *batchesPath, len(batches), run.Updates)
	}
	return run, batches
}

// replay runs every batch through a fresh learner's Update on b.
func replay(t *testing.T, b cuda.Backend, cfg Config, batches [][]policy.Group) (*Learner, []policy.UpdateStats, [][]float32) {
	t.Helper()
	l, err := NewLearner(b, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var stats []policy.UpdateStats
	var params [][]float32
	for i, groups := range batches {
		_, st, err := l.Update(context.Background(), groups)
		if err != nil {
			t.Fatalf("%s: update %d: %v", b.Name(), i+1, err)
		}
		stats = append(stats, st)
		params = append(params, l.Current().Params)
	}
	return l, stats, params
}

func paramsSHA(p []float32) string {
	buf := make([]byte, 4*len(p))
	for i, v := range p {
		binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(v))
	}
	h := sha256.Sum256(buf)
	return hex.EncodeToString(h[:])
}

// decisions returns every recorded decision, for comparing choices.
func decisions(batches [][]policy.Group) [][]float32 {
	var out [][]float32
	for _, groups := range batches {
		for _, g := range groups {
			for _, tr := range g.Trajectories {
				for _, s := range tr.Steps {
					if d := s.Action.Decision; d != nil && d.Kind == Kind {
						out = append(out, d.Features)
					}
				}
			}
		}
	}
	return out
}

// invariantWide marks the wide weights of features that are constant within
// every decision of ds: a softmax over one decision's options does not
// depend on them, so their gradient is 0 but for rounding, and Adam, which
// divides by the gradient's own scale, turns that rounding into steps of
// the full learning rate in either direction. Two backends that round
// differently part there by up to 2·WideLR an update without any
// difference in what the policy does: the comparison leaves them out.
func invariantWide(d Dims, ds [][]float32) []bool {
	inv := make([]bool, d.Params())
	wl := d.layout().wl
	for f := range d.F {
		constant := true
		for _, x := range ds {
			for r := d.F; r < len(x) && constant; r += d.F {
				constant = x[r+f] == x[f]
			}
		}
		inv[wl+f] = constant
	}
	return inv
}

// weightDiff is the largest difference between a and b, and the largest
// move of a from start, over the weights that are not skipped.
func weightDiff(a, b, start []float32, skip []bool) (diff, moved float64) {
	for j, v := range a {
		if skip[j] {
			continue
		}
		diff = math.Max(diff, math.Abs(float64(v-b[j])))
		moved = math.Max(moved, math.Abs(float64(v-start[j])))
	}
	return diff, moved
}

// logProbDiff is the largest difference between two policies'
// log-probabilities of any option of ds.
func logProbDiff(a, b *Policy, ds [][]float32) float64 {
	var worst float64
	for _, x := range ds {
		la := logSoftmax(scores(a.Dims, a.Params, x, a.temperature()))
		lb := logSoftmax(scores(b.Dims, b.Params, x, b.temperature()))
		for i := range la {
			worst = math.Max(worst, math.Abs(la[i]-lb[i]))
		}
	}
	return worst
}

// choices is the greedy choice of p at each decision, and the gap between
// its best and second-best score there (+Inf with one option).
func choices(p *Policy, ds [][]float32) ([]int, []float64) {
	pick, gap := make([]int, len(ds)), make([]float64, len(ds))
	for i, x := range ds {
		s := scores(p.Dims, p.Params, x, p.temperature())
		best, second := 0, math.Inf(-1)
		for j := 1; j < len(s); j++ {
			if s[j] > s[best] {
				best = j
			}
		}
		for j, v := range s {
			if j != best {
				second = math.Max(second, float64(v))
			}
		}
		pick[i], gap[i] = best, float64(s[best])-second
	}
	return pick, gap
}

// TestReplayRecordedBatches replays the recorded run's updates. On the CPU
// they must reproduce the run's weights bit for bit (the recording holds
// everything an update reads). On a GPU they must agree with the CPU's
// within the tolerances above, update by update; the GPU learner's
// checkpoint must load on the CPU with the same weights, make the same
// choices, and continue training as the GPU does.
func TestReplayRecordedBatches(t *testing.T) {
	run, batches := loadRecorded(t)
	cpu := cuda.NewCPU()
	defer cpu.Close()
	lc, statsC, paramsC := replay(t, cpu, run.Config, batches)
	defer lc.Close()
	if got := paramsSHA(lc.Current().Params); got != run.ParamsSHA256 {
		t.Errorf("cpu replay of %d updates: weights %s, the recorded run's %s", len(batches), got, run.ParamsSHA256)
	}
	if lc.step != run.AdamStep {
		t.Errorf("cpu replay: %d Adam steps, the run %d", lc.step, run.AdamStep)
	}
	ds := decisions(batches)
	t.Logf("%d updates of %d decisions replayed on the cpu; weights reproduce the recorded run's", len(batches), len(ds))

	bs := backends(t)
	g, ok := bs["gpu"]
	bs["cpu"].Close()
	if !ok {
		t.Skip("no GPU backend: the CPU replay alone was checked (FROG_REQUIRE_GPU makes a missing GPU fail)")
	}
	defer g.Close()
	compareReplay(t, run, batches, lc, statsC, paramsC, g)
}

// compareReplay replays batches on g and compares every update with the
// CPU's (lc, statsC, paramsC), then checks g's checkpoint on a CPU.
func compareReplay(t *testing.T, run recordedRun, batches [][]policy.Group, lc *Learner, statsC []policy.UpdateStats, paramsC [][]float32, g cuda.Backend) {
	ds := decisions(batches)
	lg, statsG, paramsG := replay(t, g, run.Config, batches)
	defer lg.Close()

	start := Init(run.Config.Dims, run.Config.Seed, run.Config.Prior)
	skip := invariantWide(run.Config.Dims, ds)
	var names []string
	for f := range run.Config.Dims.F {
		if skip[run.Config.Dims.layout().wl+f] {
			names = append(names, repair.FeatureNames[f])
		}
	}
	t.Logf("weights compared: all but the wide weights of %d features constant within every decision (%s)", len(names), strings.Join(names, ", "))
	for i := range batches {
		c, gs := statsC[i], statsG[i]
		for _, f := range []struct {
			name string
			c, g float64
		}{{"loss", c.Loss, gs.Loss}, {"entropy", c.Extra["entropy"], gs.Extra["entropy"]}, {"grad_norm", c.Extra["grad_norm"], gs.Extra["grad_norm"]}} {
			if math.Abs(f.g-f.c) > replayStatTol*math.Max(1, math.Abs(f.c)) {
				t.Errorf("update %d: gpu %s %v, cpu %v", i+1, f.name, f.g, f.c)
			}
		}
		diff, moved := weightDiff(paramsC[i], paramsG[i], start, skip)
		lp := logProbDiff(&Policy{Dims: run.Config.Dims, Params: paramsC[i], Temperature: run.Config.Temperature},
			&Policy{Dims: run.Config.Dims, Params: paramsG[i], Temperature: run.Config.Temperature}, ds)
		t.Logf("update %d: loss cpu %.7f gpu %.7f; largest weight difference %.3g (%.3g of the largest move, %.3g); largest log-probability difference %.3g",
			i+1, c.Loss, gs.Loss, diff, diff/moved, moved, lp)
		if diff > replayWeightTol*moved {
			t.Errorf("update %d: gpu weights differ from the cpu's by %.3g, more than %g of the largest move %.3g", i+1, diff, replayWeightTol, moved)
		}
		if lp > replayLogProbTol {
			t.Errorf("update %d: a log-probability of the gpu-trained policy differs from the cpu-trained's by %.3g, more than %g", i+1, lp, replayLogProbTol)
		}
	}
	pc, gapC := choices(lc.Current(), ds)
	pg, _ := choices(lg.Current(), ds)
	differ, ties := 0, 0
	for i := range pc {
		if pc[i] != pg[i] {
			differ++
			if gapC[i] < 1e-3 {
				ties++
			}
		}
	}
	t.Logf("greedy choices of the gpu-trained policy against the cpu-trained: %d of %d differ (%d of them near-ties, gap < 1e-3)", differ, len(ds), ties)
	if differ > ties {
		t.Errorf("%d greedy choices of %d differ where the cpu's best option led by 1e-3 or more", differ-ties, len(ds))
	}

	// The GPU learner's checkpoint, on the CPU.
	ck, err := lg.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	if *checkpointOut != "" {
		if err := os.MkdirAll(filepath.Dir(*checkpointOut), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(*checkpointOut, ck, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cpu2 := cuda.NewCPU()
	defer cpu2.Close()
	lr, err := FromCheckpoint(cpu2, ck)
	if err != nil {
		t.Fatalf("the gpu's checkpoint does not load on the cpu: %v", err)
	}
	defer lr.Close()
	if a, b := paramsSHA(lr.Current().Params), paramsSHA(lg.Current().Params); a != b {
		t.Errorf("the gpu's checkpoint loaded on the cpu has weights %s, the gpu learner %s", a, b)
	}
	pr, _ := choices(lr.Current(), ds)
	for i := range pr {
		if pr[i] != pg[i] {
			t.Errorf("decision %d: the checkpoint on the cpu chooses %d, the gpu learner %d", i, pr[i], pg[i])
			break
		}
	}
	// One more update from the checkpoint, on each: Adam's state came along.
	last := batches[len(batches)-1]
	_, sr, err := lr.Update(context.Background(), last)
	if err != nil {
		t.Fatal(err)
	}
	_, sg, err := lg.Update(context.Background(), last)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(sr.Loss-sg.Loss) > replayStatTol*math.Max(1, math.Abs(sg.Loss)) {
		t.Errorf("an update after the checkpoint: cpu loss %v, gpu %v", sr.Loss, sg.Loss)
	}
	diff, moved := weightDiff(lr.Current().Params, lg.Current().Params, start, skip)
	lp := logProbDiff(lr.Current(), lg.Current(), ds)
	t.Logf("the gpu's checkpoint on the cpu: same weights, same %d choices; one more update on each: weights within %.3g (%.3g of the largest move), log-probabilities within %.3g",
		len(ds), diff, diff/moved, lp)
	if diff > replayWeightTol*moved || lp > replayLogProbTol {
		t.Errorf("one update after the checkpoint: cpu and gpu weights differ by %.3g, log-probabilities by %.3g", diff, lp)
	}
}

// jittered is a CPU backend whose GEMM and sums are off by up to a few
// float32 roundings (each result times 1 + r·2⁻²², |r| ≤ 1), as a GPU's
// other order of summation makes them: what the replay's tolerances must
// absorb.
type jittered struct {
	cuda.Backend
	n uint64
}

func (j *jittered) jitter(b cuda.Buffer) error {
	v := make([]float32, b.Len())
	if err := j.Backend.ReadFloat32(v, b); err != nil {
		return err
	}
	for i := range v {
		j.n = j.n*6364136223846793005 + 1442695040888963407
		r := float64(int64(j.n>>11))/float64(1<<52)*2 - 1
		v[i] *= float32(1 + r*math.Ldexp(1, -22))
	}
	return j.Backend.WriteFloat32(b, v)
}

func (j *jittered) Gemm(o cuda.GemmOptions) error {
	if err := j.Backend.Gemm(o); err != nil {
		return err
	}
	return j.jitter(o.C)
}

func (j *jittered) Sum(o cuda.SumOptions) error {
	if err := j.Backend.Sum(o); err != nil {
		return err
	}
	return j.jitter(o.Dst)
}

// TestReplayToleratesRounding runs the GPU's comparison with a backend that
// rounds differently from the CPU (jittered) in the GPU's place: the
// tolerances a GPU is held to must hold there, or a correct GPU could fail
// them. It also runs the comparison itself wherever the tests run.
func TestReplayToleratesRounding(t *testing.T) {
	run, batches := loadRecorded(t)
	batches = batches[:4] // the race detector makes a Go-side replay slow
	run.Updates = 4
	cpu := cuda.NewCPU()
	defer cpu.Close()
	lc, statsC, paramsC := replay(t, cpu, run.Config, batches)
	defer lc.Close()
	other := &jittered{Backend: cuda.NewCPU(), n: 1}
	defer other.Close()
	compareReplay(t, run, batches, lc, statsC, paramsC, other)
}

// BenchmarkReplayUpdate times Learner.Update, the whole of a learner's
// update as training makes it (the batch's upload, the reference policy,
// two epochs, the weights read back), on the recorded run's batches
// (about 470 to 2,800 options an update), in turn, on each backend.
func BenchmarkReplayUpdate(b *testing.B) {
	batches, err := ReadBatches(*batchesPath)
	if err != nil {
		b.Fatal(err)
	}
	meta := *batchesPath
	data, err := os.ReadFile(meta[:len(meta)-len(".jsonl.gz")] + ".json")
	if err != nil {
		b.Fatal(err)
	}
	var run recordedRun
	if err := json.Unmarshal(data, &run); err != nil {
		b.Fatal(err)
	}
	bs := backends(b)
	for _, name := range []string{"cpu", "gpu"} {
		be, ok := bs[name]
		if !ok {
			continue
		}
		b.Run(name, func(b *testing.B) {
			l, err := NewLearner(be, run.Config)
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			if _, _, err := l.Update(context.Background(), batches[0]); err != nil { // warm
				b.Fatal(err)
			}
			options := 0.0
			i := 0
			for b.Loop() {
				_, st, err := l.Update(context.Background(), batches[i%len(batches)])
				if err != nil {
					b.Fatal(err)
				}
				options += st.Extra["options"]
				i++
			}
			b.ReportMetric(options/float64(i), "options/update")
		})
	}
}

// TestH200CheckpointOnCPU loads, on the CPU, the checkpoint the GPU replay
// wrote on an NVIDIA H200 (gpu-check of 2026-12-04, docs/cuda.md; kept in
// testdata) and checks it against the CPU's own replay of the same batches:
// the same greedy choice at every recorded decision, log-probabilities and
// weights within the replay's tolerances, and training that continues from
// it.
func TestH200CheckpointOnCPU(t *testing.T) {
	run, batches := loadRecorded(t)
	f, err := os.Open("testdata/h200-checkpoint.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	cpu := cuda.NewCPU()
	defer cpu.Close()
	lh, err := FromCheckpoint(cpu, data)
	if err != nil {
		t.Fatalf("the H200's checkpoint does not load on the cpu: %v", err)
	}
	defer lh.Close()
	if lh.updates != run.Updates || lh.step != run.AdamStep {
		t.Fatalf("the H200's checkpoint is at update %d, Adam step %d; the recorded run at %d, %d", lh.updates, lh.step, run.Updates, run.AdamStep)
	}
	lc, _, _ := replay(t, cuda.NewCPU(), run.Config, batches)
	defer lc.Close()
	ds := decisions(batches)
	start := Init(run.Config.Dims, run.Config.Seed, run.Config.Prior)
	diff, moved := weightDiff(lc.Current().Params, lh.Current().Params, start, invariantWide(run.Config.Dims, ds))
	lp := logProbDiff(lc.Current(), lh.Current(), ds)
	pc, gap := choices(lc.Current(), ds)
	ph, _ := choices(lh.Current(), ds)
	differ := 0
	for i := range pc {
		if pc[i] != ph[i] && gap[i] >= 1e-3 {
			differ++
		}
	}
	t.Logf("the H200's weights against the cpu's replay: %.3g (%.3g of the largest move); log-probabilities within %.3g; %d of %d greedy choices differ",
		diff, diff/moved, lp, differ, len(ds))
	if diff > replayWeightTol*moved || lp > replayLogProbTol || differ > 0 {
		t.Errorf("the H200's checkpoint is not the cpu's replay within tolerance")
	}
	if _, _, err := lh.Update(context.Background(), batches[0]); err != nil {
		t.Errorf("training from the H200's checkpoint on the cpu: %v", err)
	}
}

// failingAdam is a CPU backend whose Adam step fails once, on call n: an
// update that fails part-way, as a GPU fault or a cancelled context in a
// later epoch makes one.
type failingAdam struct {
	cuda.Backend
	calls, n int
}

func (f *failingAdam) Adam(o cuda.AdamOptions) error {
	f.calls++
	if f.calls == f.n {
		return errors.New("the device fell over")
	}
	return f.Backend.Adam(o)
}

// TestFailedUpdateMovesNothing: an update whose second epoch fails leaves
// the weights, Adam's moments and its step count as they were, so the
// next update is bit for bit the one a learner that never saw the failure
// makes.
func TestFailedUpdateMovesNothing(t *testing.T) {
	run, batches := loadRecorded(t)
	cfg := run.Config
	if cfg.Epochs < 2 {
		cfg.Epochs = 2
	}
	clean, err := NewLearner(cuda.NewCPU(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer clean.Close()
	fb := &failingAdam{Backend: cuda.NewCPU()}
	failed, err := NewLearner(fb, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer failed.Close()
	ctx := context.Background()
	for _, l := range []*Learner{clean, failed} {
		if _, _, err := l.Update(ctx, batches[0]); err != nil {
			t.Fatal(err)
		}
	}
	fb.n = fb.calls + 2 // the second update's second epoch
	if _, _, err := failed.Update(ctx, batches[1]); err == nil {
		t.Fatal("the update whose Adam step fails did not fail")
	}
	if failed.updates != 1 || failed.step != clean.step {
		t.Fatalf("after the failed update: %d updates and %d Adam steps, want 1 and %d", failed.updates, failed.step, clean.step)
	}
	for i := 1; i < 3; i++ {
		for _, l := range []*Learner{clean, failed} {
			if _, _, err := l.Update(ctx, batches[i]); err != nil {
				t.Fatal(err)
			}
		}
		if a, b := paramsSHA(clean.Current().Params), paramsSHA(failed.Current().Params); a != b {
			t.Fatalf("update %d after a failed one: weights %.12s, want %.12s as a learner that never failed", i+1, b, a)
		}
	}
}
