package curriculum

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/synth"
)

func newReplay(t *testing.T, mod func(*ReplayConfig)) *Replay {
	t.Helper()
	cfg := DefaultReplayConfig()
	cfg.Seed = 7
	if mod != nil {
		mod(&cfg)
	}
	r, err := NewReplay(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// kinds fills r with n tasks of each kind, each in a bin of its own kind,
// and plays them: easy 4 of 4, hopeless 0 of 4, frontier 2 of 4 (too few
// outcomes to retire anything).
func kinds(t *testing.T, r *Replay, n int) map[string]string {
	t.Helper()
	kind := map[string]string{}
	for _, k := range []string{"easy", "hopeless", "frontier"} {
		for i := range n {
			task := &env.Task{ID: fmt.Sprintf("%s-%d", k, i), Bin: k + "/1/single/m"}
			kind[task.ID] = k
			r.Admit([]*env.Task{task})
			for j := range 4 {
				rew := 0.0
				if k == "easy" || (k == "frontier" && j%2 == 0) {
					rew = 1
				}
				r.Observe(task, rew, 1)
			}
		}
	}
	return kind
}

// play observes one group of two outcomes of task, as its kind has them.
func play(r *Replay, task *env.Task, kind string, group uint64) {
	for j := range 2 {
		rew := 0.0
		if kind == "easy" || (kind == "frontier" && j == 0) {
			rew = 1
		}
		r.Observe(task, rew, group)
	}
}

func TestFrontierSamplingFavoursLearnableTasksAndRemeasuresStaleOnes(t *testing.T) {
	gaps := map[float64]int{}
	for _, rho := range []float64{0, 0.2} {
		r := newReplay(t, func(c *ReplayConfig) { c.FreshShare, c.Staleness = 0, rho })
		kind := kinds(t, r, 10)
		if st := r.Stats().Frontier; st.Retired != 0 {
			t.Fatalf("ρ %v: %d tasks retired after 4 outcomes each; the test needs none", rho, st.Retired)
		}
		count := map[string]int{}
		last := map[string]int{}
		maxGap := 0
		const plans = 3000
		for i := range plans {
			p := r.Plan(1)
			if len(p.Replay) != 1 || p.Fresh != 0 {
				t.Fatalf("plan %+v, want one task replayed", p)
			}
			task := p.Replay[0]
			count[kind[task.ID]]++
			last[task.ID] = i
			play(r, task, kind[task.ID], uint64(100+i))
		}
		for id, k := range kind {
			if k == "frontier" { // the others are retired soon
				maxGap = max(maxGap, plans-last[id])
			}
		}
		share := float64(count["frontier"]) / plans
		t.Logf("ρ %v: picks %v, longest unplayed %d plans", rho, count, maxGap)
		if share < 0.6 {
			t.Errorf("ρ %v: frontier tasks %.2f of the picks (%v), want most", rho, share, count)
		}
		gaps[rho] = maxGap
	}
	// Among the frontier tasks, the rank prioritization alone leaves some
	// unplayed for long; the staleness term brings them back.
	if gaps[0.2] > 150 || gaps[0] < 2*gaps[0.2] {
		t.Errorf("longest a frontier task went unplayed: %d plans without staleness, %d with; want it short with, and much longer without", gaps[0], gaps[0.2])
	}
}

func TestRetireAndReturn(t *testing.T) {
	r := newReplay(t, func(c *ReplayConfig) { c.FreshShare, c.Estimate.Discount = 0, 0.8 })
	hopeless := &env.Task{ID: "h", Bin: "stmt/1/single/m"}
	other := &env.Task{ID: "o", Bin: "token/1/single/m"}
	r.Admit([]*env.Task{hopeless, other})
	for range 40 {
		r.Observe(hopeless, 0, 1)
	}
	r.Observe(other, 1, 2)
	r.Observe(other, 0, 2)
	st := r.Stats().Frontier
	if st.Retired != 1 || st.RetiredTotal != 1 {
		t.Fatalf("after 0 of 40: retired %d (total %d), want 1", st.Retired, st.RetiredTotal)
	}
	for i := range 50 {
		p := r.Plan(1)
		if len(p.Replay) != 1 || p.Replay[0].ID != "o" {
			t.Fatalf("plan %+v: a retired task was replayed", p)
		}
		play(r, other, "frontier", uint64(10+i))
	}
	// Each update discounts the evidence by 0.8: 40 failures fade below what
	// confidence needs within a few dozen updates, and the task returns.
	var v int64
	for v = 1; v < 100 && r.Stats().Frontier.Returned == 0; v++ {
		r.Advance(v)
	}
	if st := r.Stats().Frontier; st.Returned != 1 || st.Retired != 0 {
		t.Fatalf("after %d updates: returned %d, retired %d; want the task back", v, st.Returned, st.Retired)
	}
	if v < 3 {
		t.Errorf("the task returned after %d updates: the discount barely ran", v)
	}
	t.Logf("returned after %d updates", v)
	seen := false
	for i := range 50 {
		p := r.Plan(1)
		if len(p.Replay) == 1 && p.Replay[0].ID == "h" {
			seen = true
		}
		for _, task := range p.Replay {
			play(r, task, "frontier", uint64(100+i))
		}
	}
	if !seen {
		t.Error("the returned task was never replayed")
	}
}

func TestStrategiesChooseAsSpecified(t *testing.T) {
	pick := func(strategy string, share float64) (map[string]int, int) {
		r := newReplay(t, func(c *ReplayConfig) { c.Strategy, c.FreshShare = strategy, share })
		kind := kinds(t, r, 10)
		count, fresh := map[string]int{}, 0
		for i := range 2000 {
			p := r.Plan(4)
			fresh += p.Fresh
			for j, task := range p.Replay {
				count[kind[task.ID]]++
				play(r, task, kind[task.ID], uint64(100+4*i+j))
			}
		}
		return count, fresh
	}
	if c, _ := pick(StrategyEasy, 0); c["easy"] == 0 || c["hopeless"]+c["frontier"] > 0 {
		t.Errorf("easy replayed %v, want easy tasks only", c)
	}
	if c, _ := pick(StrategyHard, 0); c["hopeless"] == 0 || c["easy"]+c["frontier"] > 0 {
		t.Errorf("hard replayed %v, want hopeless tasks only", c)
	}
	c, _ := pick(StrategyUniform, 0)
	for _, k := range []string{"easy", "hopeless", "frontier"} {
		if s := float64(c[k]) / 8000; s < 0.3 || s > 0.37 {
			t.Errorf("uniform replayed %v: %s %.3f of the picks, want 1/3", c, k, s)
		}
	}
	if _, fresh := pick(StrategyFrontier, 0.25); fresh < 1900 || fresh > 2100 {
		t.Errorf("frontier at fresh share 0.25 asked for %d fresh of 8000", fresh)
	}
	// The fixed-set strategies take FixedSet tasks, then only replay.
	for _, s := range []string{StrategyOffline, StrategyFrontierNoSynth} {
		r := newReplay(t, func(c *ReplayConfig) { c.Strategy, c.FixedSet = s, 6 })
		var fresh int
		for i := range 100 {
			p := r.Plan(4)
			fresh += p.Fresh
			tasks := make([]*env.Task, p.Fresh)
			for j := range tasks {
				tasks[j] = &env.Task{ID: fmt.Sprintf("%s-%d-%d", s, i, j)}
			}
			r.Admit(tasks)
			if got := len(p.Replay) + p.Fresh; got != 4 {
				t.Fatalf("%s: plan of %d tasks, want 4", s, got)
			}
		}
		if fresh != 6 || r.Stats().Frontier.Buffer != 6 {
			t.Errorf("%s: %d fresh tasks, buffer %d; want the fixed set of 6", s, fresh, r.Stats().Frontier.Buffer)
		}
	}
}

// TestRequestsSteerToLearnableBins plays a world of two bins, one whose
// tasks pass half of the time and one whose tasks never pass: the
// requests, after trying both and each knob alone, make most tasks in the
// learnable bin.
func TestRequestsSteerToLearnableBins(t *testing.T) {
	r := newReplay(t, nil)
	bins := []synth.Knobs{{Family: "token", K: 1, Locality: "single", Module: "m"}, {Family: "stmt", K: 1, Locality: "single", Module: "m"}}
	made := map[string]int{}
	var group uint64
	for i := range 400 {
		req := r.Request()
		if req.Knobs == nil {
			t.Fatal("frontier request without knobs")
		}
		var match []synth.Knobs
		for _, b := range bins {
			if req.Knobs.Matches(b) {
				match = append(match, b)
			}
		}
		b := match[i%len(match)]
		task := env.Task{ID: fmt.Sprintf("t%d", i), Bin: b.Key()}
		r.Synthesized(req, []env.Task{task})
		r.Admit([]*env.Task{&task})
		group++
		for j := range 8 {
			rew := 0.0
			if b.Family == "token" && j%2 == 0 {
				rew = 1
			}
			r.Observe(&task, rew, group)
		}
		if i >= 200 {
			made[b.Family]++
		}
	}
	if made["token"] < 170 {
		t.Errorf("tasks made in the second half by family %v: want most in the learnable bin", made)
	}
	if st := r.Stats().Frontier; st.Steered == 0 || st.SteeredPassRate < 0.4 {
		t.Errorf("steered %d requests, their tasks pass %.3f; want near one half", st.Steered, st.SteeredPassRate)
	}
	u := newReplay(t, func(c *ReplayConfig) { c.Strategy = StrategyUniform })
	if req := u.Request(); req.Knobs == nil || *req.Knobs != (synth.Knobs{}) {
		t.Errorf("uniform request %+v, want the synthesizer's own mix", req)
	}
}

func TestNewReplayRejectsNonsense(t *testing.T) {
	for _, mod := range []func(*ReplayConfig){
		func(c *ReplayConfig) { c.Strategy = "best" },
		func(c *ReplayConfig) { c.Temperature = 0 },
		func(c *ReplayConfig) { c.FreshShare = 1.5 },
		func(c *ReplayConfig) { c.Estimate.Discount = 0 },
		func(c *ReplayConfig) { c.Capacity = 0 },
	} {
		cfg := DefaultReplayConfig()
		mod(&cfg)
		if _, err := NewReplay(cfg); err == nil {
			t.Errorf("NewReplay(%+v) accepted", cfg)
		}
	}
}

func TestEvictionForgets(t *testing.T) {
	r := newReplay(t, func(c *ReplayConfig) { c.Capacity = 3 })
	for i := range 10 {
		task := &env.Task{ID: fmt.Sprintf("t%d", i), Bin: "token/1/single/m"}
		r.Admit([]*env.Task{task})
		r.Observe(task, float64(i%2), uint64(i))
	}
	st := r.Stats().Frontier
	if st.Buffer != 3 || st.Evicted != 7 || r.Estimate().Tasks() > 3 {
		t.Errorf("buffer %d, evicted %d, estimate holds %d tasks; want 3, 7 and no more than the buffer", st.Buffer, st.Evicted, r.Estimate().Tasks())
	}
}

// Compound requests name the buffered task of highest expected
// learnability among those solved more often than not and of fewer than
// MaxCompoundK mutations, at most MaxCompounds times each; the tasks they
// bring are counted, and so are their first groups' outcomes.
func TestCompoundRequests(t *testing.T) {
	r := newReplay(t, func(c *ReplayConfig) { c.Compound = 1 })
	mut := func(n int) []env.Mutation {
		ms := make([]env.Mutation, n)
		for i := range ms {
			ms[i] = env.Mutation{File: "a.go", Op: "op", Edits: []env.Edit{{Offset: 10 * i, Old: "x", New: "y"}}}
		}
		return ms
	}
	task := func(id string, k int, rewards ...float64) *env.Task {
		tk := &env.Task{ID: id, Repo: "m", Package: "m/p", Bin: "token/1/single/m", Mutations: mut(k)}
		r.Admit([]*env.Task{tk})
		for _, rew := range rewards {
			r.Observe(tk, rew, 1)
		}
		return tk
	}
	task("hopeless", 1, 0, 0, 0, 0)
	task("three", 3, 1, 1, 1, 0)
	task("easy", 1, 1, 1, 1, 1, 1, 1, 1, 1)
	best := task("best", 1, 1, 1, 1, 0)

	var bases []string
	for range 2*MaxCompounds + 1 {
		req := r.Request()
		if req.Base == nil {
			bases = append(bases, "")
			continue
		}
		bases = append(bases, req.Base.ID)
	}
	want := []string{"best", "best", "easy", "easy", ""}
	if fmt.Sprint(bases) != fmt.Sprint(want) {
		t.Errorf("compound bases %q, want %q", bases, want)
	}

	compound := env.Task{ID: "best+1", Repo: "m", Package: "m/p", Bin: "token/2/func/m", Mutations: append(mut(1), env.Mutation{File: "a.go", Op: "other", Edits: []env.Edit{{Offset: 99, Old: "a", New: "b"}}})}
	other := env.Task{ID: "other", Repo: "m", Package: "m/q", Bin: "token/2/func/m", Mutations: mut(2)} // another package
	r.Synthesized(synth.Request{Base: best, Knobs: &synth.Knobs{}}, []env.Task{compound, other})
	r.Admit([]*env.Task{&compound, &other})
	r.Observe(&compound, 1, 2)
	r.Observe(&compound, 0, 2)
	st := r.Stats().Frontier
	if st.Compounds != 2*MaxCompounds || st.CompoundTasks != 1 || st.CompoundTried != 2 || st.CompoundPassed != 1 {
		t.Errorf("compound stats: %d requests, %d tasks, %d of %d passed; want %d, 1, 1 of 2",
			st.Compounds, st.CompoundTasks, st.CompoundPassed, st.CompoundTried, 2*MaxCompounds)
	}

	if _, err := NewReplay(func() ReplayConfig { c := DefaultReplayConfig(); c.Compound = 1.5; return c }()); err == nil {
		t.Error("compound share 1.5: no error")
	}
}

// A bin the synthesizer keeps failing to make loses the requests: after it
// brings tasks of other bins instead, frontier asks for something else.
func TestRequestsMoveOnFromBinsTheSynthesizerCannotMake(t *testing.T) {
	r := newReplay(t, func(c *ReplayConfig) { c.Explore = 0 })
	good := synth.Knobs{Family: "token", K: 1, Locality: "single", Module: "m"}
	scarce := synth.Knobs{Family: "idiom", K: 1, Locality: "single", Module: "m"}
	var group uint64
	play := func(id string, b synth.Knobs, pass bool) {
		task := env.Task{ID: id, Bin: b.Key()}
		r.Admit([]*env.Task{&task})
		group++
		for j := range 8 {
			rew := 0.0
			if pass && j%2 == 0 {
				rew = 1
			}
			r.Observe(&task, rew, group)
		}
	}
	// Both bins have been seen at a pass rate of one half.
	play("seed-good", good, true)
	play("seed-scarce", scarce, true)
	asked := map[string]int{}
	for i := range 60 {
		req := r.Request()
		asked[req.Knobs.Key()]++
		// The synthesizer has no idiom mutant left: every request, that
		// one included, brings a token task.
		task := env.Task{ID: fmt.Sprintf("t%d", i), Bin: good.Key()}
		r.Synthesized(req, []env.Task{task})
		play(task.ID, good, true)
	}
	if n := asked[scarce.Key()] + asked[synth.Knobs{Family: "idiom"}.Key()]; n > 12 {
		t.Errorf("asked for the bin it cannot make %d times of 60 (%v); want it dropped after a few", n, asked)
	}
}

// TestScoringAgreesWithTheEstimate checks the view that Plan, eviction
// and Stats score the buffer with: every buffered task's posterior is the
// estimate's own, to the bit, for tasks played and unplayed, in bins seen
// and unseen, with the target's ability moved off its start.
func TestScoringAgreesWithTheEstimate(t *testing.T) {
	r := newReplay(t, nil)
	kinds(t, r, 5)
	for i := range 6 {
		// Unplayed tasks, some in a bin never observed, at spread difficulties.
		bin := []string{"easy/1/single/m", "fresh/2/multi/m"}[i%2]
		r.Admit([]*env.Task{{ID: fmt.Sprintf("new-%d", i), Bin: bin, Difficulty: float64(i) - 2}})
	}
	r.target.a = 1.3
	check := func(when string) {
		t.Helper()
		sc := r.scoring()
		for _, e := range r.buf {
			a, b := r.est.Posterior(e.t.ID, e.bin)
			ga, gb := sc.posterior(e)
			// The snapshot takes the prediction's logit where the estimate
			// takes its probability: the two agree to rounding.
			if !near(a, ga) || !near(b, gb) {
				t.Errorf("%s: %s: snapshot Beta(%v, %v), estimate Beta(%v, %v)", when, e.t.ID, ga, gb, a, b)
			}
			if got, want := sc.score(e), r.est.Score(e.t.ID, e.bin); !near(got, want) {
				t.Errorf("%s: %s: snapshot score %v, estimate %v", when, e.t.ID, got, want)
			}
			if got, want := r.tries(e), r.est.Tries(e.t.ID); got != want {
				t.Errorf("%s: %s: tries %d, estimate %d", when, e.t.ID, got, want)
			}
			gh, gs := r.outside(e)
			if wh, ws := r.est.Outside(e.t.ID); gh != wh || gs != ws {
				t.Errorf("%s: %s: outside (hopeless, saturated) %v %v, estimate %v %v", when, e.t.ID, gh, gs, wh, ws)
			}
		}
	}
	check("at first")
	check("again") // the posteriors kept
	// Each change to what a posterior depends on: an outcome (of the
	// task's first group, which its bin pools, and of a later one), a
	// discount, the inner target's ability.
	r.Observe(r.buf[len(r.buf)-1].t, 1, 1000)
	check("after a first-group outcome")
	r.Observe(r.buf[0].t, 0, 1001)
	check("after a replay's outcome")
	r.Advance(r.version + 3)
	check("after a discount")
	r.target.a = -0.4
	check("after the ability moved")
}

// TestFenwickDraws checks Plan's sampler: without replacement it draws
// every positive weight once and no zero weight; with replacement it draws
// in proportion to the weights.
func TestFenwickDraws(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 2, 3, 7, 64, 1000} {
		w := make([]float64, n)
		positive := 0
		for i := range w {
			if i%3 != 1 {
				w[i] = rng.Float64() + 1e-3
				positive++
			}
		}
		f := newFenwick(slices.Clone(w))
		seen := map[int]bool{}
		for {
			i, ok := f.find(rng.Float64())
			if !ok {
				break
			}
			if w[i] == 0 || seen[i] {
				t.Fatalf("n %d: drew %d (weight %v, seen before %v)", n, i, w[i], seen[i])
			}
			seen[i] = true
			f.zero(i)
		}
		if len(seen) != positive {
			t.Errorf("n %d: drew %d of %d positive weights", n, len(seen), positive)
		}
	}
	w := []float64{1, 0, 2, 5, 2}
	f := newFenwick(slices.Clone(w))
	count := make([]int, len(w))
	const draws = 100000
	for range draws {
		i, _ := f.find(rng.Float64())
		count[i]++
	}
	for i, c := range count {
		if want := w[i] / 10 * draws; math.Abs(float64(c)-want) > 5*math.Sqrt(want+1) {
			t.Errorf("index %d drawn %d times, want about %.0f", i, c, want)
		}
	}
}

// TestReturnKeepsSolvedTasksThatStillTeach: a task solved in every
// rollout retires as saturated on the 0/1 reward; with ReplayConfig.Return
// and returns that differ within its groups (solved in different numbers
// of tries) it stays, and scores as learnable; once its returns agree it
// retires.
func TestReturnKeepsSolvedTasksThatStillTeach(t *testing.T) {
	for _, ret := range []bool{false, true} {
		r := newReplay(t, func(c *ReplayConfig) { c.FreshShare, c.Return = 0, ret })
		solved := &env.Task{ID: "s", Bin: "token/1/single/m"}
		r.Admit([]*env.Task{solved})
		for g := range uint64(10) {
			for j := range 4 {
				r.ObserveReturn(solved, 1-0.1*float64(j%2), g) // 1 or 0.9: first try or second
				r.Observe(solved, 1, g)
			}
		}
		st := r.Stats().Frontier
		if want := map[bool]int{false: 1, true: 0}[ret]; st.Retired != want {
			t.Fatalf("Return %v: retired %d after 40 solves in different numbers of tries, want %d", ret, st.Retired, want)
		}
		e := r.byID["s"]
		if s := r.scoring().score(e); ret && s < 0.2 {
			t.Errorf("Return: score %.3f of a task whose returns differ, want at least a half-solved task's (about 0.25)", s)
		}
		if !ret {
			continue
		}
		for g := uint64(10); g < 20; g++ { // now every rollout solves it at the first try
			for range 4 {
				r.ObserveReturn(solved, 1, g)
				r.Observe(solved, 1, g)
			}
		}
		if st := r.Stats().Frontier; st.Retired != 1 {
			t.Errorf("Return: retired %d once every return agreed, want 1", st.Retired)
		}
	}
}
