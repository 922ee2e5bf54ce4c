package source

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/rs/zerolog"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/synth"
	"github.com/frognano/frog/synth/validate"
)

// ErrExhausted says that every mutant of every module has been tried.
var ErrExhausted = errors.New("sources exhausted")

// Config tunes a Synthesizer.
type Config struct {
	// Validate configures each module's validators (Dedup and Workdir are
	// set by the Synthesizer).
	Validate validate.Config
	// Seed orders the mutants of each package (they are tried shuffled, so
	// that neighbouring mutants of one function do not come in a row) and
	// draws the combined mutants. Each package draws from its own stream,
	// so the order workers take packages in does not change what is tried.
	Seed uint64
	// Provider opens the sandboxes validation runs in, one per worker.
	Provider env.Provider
	// Workers is how many packages are validated at once, each in its own
	// sandbox; GOMAXPROCS when zero. The provider's own limit also holds.
	Workers int
	// MaxMutants caps the single mutants tried per package (a random
	// sample), so that big packages do not crowd out the rest; 400 when
	// zero, no cap when negative.
	MaxMutants int
	// Combos is how many combined mutants (k = 2 and 3, in one function,
	// one file or one package) are tried per single mutant that its tests caught; 0.5
	// when zero, none when negative.
	Combos float64
	// Packages, when not empty, restricts every module to the package
	// directories listed ("./trees/avltree", "." for the root).
	Packages []string
	// Observe, when set, is called with every verdict, from the workers'
	// goroutines (concurrently).
	Observe func(validate.Mutant, validate.Result)
}

// ModuleStats is the yield of one module.
type ModuleStats struct {
	Module string `json:"module"`
	// Packages is the number of packages with tests; Prepared those whose
	// baseline passed; Skipped says why the others were left out.
	Packages int      `json:"packages"`
	Prepared int      `json:"prepared"`
	Skipped  []string `json:"skipped,omitempty"`
	// Flaky counts tests excluded because they passed in only one baseline
	// run; Slow those excluded for taking longer than MaxTestTime.
	Flaky int `json:"flaky"`
	Slow  int `json:"slow"`
	validate.Counters
}

// Stats is the yield so far, per operator family and per module. Combined
// mutants are counted under the family "combo-k2" or "combo-k3".
type Stats struct {
	Families map[string]validate.Counters `json:"families"`
	Modules  []ModuleStats                `json:"modules"`
	Total    validate.Counters            `json:"total"`
}

// Synthesizer makes validated bug-fix tasks from the packages of its
// modules. Its workers take packages in turn from each module, so that the
// first tasks already come from many modules. A package is prepared
// (baseline runs, coverage map) by the worker that takes it; its single
// mutants are validated first, then combinations of those its tests caught.
// Generate and Tasks may be called from several goroutines; they are
// serialized.
type Synthesizer struct {
	log zerolog.Logger
	cfg Config

	mu      sync.Mutex // serializes Generate and Tasks
	mods    []*modState
	workers []*worker
	pool    []synth.TaskRecord // valid tasks not yet handed out

	qmu    sync.Mutex
	qcond  *sync.Cond // signalled when jobs are queued or one ends
	jobs   []*job     // to do, in the order they are taken
	active int        // jobs being done, which may queue more

	statsMu sync.Mutex
	fams    map[string]*validate.Counters
}

var _ synth.Source = (*Synthesizer)(nil)

type modState struct {
	mod   Module
	dedup *validate.Dedup
	stats ModuleStats // guarded by Synthesizer.statsMu
}

// pkgJob is one package of one module: its chunks share it.
type pkgJob struct {
	mod *modState
	rel string

	mu      sync.Mutex
	rng     *rand.Rand
	pkg     *validate.Package // nil until prepared
	pending int               // chunks of the current stage not finished
	caught  []validate.Mutant // single mutants the tests caught
	combos  bool              // the combined stage has been drawn
}

// job is a unit of work: preparing a package (mutants nil) or validating a
// chunk of its mutants. A package's chunks go to the front of the queue so
// that idle workers share a big package and what is prepared is finished
// first.
type job struct {
	pj      *pkgJob
	mutants []validate.Mutant
}

// worker holds one sandbox and a validator per module in it.
type worker struct {
	id  int
	sb  env.Sandbox
	val map[*modState]*validate.Validator
}

// New returns a Synthesizer over mods, validating in sandboxes from
// cfg.Provider. A module whose packages cannot be listed is logged and
// skipped; it is an error only when none is left.
func New(mods []Module, cfg Config, log zerolog.Logger) (*Synthesizer, error) {
	if cfg.Provider == nil {
		return nil, errors.New("synth: no sandbox provider")
	}
	if cfg.Workers <= 0 {
		cfg.Workers = runtime.GOMAXPROCS(0)
	}
	if cfg.MaxMutants == 0 {
		cfg.MaxMutants = 400
	}
	if cfg.Combos == 0 {
		cfg.Combos = 0.5
	}
	s := &Synthesizer{
		log:  log.With().Str("component", "synth").Logger(),
		cfg:  cfg,
		fams: map[string]*validate.Counters{},
	}
	s.qcond = sync.NewCond(&s.qmu)
	var perMod [][]*job
	for _, m := range mods {
		st := &modState{mod: m, dedup: validate.NewDedup(), stats: ModuleStats{Module: m.String()}}
		s.mods = append(s.mods, st)
		pkgs, err := Packages(m)
		if err == nil && len(pkgs) == 0 {
			err = fmt.Errorf("module %s has no package with tests", m)
		}
		if err != nil {
			st.stats.Skipped = append(st.stats.Skipped, err.Error())
			s.log.Warn().Err(err).Str("module", m.String()).Msg("module skipped")
			continue
		}
		var js []*job
		for _, rel := range pkgs {
			if len(cfg.Packages) > 0 && !slices.Contains(cfg.Packages, rel) {
				continue
			}
			h := fnv.New64a()
			fmt.Fprintf(h, "%s\x00%s", m.String(), rel)
			seed := h.Sum64()
			js = append(js, &job{pj: &pkgJob{mod: st, rel: rel, rng: rand.New(rand.NewPCG(cfg.Seed, seed))}})
		}
		st.stats.Packages = len(js)
		perMod = append(perMod, js)
	}
	if len(s.mods) == 0 {
		return nil, errors.New("no module to synthesize from")
	}
	// Round robin: the first package of every module, then the second...
	for i := 0; ; i++ {
		added := false
		for _, js := range perMod {
			if i < len(js) {
				s.jobs = append(s.jobs, js[i])
				added = true
			}
		}
		if !added {
			break
		}
	}
	return s, nil
}

// Close closes the workers' sandboxes. The Synthesizer is not used after.
func (s *Synthesizer) Close(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for _, w := range s.workers {
		if w.sb != nil {
			errs = append(errs, w.sb.Close(ctx))
			w.sb = nil
		}
	}
	return errors.Join(errs...)
}

// Stats returns the yield so far. It may be called at any time, from any
// goroutine.
func (s *Synthesizer) Stats() Stats {
	s.statsMu.Lock()
	defer s.statsMu.Unlock()
	st := Stats{Families: map[string]validate.Counters{}}
	for f, c := range s.fams {
		st.Families[f] = *c
	}
	for _, m := range s.mods {
		ms := m.stats
		ms.Skipped = slices.Clone(ms.Skipped)
		st.Modules = append(st.Modules, ms)
		st.Total.Merge(m.stats.Counters)
	}
	return st
}

// Generate validates mutants until n are valid (n ≤ 0: until the sources
// run out), calling emit with each valid task as soon as it is validated,
// from the calling goroutine. Tasks validated beyond n are kept for Tasks.
// It returns ErrExhausted when the sources ran out first, ctx's error when
// cancelled, and emit's error if emit fails.
func (s *Synthesizer) Generate(ctx context.Context, n int, emit func(synth.TaskRecord) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	got := 0
	for len(s.pool) > 0 && (n <= 0 || got < n) {
		rec := s.pool[0]
		s.pool = s.pool[1:]
		if err := emit(rec); err != nil {
			return err
		}
		got++
	}
	if n > 0 && got >= n {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	recs := make(chan synth.TaskRecord)
	errc := make(chan error, s.cfg.Workers)
	var wg sync.WaitGroup
	for len(s.workers) < s.cfg.Workers {
		s.workers = append(s.workers, &worker{id: len(s.workers), val: map[*modState]*validate.Validator{}})
	}
	// A worker waiting for jobs wakes when the run ends.
	defer context.AfterFunc(wctx, func() {
		s.qmu.Lock()
		s.qcond.Broadcast()
		s.qmu.Unlock()
	})()
	for _, w := range s.workers {
		wg.Go(func() {
			err := s.work(wctx, w, recs)
			if err != nil && !errors.Is(err, context.Canceled) {
				cancel() // a fault of the validator: stop the others
			}
			errc <- err
		})
	}
	go func() { wg.Wait(); close(recs) }()
	var emitErr error
	for rec := range recs {
		if emitErr != nil || n > 0 && got >= n {
			s.pool = append(s.pool, rec)
			continue
		}
		if err := emit(rec); err != nil {
			emitErr = err
			cancel()
			continue
		}
		got++
		if n > 0 && got >= n {
			cancel()
		}
	}
	close(errc)
	var werr error
	for err := range errc {
		if err != nil && !errors.Is(err, context.Canceled) && werr == nil {
			werr = err
		}
	}
	switch {
	case emitErr != nil:
		return emitErr
	case n > 0 && got >= n:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case werr != nil:
		return werr
	}
	return ErrExhausted
}

// Tasks returns n validated tasks whose difficulty estimates lie nearest
// difficulty. It validates until it holds twice n unused tasks (or the
// sources run out) and keeps those it does not return for later calls.
// With fewer than n it returns what it has and an error wrapping
// ErrExhausted; on cancellation, ctx's error.
func (s *Synthesizer) Tasks(ctx context.Context, n int, difficulty float64) ([]env.Task, error) {
	var fresh []synth.TaskRecord
	var err error
	if need := 2*n - s.pooled(); need > 0 { // Generate takes 0 as "all"
		err = s.Generate(ctx, need, func(r synth.TaskRecord) error {
			fresh = append(fresh, r)
			return nil
		})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pool = append(s.pool, fresh...)
	if err != nil && !errors.Is(err, ErrExhausted) {
		return nil, err
	}
	slices.SortStableFunc(s.pool, func(a, b synth.TaskRecord) int {
		return cmp.Compare(math.Abs(a.Difficulty-difficulty), math.Abs(b.Difficulty-difficulty))
	})
	k := min(n, len(s.pool))
	out := make([]env.Task, k)
	for i, r := range s.pool[:k] {
		out[i] = r.Task
	}
	s.pool = slices.Delete(s.pool, 0, k)
	if k < n {
		return out, fmt.Errorf("%d of %d tasks: %w", k, n, ErrExhausted)
	}
	return out, nil
}

func (s *Synthesizer) pooled() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pool)
}

// take returns the next job, waiting while the queue is empty but jobs
// being done may queue more; nil when all is done or ctx has ended.
func (s *Synthesizer) take(ctx context.Context) *job {
	s.qmu.Lock()
	defer s.qmu.Unlock()
	for len(s.jobs) == 0 && s.active > 0 && ctx.Err() == nil {
		s.qcond.Wait()
	}
	if len(s.jobs) == 0 || ctx.Err() != nil {
		return nil
	}
	j := s.jobs[0]
	s.jobs = s.jobs[1:]
	s.active++
	return j
}

// finished ends a job taken, putting it back when it is not done.
func (s *Synthesizer) finished(j *job, done bool) {
	s.qmu.Lock()
	defer s.qmu.Unlock()
	s.active--
	if !done {
		s.jobs = append([]*job{j}, s.jobs...)
	}
	s.qcond.Broadcast()
}

// putFront puts jobs at the front of the queue, in order.
func (s *Synthesizer) putFront(js ...*job) {
	s.qmu.Lock()
	defer s.qmu.Unlock()
	s.jobs = append(slices.Clone(js), s.jobs...)
	s.qcond.Broadcast()
}

// chunks splits the mutants of a stage of pj into jobs, so that every
// worker can take part, and counts them as pending. pj.mu is held.
func (s *Synthesizer) chunks(pj *pkgJob, muts []validate.Mutant) []*job {
	size := max((len(muts)+s.cfg.Workers-1)/s.cfg.Workers, 32)
	if b := s.cfg.Validate.BatchSize; b > 0 {
		size = min(size, b)
	}
	var js []*job
	for len(muts) > 0 {
		n := min(size, len(muts))
		js = append(js, &job{pj: pj, mutants: muts[:n:n]})
		muts = muts[n:]
	}
	pj.pending += len(js)
	return js
}

// work runs jobs until none is left or ctx ends.
func (s *Synthesizer) work(ctx context.Context, w *worker, recs chan<- synth.TaskRecord) error {
	for {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		j := s.take(ctx)
		if j == nil {
			return ctx.Err()
		}
		done, err := s.runJob(ctx, w, j, recs)
		s.finished(j, done)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
	}
}

func (s *Synthesizer) validator(ctx context.Context, w *worker, m *modState) (*validate.Validator, error) {
	if w.sb == nil {
		sb, err := s.cfg.Provider.Open(ctx, env.OpenOptions{Run: "synth", Episode: uint64(w.id)})
		if err != nil {
			return nil, fmt.Errorf("open a sandbox for validation: %w", err)
		}
		w.sb = sb
	}
	if v := w.val[m]; v != nil {
		return v, nil
	}
	cfg := s.cfg.Validate
	cfg.Dedup = m.dedup
	cfg.Workdir = "m/" + strings.NewReplacer("/", "_", "@", "_").Replace(m.mod.String())
	v, err := validate.New(m.mod.Dir, w.sb, cfg, s.log)
	if err != nil {
		return nil, err
	}
	w.val[m] = v
	return v, nil
}

// runJob does j: prepares its package and queues the chunks of its single
// mutants, or validates a chunk; the last chunk of the single mutants
// queues the chunks of the combined ones. done reports that nothing is
// left of j; when it is false, j holds what is left.
func (s *Synthesizer) runJob(ctx context.Context, w *worker, j *job, recs chan<- synth.TaskRecord) (done bool, err error) {
	pj := j.pj
	m := pj.mod
	v, err := s.validator(ctx, w, m)
	if err != nil {
		return false, err
	}
	if j.mutants == nil {
		p, err := v.Prepare(ctx, pj.rel)
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		if err != nil {
			if errors.Is(err, env.ErrInfra) {
				return false, err
			}
			s.statsMu.Lock()
			m.stats.Skipped = append(m.stats.Skipped, fmt.Sprintf("%s: %v", pj.rel, firstLine([]byte(err.Error()))))
			s.statsMu.Unlock()
			s.log.Warn().Err(err).Str("module", m.mod.String()).Str("pkg", pj.rel).Msg("package skipped")
			return true, nil
		}
		muts := v.Mutants(p)
		pj.mu.Lock()
		pj.rng.Shuffle(len(muts), func(a, b int) { muts[a], muts[b] = muts[b], muts[a] })
		if s.cfg.MaxMutants > 0 && len(muts) > s.cfg.MaxMutants {
			muts = muts[:s.cfg.MaxMutants]
		}
		pj.pkg = p
		js := s.chunks(pj, muts)
		pj.mu.Unlock()
		s.statsMu.Lock()
		m.stats.Prepared++
		m.stats.Flaky += len(p.Flaky)
		m.stats.Slow += len(p.Slow)
		s.statsMu.Unlock()
		s.log.Debug().Str("module", m.mod.String()).Str("pkg", pj.rel).Int("mutants", len(muts)).Int("chunks", len(js)).Msg("package ready")
		s.putFront(js...)
		return true, nil
	}

	muts := j.mutants
	tried := make([]bool, len(muts))
	err = v.Batch(ctx, pj.pkg, muts, func(i int, res validate.Result) {
		tried[i] = true
		s.count(m, muts[i], res.Outcome)
		if s.cfg.Observe != nil {
			s.cfg.Observe(muts[i], res)
		}
		if len(res.FailToPass) > 0 && len(muts[i].Mutations) == 1 {
			pj.mu.Lock()
			pj.caught = append(pj.caught, muts[i])
			pj.mu.Unlock()
		}
		if res.Outcome == validate.Valid {
			recs <- s.record(m, pj.pkg, muts[i], res)
		}
	})
	if err != nil {
		j.mutants = j.mutants[:0:0]
		for i, t := range tried {
			if !t {
				j.mutants = append(j.mutants, muts[i])
			}
		}
		return len(j.mutants) == 0, err
	}
	pj.mu.Lock()
	pj.pending--
	var next []*job
	if pj.pending == 0 && !pj.combos && s.cfg.Combos > 0 {
		pj.combos = true
		n := int(math.Round(s.cfg.Combos * float64(len(pj.caught))))
		next = s.chunks(pj, combos(pj.rng, pj.caught, n))
		pj.caught = nil
	}
	pj.mu.Unlock()
	s.putFront(next...)
	return true, nil
}

// count adds a verdict to the module's and the family's counters.
func (s *Synthesizer) count(m *modState, mut validate.Mutant, o validate.Outcome) {
	family := "unknown"
	switch {
	case len(mut.Mutations) > 1:
		family = fmt.Sprintf("combo-k%d", len(mut.Mutations))
	case len(mut.Mutations) == 1:
		family = mut.Mutations[0].Family
	}
	s.statsMu.Lock()
	defer s.statsMu.Unlock()
	m.stats.Add(o)
	c := s.fams[family]
	if c == nil {
		c = new(validate.Counters)
		s.fams[family] = c
	}
	c.Add(o)
}

func (s *Synthesizer) record(m *modState, p *validate.Package, mut validate.Mutant, res validate.Result) synth.TaskRecord {
	rec := validate.Record(m.mod.Path, p, mut, res)
	rec.Version = m.mod.Version
	rec.Difficulty = Difficulty(rec.Family, rec.Features)
	return rec
}

// combos draws up to n combined mutants of k = 2 or 3 (half each) from
// caught, the single mutants a package's tests caught, in one of three
// scopes drawn in turn: one function, one file, or the whole package.
// Mutations whose edits overlap are not combined.
func combos(rng *rand.Rand, caught []validate.Mutant, n int) []validate.Mutant {
	groups := [3]map[string][]validate.Mutant{{}, {}, {}} // by function, by file, all
	for _, m := range caught {
		groups[0][m.File+"\x00"+m.Func] = append(groups[0][m.File+"\x00"+m.Func], m)
		groups[1][m.File] = append(groups[1][m.File], m)
		groups[2][""] = append(groups[2][""], m)
	}
	var keys [3][]string
	for i, g := range groups {
		for k, ms := range g {
			if len(ms) >= 2 {
				keys[i] = append(keys[i], k)
			}
		}
		slices.Sort(keys[i])
	}
	var out []validate.Mutant
	seen := map[string]bool{}
	for tries := 0; len(out) < n && tries < 20*n; tries++ {
		scope := tries % 3
		if len(keys[scope]) == 0 {
			continue
		}
		ms := groups[scope][keys[scope][rng.IntN(len(keys[scope]))]]
		k := min(2+rng.IntN(2), len(ms))
		pick := make([]validate.Mutant, 0, k)
		var key []string
		for _, i := range rng.Perm(len(ms))[:k] {
			pick = append(pick, ms[i])
			key = append(key, ms[i].Patch)
		}
		slices.Sort(key)
		if seen[strings.Join(key, "\x00")] {
			continue
		}
		seen[strings.Join(key, "\x00")] = true
		c, err := validate.Combine(pick...)
		if err != nil {
			continue // overlapping edits
		}
		out = append(out, c)
	}
	return out
}
