package neural

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/frognano/frog/cuda"
	"github.com/frognano/frog/policy/repair"
)

func TestStartConfig(t *testing.T) {
	prior, scratch := DefaultConfig(), DefaultConfig()
	scratch.Prior, scratch.KL = false, 0
	for _, tc := range []struct {
		start string
		want  Config
	}{
		{StartPrior, prior},
		{StartScratch, scratch},
	} {
		t.Run(tc.start, func(t *testing.T) {
			got, err := StartConfig(tc.start)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(got, tc.want); diff != "" {
				t.Errorf("StartConfig(%q) (-got +want):\n%s", tc.start, diff)
			}
			if got.Start() != tc.start {
				t.Errorf("its Start() = %q, want %q", got.Start(), tc.start)
			}
			if err := got.Validate(); err != nil {
				t.Error(err)
			}
		})
	}
	if _, err := StartConfig("warm"); err == nil || !strings.Contains(err.Error(), "want prior or scratch") {
		t.Errorf("StartConfig(warm): %v; want an error naming the starts", err)
	}
}

// TestScratchIsNotThePrior checks that a scratch start's network is not the
// prior: its wide part is zero where the prior's is neural.Prior, and its
// choices among options that fault localisation tells apart are nearly
// uniform where the prior's follow fault localisation.
func TestScratchIsNotThePrior(t *testing.T) {
	d := DefaultDims
	l := d.layout()
	prior, scratch := Init(d, 1, true), Init(d, 1, false)
	for name, w := range Prior {
		i := featureIndex(name)
		if prior[l.wl+i] != w || scratch[l.wl+i] != 0 {
			t.Errorf("%s: linear weight %v from the prior, %v from scratch; want %v and 0", name, prior[l.wl+i], scratch[l.wl+i], w)
		}
	}
	// Ten options: the first is the line fault localisation ranks first
	// (Ochiai 1), the others ever less suspicious; every other feature
	// random in [0, 1).
	const n = 10
	rng := rand.New(rand.NewPCG(3, 4))
	x := make([]float32, n*d.F)
	for r := range n {
		row := x[r*d.F : (r+1)*d.F]
		for i := range row {
			row[i] = rng.Float32()
		}
		row[featureIndex("ochiai")] = 1 - float32(r)/n
		row[featureIndex("rank_inv")] = 1 / float32(r+1)
		row[featureIndex("top1")] = 0
		row[featureIndex("stop")] = 0
	}
	x[featureIndex("top1")] = 1
	pp, ps := softmax(scores(d, prior, x, 1)), softmax(scores(d, scratch, x, 1))
	if argmax(pp) != 0 || pp[0] < 0.5 {
		t.Errorf("the prior's choice: option %d, p(first) %.3f; want the first, p > 0.5", argmax(pp), pp[0])
	}
	for r, p := range ps {
		if math.Abs(float64(p)-1.0/n) > 0.02 {
			t.Errorf("from scratch, p(option %d) = %.3f; want about 1/%d (nearly uniform): %.3f", r, p, n, ps)
		}
	}
}

// TestCheckpointSaysItsStart checks that a learner's checkpoint records
// its start, read back by CheckpointConfig, which refuses a corrupted one.
func TestCheckpointSaysItsStart(t *testing.T) {
	for _, start := range Starts {
		t.Run(start, func(t *testing.T) {
			cfg, err := StartConfig(start)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Dims = Dims{F: repair.Dim, H1: 8, H2: 4}
			l, err := NewLearner(cuda.NewCPU(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			data, err := l.Checkpoint()
			if err != nil {
				t.Fatal(err)
			}
			got, err := CheckpointConfig(data)
			if err != nil {
				t.Fatal(err)
			}
			if got.Start() != start || got.KL != cfg.KL {
				t.Errorf("checkpoint's start %q, KL %v; want %q, %v", got.Start(), got.KL, start, cfg.KL)
			}
			bad := []byte(strings.Replace(string(data), `"lr":0.003`, `"lr":0.004`, 1))
			if _, err := CheckpointConfig(bad); err == nil || !strings.Contains(err.Error(), "corrupted") {
				t.Errorf("a changed checkpoint: %v; want it refused as corrupted", err)
			}
		})
	}
}
