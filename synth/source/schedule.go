package source

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/frognano/frog/synth"
	"github.com/frognano/frog/synth/validate"
)

// The schedule: what the Synthesizer's workers do next. It is plain data
// and synchronous code, with no lock or goroutine of its own (the
// Synthesizer holds its queue lock around every call), so that the order
// of work depends only on what has been handed out, not on timing.
//
// Every module gets a first chunk before any gets a second. After that,
// modules get work in proportion to what they can yield: the next chunk
// goes to the module that will have had the fewest mutants handed out,
// for the mutants it is expected to offer (its packages' candidate
// mutants, at most MaxMutants each, and its combined mutants once they
// are drawn), halfway through the chunk: weighted fair queueing at the
// chunk's midpoint, so that a module is as often a little ahead of its
// share as a little behind. Within a module the same rule picks the
// package, a prepared one before one not yet prepared at a tie, so that a
// module's packages are prepared one turn at a time, each followed by its
// first chunk. Chunks grow with the work done (chunkSize): the first are
// small, so that the first tasks come from many modules; later ones are
// big, so that one schema build serves hundreds of mutants.
//
// Steering (TasksFor) bends these rules toward a bin: while steer is set,
// the packages that can offer its knobs (its module's; a package not yet
// prepared, or one whose mutants to hand out include some of its family,
// k and locality, or whose caught mutants can be combined into them) are
// picked by the same fair rule among themselves, before any other; and a
// chunk takes the matching mutants first. A bin no package offers falls
// back to its module alone, then to the whole mix. Compound jobs (a task
// made harder by one more mutation) go before everything else.

const (
	// minChunk is the smallest chunk of mutants handed out (but for a
	// package's last few).
	minChunk = 32
	// chunkShare: a chunk is at most 1/chunkShare of the mutants handed
	// out so far (and at least minChunk).
	chunkShare = 16
)

type pkgState int

const (
	unprepared pkgState = iota
	preparing
	ready // prepared: its mutants are being handed out
	done
)

// pkgJob is one package of one module and where its work stands. mod and
// rel are fixed; the rest is guarded by the Synthesizer's queue lock.
type pkgJob struct {
	mod *modState
	rel string

	rng     *rand.Rand // shuffles the single mutants, draws the combined ones
	state   pkgState
	est     int               // mutants it is expected to hand out in all
	handed  int               // mutants handed out so far (less any given back)
	pkg     *validate.Package // while ready
	todo    []validate.Mutant // of the current stage, not handed out yet
	pending int               // chunks of the current stage being validated
	caught  []validate.Mutant // single mutants the tests caught (kept: compound tasks draw from them)
	combos  bool              // the combined stage has been drawn
	// drawn are the combined mutants drawn so far, by their patches, so
	// that steering's early combinations are not drawn again in the
	// combined stage.
	drawn map[string]bool
}

func (pj *pkgJob) available() bool {
	return pj.state == unprepared || pj.state == ready && len(pj.todo) > 0
}

// behind reports whether a has had fewer mutants handed out than b for
// what each is expected to offer (handed/est, compared exactly).
func behind(aHanded, aEst, bHanded, bEst int) bool {
	return int64(aHanded)*int64(max(bEst, 1)) < int64(bHanded)*int64(max(aEst, 1))
}

// schedule is the state the next job is chosen from.
type schedule struct {
	mods     [][]*pkgJob // per module, its packages in order
	handed   int         // mutants handed out, all modules
	maxChunk int         // the most mutants in one chunk
	combos   float64     // combined mutants per caught single mutant; <= 0: none
	// steer is the bin asked for now (its rank left out: a rank is known
	// only once the tests have run); empty: the synthesizer's own mix.
	steer synth.Knobs
	// compounds are the compound jobs waiting, first come first served.
	compounds []*job
}

// pick returns the package the next job is for, or nil when no package
// has work available now: with a steer, among the packages that offer it
// first, then among its module's (steering.go).
func (sc *schedule) pick() *pkgJob {
	if sc.steer == (synth.Knobs{}) {
		return sc.pickAmong(nil)
	}
	if pj := sc.pickAmong(sc.offers); pj != nil {
		return pj
	}
	if sc.steer.Module != "" {
		if pj := sc.pickAmong(sc.ofModule); pj != nil {
			return pj
		}
	}
	return sc.pickAmong(nil)
}

// pickAmong returns the package the next job is for among those ok allows
// (all when nil), or nil when none has work available now. A module (or
// package) that has had no mutant yet goes first; the others are compared
// by where each would stand halfway through the job (its mutants handed
// out plus half the chunk, for what it offers), so that one whose next
// chunk is big for its size waits its turn and every module stays within
// about one chunk of its share, ahead or behind.
func (sc *schedule) pickAmong(ok func(*pkgJob) bool) *pkgJob {
	var best *pkgJob
	var bestAfter, bestEst int
	for _, pkgs := range sc.mods {
		var cand *pkgJob
		var candAfter int
		handed, est := 0, 0
		for _, pj := range pkgs {
			handed += pj.handed
			est += pj.est
			if !pj.available() || ok != nil && !ok(pj) {
				continue
			}
			after := sc.after(pj.handed, pj)
			if cand == nil || behind(after, pj.est, candAfter, cand.est) ||
				!behind(candAfter, cand.est, after, pj.est) && pj.state == ready && cand.state != ready {
				cand, candAfter = pj, after
			}
		}
		if cand == nil {
			continue
		}
		after := sc.after(handed, cand)
		if best == nil || behind(after, est, bestAfter, bestEst) {
			best, bestAfter, bestEst = cand, after, est
		}
	}
	return best
}

// after is handed, the mutants a module or package has had, plus half of
// those the next job for pj hands out (for a package to prepare, of the
// chunk that will follow); 0 while it has had none.
func (sc *schedule) after(handed int, pj *pkgJob) int {
	if handed == 0 {
		return 0
	}
	if pj.state != ready {
		return handed + sc.chunkSize(pj.est)/2
	}
	return handed + sc.chunkSize(len(pj.todo))/2
}

// next returns the next job, or nil when no work is available now: a
// package to prepare, or a chunk of a prepared package's mutants, counted
// as handed out.
func (sc *schedule) next() *job {
	if j := sc.nextCompound(); j != nil {
		return j
	}
	pj := sc.pick()
	switch {
	case pj == nil:
		return nil
	case pj.state == unprepared:
		pj.state = preparing
		return &job{pj: pj}
	}
	sc.steerTodo(pj)
	n := sc.chunkSize(len(pj.todo))
	chunk := pj.todo[:n:n]
	pj.todo = pj.todo[n:]
	pj.pending++
	pj.handed += n
	sc.handed += n
	return &job{pj: pj, mutants: chunk}
}

// chunkSize is how many of todo mutants of a package the next chunk takes:
// 1/chunkShare of the mutants handed out so far, within [minChunk,
// maxChunk], and the rest of the package's when few would be left and
// they fit.
func (sc *schedule) chunkSize(todo int) int {
	n := min(max(sc.handed/chunkShare, minChunk), sc.maxChunk)
	if todo-n < minChunk/2 && todo <= sc.maxChunk {
		n = todo
	}
	return min(n, todo)
}

// prepared records that pj is prepared as p with single mutants muts
// (shuffled and capped). Until the combined mutants are drawn, a package
// is expected to offer combos/2 of them per single mutant (about half are
// caught).
func (sc *schedule) prepared(pj *pkgJob, p *validate.Package, muts []validate.Mutant) {
	pj.state, pj.pkg, pj.todo = ready, p, muts
	pj.est = len(muts) + int(math.Round(max(sc.combos, 0)*float64(len(muts))/2))
	if len(muts) == 0 {
		sc.finish(pj)
	}
}

// unprepare puts pj back to be prepared again (its preparation was
// interrupted).
func (sc *schedule) unprepare(pj *pkgJob) { pj.state = unprepared }

// skip records that pj cannot be used: it offers nothing.
func (sc *schedule) skip(pj *pkgJob) {
	pj.state, pj.est = done, 0
}

// chunkDone records the end of a chunk of pj: left are the mutants it did
// not get to (put back first in line, no longer counted as handed out),
// caught the single mutants its tests caught. The last chunk of the single
// mutants draws the combined ones; the last of those finishes pj.
func (sc *schedule) chunkDone(pj *pkgJob, left, caught []validate.Mutant) {
	pj.pending--
	pj.todo = append(slices.Clip(left), pj.todo...)
	pj.handed -= len(left)
	sc.handed -= len(left)
	pj.caught = append(pj.caught, caught...)
	if pj.pending > 0 || len(pj.todo) > 0 {
		return
	}
	if !pj.combos && sc.combos > 0 {
		pj.combos = true
		// The order chunks finished in is timing: draw from the caught
		// mutants in an order of their own.
		slices.SortFunc(pj.caught, byPatch)
		n := int(math.Round(sc.combos * float64(len(pj.caught))))
		pj.todo = combos(pj.rng, pj.caught, n, pj.seen())
		pj.est = pj.handed + len(pj.todo)
		if len(pj.todo) > 0 {
			return
		}
	}
	sc.finish(pj)
}

// finish marks pj done and lets go of what it held but what compound
// tasks need (the prepared package and the mutants its tests caught).
func (sc *schedule) finish(pj *pkgJob) {
	pj.state, pj.est = done, pj.handed
	pj.todo, pj.drawn = nil, nil
}

// byPatch orders mutants by their patches: an order of their own, not the
// order chunks happened to finish in.
func byPatch(a, b validate.Mutant) int { return strings.Compare(a.Patch, b.Patch) }

// seen is pj's record of the combined mutants drawn, made on first use.
func (pj *pkgJob) seen() map[string]bool {
	if pj.drawn == nil {
		pj.drawn = map[string]bool{}
	}
	return pj.drawn
}
