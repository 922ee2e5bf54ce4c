package sim

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/synth"
)

// Source makes simulated tasks. It is safe for concurrent use; its output
// depends only on the seed and the order of the calls.
type Source struct {
	// Spread is the standard deviation of a task's difficulty around the
	// difficulty asked for.
	Spread float64
	mu     sync.Mutex
	rng    *rand.Rand
	next   uint64
}

var _ synth.Source = (*Source)(nil)

// New returns a source seeded with seed.
func New(seed uint64, spread float64) *Source {
	return &Source{Spread: spread, rng: rand.New(rand.NewPCG(seed, seedTag))}
}

// File is the buggy file of every simulated task.
const File = "bug.go"

// Tasks returns n tasks around difficulty.
func (s *Source) Tasks(ctx context.Context, n int, difficulty float64) ([]env.Task, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]env.Task, n)
	for i := range out {
		id := s.next
		s.next++
		patch := fmt.Sprintf("// fixed %d\n", id)
		out[i] = env.Task{
			ID:         fmt.Sprintf("sim-%08d", id),
			Repo:       "sim",
			Difficulty: difficulty + s.Spread*s.rng.NormFloat64(),
			File:       File,
			Patch:      patch,
			TestCmd:    []string{"sh", "-c", fmt.Sprintf("test \"$(cat %s)\" = %q", File, patch[:len(patch)-1])},
		}
	}
	return out, nil
}

const seedTag = 0x73796e7468 // "synth"

// Binned makes simulated tasks in difficulty bins, as the real synthesizer
// makes them: an operator family, k mutations, their locality and a module
// each shift a task's difficulty, and one family (stmt: a statement
// deleted, as a template policy can never undo) is out of reach.
//
// A task's Difficulty is the synthesizer's estimate, as a real one's is:
// its true difficulty plus noise (EstimateNoise), and blind to what puts a
// stmt task out of reach (the estimate leaves Hopeless out). The true
// difficulty, which decides the simulated agent's chance, is told only to
// whoever asks Truth (the oracle).
//
// It is a synth.Steerable: asked for a bin, it makes tasks in that bin;
// asked for a difficulty, in the bins whose estimated difficulty lies
// nearest. Safe for concurrent use; its output depends only on the seed and
// the order of the calls.
type Binned struct {
	// Spread is the standard deviation of a task's true difficulty around
	// its bin's; EstimateNoise that of the estimate around the truth.
	Spread        float64
	EstimateNoise float64
	bins          []binSpec
	truth         sync.Map // task id -> true difficulty
	mu            sync.Mutex
	rng           *rand.Rand
	next          uint64
	prefix        string
}

type binSpec struct {
	k synth.Knobs
	d float64 // true
	e float64 // what the estimate sees: d without Hopeless
}

var (
	_ synth.Source    = (*Binned)(nil)
	_ synth.Steerable = (*Binned)(nil)
)

// Out of reach: a stmt task's difficulty is its bin's plus Hopeless, which
// no simulated skill reached in a run comes near (σ(s − d) < 1e−9).
const Hopeless = 30

// Families, their base difficulties, and the modules of Binned (training)
// and of HeldoutModules (never trained on), with their offsets.
var (
	Families       = map[string]float64{"token": 0, "guard": 1.5, "stmt": 1.5 + Hopeless}
	Modules        = map[string]float64{"sim/a": -1, "sim/b": 0, "sim/c": 0.5, "sim/d": 1}
	HeldoutModules = map[string]float64{"sim/x": -0.5, "sim/y": 0.75}
)

// NewBinned returns a binned source over the training modules.
func NewBinned(seed uint64, spread, noise float64) *Binned {
	return newBinned(seed, spread, noise, Modules, "sim")
}

// NewHeldout returns a binned source over HeldoutModules, whose task ids
// differ from a training source's.
func NewHeldout(seed uint64, spread, noise float64) *Binned {
	return newBinned(seed, spread, noise, HeldoutModules, "heldout")
}

func newBinned(seed uint64, spread, noise float64, modules map[string]float64, prefix string) *Binned {
	b := &Binned{Spread: spread, EstimateNoise: noise, rng: rand.New(rand.NewPCG(seed, seedTag^0x62696e)), prefix: prefix}
	for _, fam := range []string{"token", "guard", "stmt"} {
		for _, kl := range []struct {
			k   int
			loc string
			d   float64
		}{{1, "single", 0}, {2, "func", 1.5}, {2, "spread", 2.5}, {3, "func", 3}, {3, "spread", 4}} {
			for _, mod := range sortedKeys(modules) {
				d := Families[fam] + kl.d + modules[mod]
				e := d
				if fam == "stmt" {
					e -= Hopeless
				}
				b.bins = append(b.bins, binSpec{k: synth.Knobs{Family: fam, K: kl.k, Locality: kl.loc, Module: mod}, d: d, e: e})
			}
		}
	}
	return b
}

func sortedKeys(m map[string]float64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TasksFor returns n tasks in bins matching k, each bin equally likely;
// with no bin matching, an error.
func (b *Binned) TasksFor(ctx context.Context, n int, k synth.Knobs) ([]env.Task, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var match []binSpec
	for _, s := range b.bins {
		if k.Matches(s.k) {
			match = append(match, s)
		}
	}
	if len(match) == 0 {
		return nil, fmt.Errorf("sim: no bin matches %s", k.Key())
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]env.Task, n)
	for i := range out {
		out[i] = b.task(match[b.rng.IntN(len(match))])
	}
	return out, nil
}

// Tasks returns n tasks near difficulty, as a real synthesizer's pool
// sorted by its estimates serves them: each from a bin drawn with weight
// exp(−(e − difficulty)²/2σ²), e the bin's estimated difficulty and σ = 0.5,
// so that bins whose estimates tie (a stmt bin and its guard twin) are
// equally likely.
func (b *Binned) Tasks(ctx context.Context, n int, difficulty float64) ([]env.Task, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	w := make([]float64, len(b.bins))
	var sum float64
	for i, s := range b.bins {
		x := (s.e - difficulty) / 0.5
		w[i] = math.Exp(-x * x / 2)
		sum += w[i]
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]env.Task, n)
	for i := range out {
		j := len(w) - 1 // far from every bin: the last
		if sum > 0 {
			u := b.rng.Float64() * sum
			for j = 0; j < len(w)-1 && u >= w[j]; j++ {
				u -= w[j]
			}
		}
		out[i] = b.task(b.bins[j])
	}
	return out, nil
}

func (b *Binned) task(s binSpec) env.Task {
	id := b.next
	b.next++
	patch := fmt.Sprintf("// fixed %s %d\n", b.prefix, id)
	dev := b.Spread * b.rng.NormFloat64()
	t := env.Task{
		ID:         fmt.Sprintf("%s-%08d", b.prefix, id),
		Repo:       s.k.Module,
		Bin:        s.k.Key(),
		Difficulty: s.e + dev + b.EstimateNoise*b.rng.NormFloat64(),
		File:       File,
		Patch:      patch,
		TestCmd:    []string{"sh", "-c", fmt.Sprintf("test \"$(cat %s)\" = %q", File, patch[:len(patch)-1])},
	}
	b.truth.Store(t.ID, s.d+dev)
	return t
}

// Truth is the true difficulty of task id, made by this source: what the
// simulated agent's oracle is told, never a curriculum.
func (b *Binned) Truth(id string) (float64, bool) {
	v, ok := b.truth.Load(id)
	if !ok {
		return 0, false
	}
	return v.(float64), true
}
