package curriculum

import (
	"fmt"
	"math"
	"sort"

	"gonum.org/v1/gonum/stat/distuv"
)

// Learnability is the expected learnability E[p(1−p)] of a pass rate p
// distributed Beta(a, b): ab / ((a+b)(a+b+1)). It is 1/6 for Beta(1, 1)
// (nothing known), tends to 1/4 as the evidence piles up at p = 1/2, and to
// 0 as it piles up near 0 or 1.
func Learnability(a, b float64) float64 {
	n := a + b
	return a * b / (n * (n + 1))
}

// EstimateConfig shapes an Estimate.
type EstimateConfig struct {
	// Discount multiplies all evidence at each policy update, so that what
	// an older policy did fades: after u updates an outcome weighs
	// Discount^u. In (0, 1].
	Discount float64 `json:"discount"`
	// PriorStrength is the most pseudo-outcomes a bin's pooled pass rate
	// lends the prior of each of its tasks.
	PriorStrength float64 `json:"prior_strength"`
	// Lo, Hi and Confidence decide retirement: a task is confidently
	// outside (Lo, Hi) when its posterior puts more than Confidence of its
	// mass below Lo, or above Hi.
	Lo         float64 `json:"lo"`
	Hi         float64 `json:"hi"`
	Confidence float64 `json:"confidence"`
}

// DefaultEstimateConfig is what `frog train` and `frog sim` use.
func DefaultEstimateConfig() EstimateConfig {
	return EstimateConfig{Discount: 0.995, PriorStrength: 4, Lo: 0.05, Hi: 0.95, Confidence: 0.95}
}

func (c EstimateConfig) validate() error {
	switch {
	case !(c.Discount > 0 && c.Discount <= 1):
		return fmt.Errorf("curriculum discount %v: want a number in (0, 1]", c.Discount)
	case !(c.PriorStrength >= 0) || math.IsInf(c.PriorStrength, 0):
		return fmt.Errorf("curriculum prior strength %v: want >= 0", c.PriorStrength)
	case !(c.Lo >= 0 && c.Lo < c.Hi && c.Hi <= 1):
		return fmt.Errorf("retirement band (%v, %v): want 0 <= lo < hi <= 1", c.Lo, c.Hi)
	case !(c.Confidence > 0 && c.Confidence < 1):
		return fmt.Errorf("retirement confidence %v: want a number in (0, 1)", c.Confidence)
	}
	return nil
}

// evidence is a discounted tally of outcomes; pred is the discounted sum of
// what the predictor said of them (bins only).
type evidence struct {
	pass, fail, pred float64
	// prior is the bin's prior as of view number priorView (bins only):
	// a view computes it once, not once a task.
	prior     binPrior
	priorView uint64
}

func (e *evidence) add(reward float64) {
	if reward > 0 {
		e.pass++
	} else {
		e.fail++
	}
}

func (e *evidence) scale(f float64) { e.pass *= f; e.fail *= f; e.pred *= f }

// Estimate is the curriculum's belief about each task's pass rate under the
// current policy: per task a Beta posterior keyed by task id, whose prior is
// pooled over the task's difficulty bin, with all evidence discounted at
// each policy update. It is plain synchronous code; one goroutine uses it.
//
// A bin's pooled pass rate is m = (1 + S)/(2 + S + F), S and F the bin's
// discounted passes and failures in its tasks' first groups; it lends each of its tasks the prior
// Beta(c·m, c·(1−m)) with c = min(2 + S + F, PriorStrength) (Beta(1, 1) for
// a bin never seen when PriorStrength is 2). A task with discounted passes s
// and failures f has the posterior Beta(c·m + s, c·(1−m) + f).
//
// With a Predictor (a model of the pass rate from the task's difficulty
// estimate and the policy's ability, as the target curriculum has), the
// prior's mean is the prediction corrected by how the bin's tasks did
// against their predictions: logit m' = logit p̂ + logit m − logit p̄, p̄ =
// (1 + P)/(2 + S + F) with P the discounted sum of the predictions at the
// bin's first-group outcomes. A task's prior then follows the policy as it
// learns (its own evidence, being older, lags), while a bin whose tasks fail
// whatever their estimates say (a deleted statement no template restores)
// drags its tasks' priors down.
type Estimate struct {
	cfg   EstimateConfig
	tasks map[string]*taskBelief
	bins  map[string]*evidence
	// views counts the views made (view); changes the calls that changed
	// evidence (Observe, Discount), so that a posterior computed at one
	// count holds until the next.
	views, changes uint64
	// Predictor, when set, predicts task id's pass rate now (ok false: no
	// prediction). Called from the estimate's goroutine.
	Predictor func(id string) (p float64, ok bool)
}

type taskBelief struct {
	bin   string
	ev    evidence
	tries int64
}

// NewEstimate returns an empty estimate.
func NewEstimate(cfg EstimateConfig) (*Estimate, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Estimate{cfg: cfg, tasks: make(map[string]*taskBelief), bins: make(map[string]*evidence)}, nil
}

// Observe records one outcome of task id, in bin. first says the outcome is
// of the task's first group: only those pool into the bin, because they are
// a fair draw of what the bin's fresh tasks do, where replays are chosen
// for their scores (a bin whose fresh tasks mostly fail would look
// learnable by the replays of its few learnable tasks).
func (e *Estimate) Observe(id, bin string, reward float64, first bool) {
	e.changes++
	t := e.tasks[id]
	if t == nil {
		t = &taskBelief{bin: bin}
		e.tasks[id] = t
	}
	t.ev.add(reward)
	t.tries++
	if !first {
		return
	}
	b := e.bins[bin]
	if b == nil {
		b = new(evidence)
		e.bins[bin] = b
	}
	if e.Predictor != nil {
		p, ok := e.Predictor(id)
		if !ok {
			p = (1 + b.pass) / (2 + b.pass + b.fail) // neutral: the bin's own rate
		}
		b.pred += p
	}
	b.add(reward)
}

// Discount fades all evidence by Discount^updates: updates policy updates
// happened since the last call (a fraction for updates smaller than the
// reference, see ReplayConfig.UpdateGroups).
func (e *Estimate) Discount(updates float64) {
	if !(updates > 0) || e.cfg.Discount == 1 {
		return
	}
	e.changes++
	f := math.Pow(e.cfg.Discount, updates)
	for _, t := range e.tasks {
		t.ev.scale(f)
	}
	for _, b := range e.bins {
		b.scale(f)
	}
}

// Forget drops what is known of task id (its bin keeps what it pooled).
func (e *Estimate) Forget(id string) { delete(e.tasks, id) }

// Tasks is the number of tasks the estimate holds evidence of.
func (e *Estimate) Tasks() int { return len(e.tasks) }

// Prior is the pooled prior Beta(a, b) of a task in bin that has not been
// tried.
func (e *Estimate) Prior(bin string) (a, b float64) {
	bp := e.binPrior(bin)
	return bp.a, bp.b
}

// taskPrior is task id's prior: its bin's, its mean corrected by the
// Predictor's prediction when there is one.
func (e *Estimate) taskPrior(id, bin string) (a, b float64) {
	bp := e.binPrior(bin)
	if e.Predictor == nil || bp.a+bp.b == 0 {
		return bp.a, bp.b
	}
	p, ok := e.Predictor(id)
	return bp.with(p, ok)
}

// binPrior is what a bin lends each of its tasks: the prior Beta(a, b) and
// the logits of its pooled mean (lm) and of its mean prediction (lpbar)
// that correct a task's prediction.
type binPrior struct{ a, b, lm, lpbar float64 }

func (e *Estimate) binPrior(bin string) binPrior { return e.priorOf(e.bins[bin]) }

// priorOf is the prior of a bin whose evidence is ev (nil: none yet).
func (e *Estimate) priorOf(ev *evidence) binPrior {
	var s, f, pr float64
	if ev != nil {
		s, f, pr = ev.pass, ev.fail, ev.pred
	}
	m := (1 + s) / (2 + s + f)
	c := math.Min(2+s+f, e.cfg.PriorStrength)
	pbar := (1 + pr) / (2 + s + f)
	return binPrior{a: c * m, b: c * (1 - m), lm: logit(clampP(m)), lpbar: logit(clampP(pbar))}
}

// with is the prior of a task of the bin whose pass rate is predicted to
// be p (ok false: no prediction, the bin's prior).
func (bp binPrior) with(p float64, ok bool) (a, b float64) {
	if !ok {
		return bp.a, bp.b
	}
	return bp.withLogit(logit(clampP(p)))
}

// withLogit is with for a prediction given as its logit x: the replay
// curricula predict by a logistic model, and taking the logit of its
// sigmoid again would cost an exponential and a logarithm a task scored.
func (bp binPrior) withLogit(x float64) (a, b float64) {
	if bp.a+bp.b == 0 {
		return bp.a, bp.b
	}
	c := bp.a + bp.b
	mm := sigmoid(min(maxLogit, max(-maxLogit, x)) + bp.lm - bp.lpbar)
	return c * mm, c * (1 - mm)
}

func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// clampP keeps a probability off 0 and 1, where its logit is infinite.
func clampP(p float64) float64 { return math.Min(1-1e-6, math.Max(1e-6, p)) }

// maxLogit is the logit of clampP's largest probability: clampP in logit
// terms keeps a logit within ±maxLogit.
var maxLogit = logit(1 - 1e-6)

// Posterior is the Beta(a, b) posterior of task id's pass rate (its
// prior when it was never observed). A prior of strength 0 with no
// evidence is Beta(1, 1) rather than improper.
func (e *Estimate) Posterior(id, bin string) (a, b float64) {
	t := e.tasks[id]
	if t != nil {
		bin = t.bin
	}
	a, b = e.taskPrior(id, bin)
	return posterior(t, a, b)
}

// posterior adds task belief t's evidence (none when t is nil) to its
// prior Beta(a, b).
func posterior(t *taskBelief, a, b float64) (float64, float64) {
	if t != nil {
		a, b = a+t.ev.pass, b+t.ev.fail
	}
	if a+b == 0 {
		return 1, 1
	}
	const tiny = 1e-9 // a Beta needs both parameters > 0
	return math.Max(a, tiny), math.Max(b, tiny)
}

// A view scores many tasks against the estimate as it stands, each
// bin's prior computed once rather than once a task: the replay
// curricula score their whole buffer at each plan and eviction. It is
// valid until the estimate next changes (Observe, Discount, Forget).
type view struct {
	e *Estimate
	// n numbers the view: a bin's evidence keeps the prior that view n
	// computed (evidence.priorView).
	n uint64
}

func (e *Estimate) view() view {
	e.views++
	return view{e: e, n: e.views}
}

// posterior is Posterior(id, bin) with the Predictor's answer for id given
// as its logit x rather than asked for.
func (s view) posterior(id, bin string, x float64) (a, b float64) {
	t := s.e.tasks[id]
	if t != nil {
		bin = t.bin
	}
	return s.posteriorOf(t, s.e.bins[bin], x)
}

// posteriorOf is posterior for a task whose belief is t (nil: never
// observed) in a bin whose evidence is ev (nil: none yet), as the
// estimate holds them.
func (s view) posteriorOf(t *taskBelief, ev *evidence, x float64) (a, b float64) {
	var bp binPrior
	switch {
	case ev == nil:
		bp = s.e.priorOf(nil)
	case ev.priorView == s.n:
		bp = ev.prior
	default:
		bp = s.e.priorOf(ev)
		ev.prior, ev.priorView = bp, s.n
	}
	if s.e.Predictor == nil {
		a, b = bp.a, bp.b
	} else {
		a, b = bp.withLogit(x)
	}
	return posterior(t, a, b)
}

// Score is task id's expected learnability.
func (e *Estimate) Score(id, bin string) float64 { return Learnability(e.Posterior(id, bin)) }

// Mean is the posterior mean of task id's pass rate.
func (e *Estimate) Mean(id, bin string) float64 {
	a, b := e.Posterior(id, bin)
	return a / (a + b)
}

// Tries is how many outcomes of task id were observed (undiscounted).
func (e *Estimate) Tries(id string) int64 {
	if t := e.tasks[id]; t != nil {
		return t.tries
	}
	return 0
}

// Outside says whether task id's posterior is confidently outside
// (Lo, Hi): more than Confidence of its mass below Lo (hopeless) or above
// Hi (saturated). A task never observed is never outside.
func (e *Estimate) Outside(id string) (hopeless, saturated bool) {
	t := e.tasks[id]
	if t == nil {
		return false, false
	}
	return e.outside(e.Posterior(id, t.bin))
}

// outside is Outside for a task observed whose posterior is Beta(a, b).
func (e *Estimate) outside(a, b float64) (hopeless, saturated bool) {
	// Cantelli's inequality bounds each tail by σ²/(σ² + t²), t the
	// distance from the mean to Lo or Hi: where that bound is at most
	// Confidence the tail is too, and the Beta's CDF (the costly part, run
	// for every outcome) need not be computed. The answer is the same.
	mean := a / (a + b)
	v := a * b / ((a + b) * (a + b) * (a + b + 1))
	tailAtMost := func(t float64) bool { return t > 0 && v/(v+t*t) <= e.cfg.Confidence }
	d := distuv.Beta{Alpha: a, Beta: b}
	hopeless = !tailAtMost(mean-e.cfg.Lo) && d.CDF(e.cfg.Lo) > e.cfg.Confidence
	saturated = !tailAtMost(e.cfg.Hi-mean) && 1-d.CDF(e.cfg.Hi) > e.cfg.Confidence
	return hopeless, saturated
}

// BinScore is the expected learnability of a fresh task from bin: that of
// its pooled prior's mean with the bin's evidence, Beta(1 + S, 1 + F).
func (e *Estimate) BinScore(bin string) float64 {
	var s, f float64
	if ev := e.bins[bin]; ev != nil {
		s, f = ev.pass, ev.fail
	}
	return Learnability(1+s, 1+f)
}

// BinMean is bin's pooled pass rate (1 + S)/(2 + S + F).
func (e *Estimate) BinMean(bin string) float64 {
	var s, f float64
	if ev := e.bins[bin]; ev != nil {
		s, f = ev.pass, ev.fail
	}
	return (1 + s) / (2 + s + f)
}

// Bins lists the bins observed, sorted.
func (e *Estimate) Bins() []string {
	out := make([]string, 0, len(e.bins))
	for b := range e.bins {
		out = append(out, b)
	}
	sort.Strings(out)
	return out
}
