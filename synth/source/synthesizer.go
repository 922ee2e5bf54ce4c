package source

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
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
	// Validate configures each module's validator.
	Validate validate.Config
	// Seed orders the mutants of each package (they are tried shuffled, so
	// that neighbouring mutants of one function do not come in a row).
	Seed uint64
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
	// run.
	Flaky int `json:"flaky"`
	validate.Counters
}

// Stats is the yield so far, per operator family and per module.
type Stats struct {
	Families map[string]validate.Counters `json:"families"`
	Modules  []ModuleStats                `json:"modules"`
	Total    validate.Counters            `json:"total"`
}

// Synthesizer makes validated bug-fix tasks from the packages of its
// modules. It tries the modules in turn, one mutant each; a package is
// prepared (baseline runs, coverage map) the first time one of its mutants
// is tried, and its mutants enumerated once. Its methods may be called
// from several goroutines; they are serialized.
type Synthesizer struct {
	log zerolog.Logger
	rng *rand.Rand

	mu   sync.Mutex // serializes Next, Tasks and Generate
	mods []*modState
	turn int
	pool []synth.TaskRecord // valid tasks not yet handed out by Tasks

	statsMu sync.Mutex
	fams    map[string]*validate.Counters
}

var _ synth.Source = (*Synthesizer)(nil)

type modState struct {
	mod  Module
	v    *validate.Validator
	pkgs []string // packages not yet started

	pkg     *validate.Package
	mutants []validate.Mutant // of pkg, not yet tried
	done    bool

	stats ModuleStats // guarded by Synthesizer.statsMu
}

// New returns a Synthesizer over mods. A module whose packages cannot be
// listed is logged and skipped; it is an error only when none is left.
func New(mods []Module, cfg Config, log zerolog.Logger) (*Synthesizer, error) {
	s := &Synthesizer{
		log:  log.With().Str("component", "synth").Logger(),
		rng:  rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		fams: map[string]*validate.Counters{},
	}
	for _, m := range mods {
		st := &modState{mod: m, stats: ModuleStats{Module: m.String()}}
		s.mods = append(s.mods, st)
		pkgs, err := Packages(m)
		if err == nil && len(pkgs) == 0 {
			err = fmt.Errorf("module %s has no package with tests", m)
		}
		if err == nil {
			st.v, err = validate.New(m.Dir, cfg.Validate, log)
		}
		if err != nil {
			st.done = true
			st.stats.Skipped = append(st.stats.Skipped, err.Error())
			s.log.Warn().Err(err).Str("module", m.String()).Msg("module skipped")
			continue
		}
		st.pkgs = pkgs
		st.stats.Packages = len(pkgs)
	}
	if len(s.mods) == 0 {
		return nil, errors.New("no module to synthesize from")
	}
	return s, nil
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
		addCounters(&st.Total, m.stats.Counters)
	}
	return st
}

func addCounters(a *validate.Counters, b validate.Counters) {
	a.Tried += b.Tried
	a.NonViable += b.NonViable
	a.Equivalent += b.Equivalent
	a.TimedOut += b.TimedOut
	a.Duplicate += b.Duplicate
	a.Valid += b.Valid
}

// Generate validates mutants until n are valid (n ≤ 0: until the sources
// run out), calling emit with each valid task as soon as it is validated,
// from the calling goroutine. It returns ErrExhausted when the sources ran
// out first, ctx's error when cancelled, and emit's error if emit fails.
func (s *Synthesizer) Generate(ctx context.Context, n int, emit func(synth.TaskRecord) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for got := 0; n <= 0 || got < n; {
		rec, ok, err := s.next(ctx)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		if err := emit(rec); err != nil {
			return err
		}
		got++
	}
	return nil
}

// Tasks returns n validated tasks whose difficulty estimates lie nearest
// difficulty. It validates until it holds twice n unused tasks (or the
// sources run out) and keeps those it does not return for later calls.
// With fewer than n it returns what it has and an error wrapping
// ErrExhausted; on cancellation, ctx's error.
func (s *Synthesizer) Tasks(ctx context.Context, n int, difficulty float64) ([]env.Task, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var err error
	for len(s.pool) < 2*n {
		rec, ok, nerr := s.next(ctx)
		if nerr != nil {
			err = nerr
			break
		}
		if ok {
			s.pool = append(s.pool, rec)
		}
	}
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

// next validates one mutant, taking the modules in turn. ok reports a
// valid task.
func (s *Synthesizer) next(ctx context.Context) (synth.TaskRecord, bool, error) {
	for range len(s.mods) {
		m := s.mods[s.turn%len(s.mods)]
		s.turn++
		if m.done {
			continue
		}
		if err := s.fill(ctx, m); err != nil {
			return synth.TaskRecord{}, false, err
		}
		if m.done {
			continue
		}
		mut := m.mutants[0]
		m.mutants = m.mutants[1:]
		res, err := m.v.Validate(ctx, m.pkg, mut)
		if err != nil {
			return synth.TaskRecord{}, false, fmt.Errorf("validate mutant of %s in %s: %w", mut.File, m.mod, err)
		}
		family := "unknown"
		if len(mut.Mutations) > 0 {
			family = mut.Mutations[0].Family
		}
		s.statsMu.Lock()
		m.stats.Add(res.Outcome)
		c := s.fams[family]
		if c == nil {
			c = new(validate.Counters)
			s.fams[family] = c
		}
		c.Add(res.Outcome)
		s.statsMu.Unlock()
		if res.Outcome != validate.Valid {
			return synth.TaskRecord{}, false, nil
		}
		rec := validate.Record(m.mod.Path, m.pkg, mut, res)
		rec.Version = m.mod.Version
		rec.Difficulty = Difficulty(rec.Family, rec.Features)
		return rec, true, nil
	}
	return synth.TaskRecord{}, false, ErrExhausted
}

// fill makes sure m has a prepared package with mutants left, or marks it
// done. Packages that do not build or have no stable tests are recorded as
// skipped.
func (s *Synthesizer) fill(ctx context.Context, m *modState) error {
	for len(m.mutants) == 0 {
		if len(m.pkgs) == 0 {
			m.done = true
			return nil
		}
		rel := m.pkgs[0]
		m.pkgs = m.pkgs[1:]
		p, err := m.v.Prepare(ctx, rel)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var muts []validate.Mutant
		if err == nil {
			muts, err = m.v.Mutants(rel)
		}
		s.statsMu.Lock()
		if err != nil {
			m.stats.Skipped = append(m.stats.Skipped, fmt.Sprintf("%s: %v", rel, firstLine([]byte(err.Error()))))
		} else {
			m.stats.Prepared++
			m.stats.Flaky += len(p.Flaky)
		}
		s.statsMu.Unlock()
		if err != nil {
			s.log.Warn().Err(err).Str("module", m.mod.String()).Str("pkg", rel).Msg("package skipped")
			continue
		}
		s.rng.Shuffle(len(muts), func(i, j int) { muts[i], muts[j] = muts[j], muts[i] })
		m.pkg, m.mutants = p, muts
		s.log.Debug().Str("module", m.mod.String()).Str("pkg", rel).Int("mutants", len(muts)).Msg("package ready")
	}
	return nil
}
