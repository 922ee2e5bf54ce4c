package source

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"path"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/rs/zerolog"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/synth"
	"github.com/frognano/frog/synth/validate"
)

// ErrExhausted says that every mutant of every module has been tried. It
// wraps synth.ErrExhausted, by which the curriculum actor knows to stop
// asking.
var ErrExhausted = fmt.Errorf("sources exhausted: %w", synth.ErrExhausted)

// Config tunes a Synthesizer.
type Config struct {
	// Validate configures each module's validators (Dedup and Workdir are
	// set by the Synthesizer).
	Validate validate.Config
	// Seed orders the mutants of each package (they are tried shuffled, so
	// that neighbouring mutants of one function do not come in a row) and
	// draws the combined mutants. Each package draws from its own stream,
	// so the order workers take packages in does not change what is tried.
	// A module with Existing tasks draws from a stream of its own too, set
	// by how many it has, so that continuing a store does not walk the
	// same mutants again before reaching untried ones.
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
	// Existing are tasks made before (a store being continued): each
	// counts as seen in the module it names (repo, and version for the
	// (function, FAIL_TO_PASS) rule), so that none is made again.
	Existing []synth.TaskRecord
}

// ModuleStats is the yield of one module.
type ModuleStats struct {
	Module string `json:"module"`
	// Packages is the number of packages with tests; Prepared those whose
	// baseline passed; Skipped says why the others were left out.
	Packages int      `json:"packages"`
	Prepared int      `json:"prepared"`
	Skipped  []string `json:"skipped,omitempty"`
	// Candidates estimates the single mutants the module's packages offer
	// (at most MaxMutants each): its weight in the schedule.
	Candidates int `json:"candidates"`
	// Flaky counts tests excluded because they passed in only one baseline
	// run; Slow those excluded for taking longer than MaxTestTime; Failing
	// those that failed at baseline. LeftOut names them per package.
	Flaky   int      `json:"flaky"`
	Slow    int      `json:"slow"`
	Failing int      `json:"baseline_failing"`
	LeftOut []string `json:"left_out,omitempty"`
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
// modules, spread across them from the first task: each module is given
// work in proportion to what it can yield (its packages' candidate
// mutants, see schedule.go), in chunks that start small and grow with the
// work done, so that a small store already holds tasks of most modules
// and a big run still compiles its mutants in big schemata. A package is
// prepared (baseline runs, coverage map) by the worker that takes it; its
// single mutants are validated first, then combinations of those its
// tests caught. Generate and Tasks may be called from several goroutines;
// they are serialized.
type Synthesizer struct {
	log zerolog.Logger
	cfg Config

	mu      sync.Mutex // serializes Generate and Tasks
	req     sync.Mutex // serializes Tasks, TasksFor and Compound (a steer is one request's)
	mods    []*modState
	workers []*worker
	pool    []synth.TaskRecord // valid tasks not yet handed out

	qmu    sync.Mutex
	qcond  *sync.Cond // signalled when work becomes available or a job ends
	sched  schedule   // guarded by qmu
	active int        // jobs being done, which may make more work

	statsMu sync.Mutex
	fams    map[string]*validate.Counters
}

var _ synth.Source = (*Synthesizer)(nil)

type modState struct {
	mod   Module
	dedup *validate.Dedup
	stats ModuleStats // guarded by Synthesizer.statsMu
}

// job is a unit of work: preparing a package (mutants nil) or validating a
// chunk of its mutants.
type job struct {
	pj      *pkgJob
	mutants []validate.Mutant
	cj      *compoundJob // a compound job's; nil for the others
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
	s.sched.maxChunk = cfg.Validate.BatchSize
	if s.sched.maxChunk <= 0 {
		s.sched.maxChunk = 300
	}
	s.sched.combos = cfg.Combos
	for _, m := range mods {
		st := &modState{mod: m, dedup: validate.NewDedup(), stats: ModuleStats{Module: m.String()}}
		existing := 0
		for _, r := range cfg.Existing {
			switch {
			case r.Repo != m.Path:
			case r.Version == m.Version:
				existing++
				st.dedup.Seed(r)
			default:
				// Another version of the module: the instance id (repo
				// and diff hash) must still not repeat.
				st.dedup.Seed(synth.TaskRecord{Validation: r.Validation})
			}
		}
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
		var js []*pkgJob
		for _, rel := range pkgs {
			if len(cfg.Packages) > 0 && !slices.Contains(cfg.Packages, rel) {
				continue
			}
			h := fnv.New64a()
			fmt.Fprintf(h, "%s\x00%s", m.String(), rel)
			if existing > 0 {
				fmt.Fprintf(h, "\x00%d", existing)
			}
			est, err := validate.Candidates(m.Dir, rel)
			if err != nil {
				est = 1 // preparing it will say what is wrong
			}
			if cfg.MaxMutants > 0 {
				est = min(est, cfg.MaxMutants)
			}
			est = max(est, 1)
			js = append(js, &pkgJob{mod: st, rel: rel, rng: rand.New(rand.NewPCG(cfg.Seed, h.Sum64())), est: est})
			st.stats.Candidates += est
		}
		st.stats.Packages = len(js)
		s.sched.mods = append(s.sched.mods, js)
	}
	if len(s.mods) == 0 {
		return nil, errors.New("no module to synthesize from")
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
		ms.Skipped, ms.LeftOut = slices.Clone(ms.Skipped), slices.Clone(ms.LeftOut)
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
	s.req.Lock()
	defer s.req.Unlock()
	return s.draw(ctx, n, func(a, b *synth.TaskRecord) int {
		return cmp.Compare(math.Abs(a.Difficulty-difficulty), math.Abs(b.Difficulty-difficulty))
	})
}

// TasksFor returns n validated tasks whose bins (synth.BinOf) match k best:
// those matching every knob asked for first, then those matching most of
// them, in the order they were made. When the tasks it holds match fewer
// than n, it validates more, steered toward k (the modules and mutants
// that can make tasks of k's module, family, k and locality go first:
// steering.go), until n match or it has made steerLimit·n tasks more;
// the rank, known only after validation, is chosen among what was made.
func (s *Synthesizer) TasksFor(ctx context.Context, n int, k synth.Knobs) ([]env.Task, error) {
	s.req.Lock()
	defer s.req.Unlock()
	miss := func(r *synth.TaskRecord) int { return k.Misses(synth.BinOf(&r.Task)) }
	steer := k
	steer.Rank = ""
	s.setSteer(steer)
	defer s.setSteer(synth.Knobs{})
	matched := 0
	fresh, err := s.fill(ctx, 2*n, steerLimit*n, func(r *synth.TaskRecord) bool {
		if miss(r) == 0 {
			matched++
		}
		return matched >= n
	})
	return s.hand(n, fresh, err, func(a, b *synth.TaskRecord) int { return cmp.Compare(miss(a), miss(b)) }, nil)
}

// steerLimit bounds the tasks a steered request makes, per task asked for,
// in search of its bin.
const steerLimit = 4

// setSteer sets what the schedule is steered toward (empty: its own mix).
func (s *Synthesizer) setSteer(k synth.Knobs) {
	s.qmu.Lock()
	defer s.qmu.Unlock()
	s.sched.steer = k
}

// draw validates until the pool holds twice n unused tasks (or the sources
// run out), then hands out the n first by order (a stable sort, so that
// ties keep the order they were made in) and keeps the rest for later
// calls.
func (s *Synthesizer) draw(ctx context.Context, n int, order func(a, b *synth.TaskRecord) int) ([]env.Task, error) {
	fresh, err := s.fill(ctx, 2*n, 0, nil)
	return s.hand(n, fresh, err, order, nil)
}

// fill takes the pool and validates more, until the pool would hold at
// least min tasks and (when enough is set) enough says so of a task made
// or taken, or limit (> 0) tasks more were made, or the sources run out,
// or ctx ends. It returns the pool's tasks and the new ones, in order;
// ErrExhausted when the sources ran out first.
func (s *Synthesizer) fill(ctx context.Context, min, limit int, enough func(*synth.TaskRecord) bool) ([]synth.TaskRecord, error) {
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var fresh []synth.TaskRecord
	pooled := s.pooled()
	done := enough == nil
	if done && pooled >= min {
		return nil, nil
	}
	err := s.Generate(cctx, 0, func(r synth.TaskRecord) error {
		fresh = append(fresh, r)
		if !done {
			done = enough(&r)
		}
		made := len(fresh) - pooled
		if done && len(fresh) >= min || limit > 0 && made >= limit {
			cancel()
		}
		return nil
	})
	if ctx.Err() == nil && errors.Is(err, context.Canceled) {
		err = nil
	}
	return fresh, err
}

// hand puts fresh into the pool and hands out, of those take accepts
// (nil: all), the n first by order (nil: in the pool's order; a stable
// sort, so that ties keep the order they were made in); an error wrapping
// ErrExhausted with fewer.
func (s *Synthesizer) hand(n int, fresh []synth.TaskRecord, err error, order func(a, b *synth.TaskRecord) int, take func(*synth.TaskRecord) bool) ([]env.Task, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pool = append(s.pool, fresh...)
	if err != nil && !errors.Is(err, ErrExhausted) {
		return nil, err
	}
	if order != nil {
		slices.SortStableFunc(s.pool, func(a, b synth.TaskRecord) int { return order(&a, &b) })
	}
	out := make([]env.Task, 0, n)
	s.pool = slices.DeleteFunc(s.pool, func(r synth.TaskRecord) bool {
		if len(out) < n && (take == nil || take(&r)) {
			out = append(out, r.Task)
			return true
		}
		return false
	})
	if len(out) < n {
		return out, fmt.Errorf("%d of %d tasks: %w", len(out), n, ErrExhausted)
	}
	return out, nil
}

// Compound returns up to n tasks made of base (a task of this
// synthesizer's modules) and one more mutation in the same package (in
// the same function first), each validated by the package's tests: base
// made harder by one bug. It validates compoundTries of them at most, so
// it may return fewer than n, or none (with no error) when none was
// valid; base's package is prepared first if it was not. A base whose
// module or package is not this synthesizer's is an error.
func (s *Synthesizer) Compound(ctx context.Context, n int, base env.Task) ([]env.Task, error) {
	pj := s.pkgOf(&base)
	if pj == nil {
		return nil, fmt.Errorf("compound of %s: package %s of module %s@%s is not one of the synthesizer's", base.ID, base.Package, base.Repo, base.Version)
	}
	if n <= 0 || len(base.Mutations) == 0 {
		return nil, nil
	}
	s.req.Lock()
	defer s.req.Unlock()
	isCompound := func(r *synth.TaskRecord) bool { return synth.CompoundOf(&r.Task, &base) }
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	j := &job{pj: pj, cj: &compoundJob{base: base.Mutations, done: sync.OnceFunc(cancel)}}
	s.qmu.Lock()
	s.sched.compounds = append(s.sched.compounds, j)
	s.qcond.Broadcast()
	s.qmu.Unlock()
	defer func() { // not handed out (cancelled first): not left for later
		s.qmu.Lock()
		s.sched.compounds = slices.DeleteFunc(s.sched.compounds, func(c *job) bool { return c == j })
		s.qmu.Unlock()
	}()
	got := 0
	fresh, err := s.fill(cctx, 0, 0, func(r *synth.TaskRecord) bool {
		if isCompound(r) {
			got++
		}
		return got >= n
	})
	if ctx.Err() == nil && errors.Is(err, context.Canceled) {
		err = nil // the compound job ended
	}
	// The compounds go out; the rest stay in the pool. Fewer than n is
	// no error: few of a base's compounds may hold.
	out, err := s.hand(n, fresh, err, nil, isCompound)
	if errors.Is(err, ErrExhausted) {
		err = nil
	}
	return out, err
}

// pkgOf returns the package job of task t, or nil when t's module or
// package is not one of s's.
func (s *Synthesizer) pkgOf(t *env.Task) *pkgJob {
	for _, pkgs := range s.sched.mods { // fixed after New
		for _, pj := range pkgs {
			m := pj.mod.mod
			if m.Path == t.Repo && (t.Version == "" || m.Version == t.Version) && path.Join(m.Path, strings.TrimPrefix(pj.rel, "./")) == t.Package {
				return pj
			}
		}
	}
	return nil
}

var (
	_ synth.Steerable  = (*Synthesizer)(nil)
	_ synth.Compounder = (*Synthesizer)(nil)
)

func (s *Synthesizer) pooled() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pool)
}

// take returns the next job, waiting while no work is available but jobs
// being done may make more; nil when all is done or ctx has ended.
func (s *Synthesizer) take(ctx context.Context) *job {
	s.qmu.Lock()
	defer s.qmu.Unlock()
	for ctx.Err() == nil {
		if j := s.sched.next(); j != nil {
			s.active++
			return j
		}
		if s.active == 0 {
			return nil
		}
		s.qcond.Wait()
	}
	return nil
}

// ended records the end of a job taken: update changes the schedule (with
// the queue lock held).
func (s *Synthesizer) ended(update func(*schedule)) {
	s.qmu.Lock()
	defer s.qmu.Unlock()
	s.active--
	update(&s.sched)
	s.qcond.Broadcast()
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
		var err error
		if j.mutants == nil {
			err = s.prepare(ctx, w, j.pj)
		} else {
			err = s.validate(ctx, w, j, recs)
		}
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

// prepare prepares package pj and hands its single mutants, shuffled and
// sampled, to the schedule. A package that cannot be prepared is skipped
// and reported; a fault of the sandbox, or ctx's end, puts it back.
func (s *Synthesizer) prepare(ctx context.Context, w *worker, pj *pkgJob) error {
	m := pj.mod
	v, err := s.validator(ctx, w, m)
	if err != nil {
		s.ended(func(sc *schedule) { sc.unprepare(pj) })
		return err
	}
	p, err := v.Prepare(ctx, pj.rel)
	switch {
	case ctx.Err() != nil || err != nil && errors.Is(err, env.ErrInfra):
		s.ended(func(sc *schedule) { sc.unprepare(pj) })
		return errOr(ctx.Err(), err)
	case err != nil:
		s.statsMu.Lock()
		m.stats.Skipped = append(m.stats.Skipped, fmt.Sprintf("%s: %v", pj.rel, firstLine([]byte(err.Error()))))
		s.statsMu.Unlock()
		s.log.Warn().Err(err).Str("module", m.mod.String()).Str("pkg", pj.rel).Msg("package skipped")
		s.ended(func(sc *schedule) { sc.skip(pj) })
		return nil
	}
	muts := v.Mutants(p)
	s.ended(func(sc *schedule) {
		pj.rng.Shuffle(len(muts), func(a, b int) { muts[a], muts[b] = muts[b], muts[a] })
		if s.cfg.MaxMutants > 0 && len(muts) > s.cfg.MaxMutants {
			muts = muts[:s.cfg.MaxMutants]
		}
		sc.prepared(pj, p, muts)
	})
	s.statsMu.Lock()
	m.stats.Prepared++
	m.stats.Flaky += len(p.Flaky)
	m.stats.Slow += len(p.Slow)
	m.stats.Failing += len(p.Failing)
	for _, l := range []struct {
		what  string
		tests []string
	}{{"failing at baseline", p.Failing}, {"flaky", p.Flaky}, {"slow", p.Slow}} {
		if len(l.tests) > 0 {
			m.stats.LeftOut = append(m.stats.LeftOut, fmt.Sprintf("%s: %d %s: %s", pj.rel, len(l.tests), l.what, names(l.tests, 5)))
		}
	}
	s.statsMu.Unlock()
	s.log.Debug().Str("module", m.mod.String()).Str("pkg", pj.rel).Int("mutants", len(muts)).Msg("package ready")
	return nil
}

// names lists up to n of tests, and how many more there are.
func names(tests []string, n int) string {
	if len(tests) <= n {
		return strings.Join(tests, " ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(tests[:n], " "), len(tests)-n)
}

// validate validates the chunk of mutants j holds, sending the valid ones
// to recs as they come, and gives the schedule back the mutants it did not
// get to (on a fault or ctx's end) and those the tests caught.
func (s *Synthesizer) validate(ctx context.Context, w *worker, j *job, recs chan<- synth.TaskRecord) error {
	pj := j.pj
	m := pj.mod
	muts := j.mutants
	tried := make([]bool, len(muts))
	var caught []validate.Mutant
	defer func() {
		if j.cj != nil {
			s.ended(func(*schedule) {})
			j.cj.done()
			return
		}
		var left []validate.Mutant
		for i, t := range tried {
			if !t {
				left = append(left, muts[i])
			}
		}
		s.ended(func(sc *schedule) { sc.chunkDone(pj, left, caught) })
	}()
	v, err := s.validator(ctx, w, m)
	if err != nil {
		return err
	}
	s.qmu.Lock()
	p := pj.pkg // set while chunks are out
	s.qmu.Unlock()
	return v.Batch(ctx, p, muts, func(i int, res validate.Result) {
		tried[i] = true
		s.count(m, muts[i], res.Outcome)
		if s.cfg.Observe != nil {
			s.cfg.Observe(muts[i], res)
		}
		if len(res.FailToPass) > 0 && len(muts[i].Mutations) == 1 {
			caught = append(caught, muts[i])
		}
		if res.Outcome == validate.Valid {
			recs <- s.record(m, p, muts[i], res)
		}
	})
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
// Mutations whose edits overlap are not combined, and none is drawn that
// seen (by the mutations' patches) holds; those drawn are added to it.
func combos(rng *rand.Rand, caught []validate.Mutant, n int, seen map[string]bool) []validate.Mutant {
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
