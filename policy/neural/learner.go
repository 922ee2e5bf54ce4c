package neural

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/frognano/frog/cuda"
	"github.com/frognano/frog/env"
	"github.com/frognano/frog/policy"
	"github.com/frognano/frog/policy/repair"
)

// Config tunes the GRPO learner.
type Config struct {
	Dims Dims `json:"dims"`
	// LR is Adam's learning rate; Clip GRPO's (PPO's) ratio clip ε;
	// Entropy the weight of the entropy bonus; MaxGradNorm the global norm
	// gradients are clipped to (0: no clipping); Epochs the passes over
	// each batch.
	LR float64 `json:"lr"`
	// WideLR is the learning rate of the network's wide (linear) part, the
	// part that carries across modules (0: LR). A run of a few dozen
	// updates moves a weight by about its rate per step, and the prior's
	// weights are of order 1: at LR the wide part cannot reorder what
	// fault localisation ranks within a run.
	WideLR      float64 `json:"wide_lr,omitempty"`
	Clip        float64 `json:"clip"`
	Entropy     float64 `json:"entropy"`
	MaxGradNorm float64 `json:"max_grad_norm"`
	Epochs      int     `json:"epochs"`
	// KeepZeroVariance keeps groups whose rewards are all equal in the loss
	// (their advantages are 0: they only add entropy and noise); by default
	// they are dropped, and counted either way.
	KeepZeroVariance bool `json:"keep_zero_variance"`
	// Credit is what each decision is advantaged by: CreditEpisode (its
	// trajectory's group-normalized return, GRPO's), or CreditTry (the
	// outcome of the try it chose, normalized over the group's decisions).
	Credit string `json:"credit,omitempty"`
	// Temperature is the policy's sampling temperature in training.
	Temperature float64 `json:"temperature"`
	// Prior starts the wide part at the fault-localisation prior (Prior);
	// otherwise at zero.
	Prior bool   `json:"prior"`
	Seed  uint64 `json:"seed"`
	// Protocol is the repair protocol of the policies it makes.
	Protocol repair.Config `json:"protocol"`
	// NoStop offers the network no option to stop: an episode ends when
	// it is solved, out of tries, steps or candidates. NoKeep leaves
	// partial fixes unapplied: an episode tries the candidates of its
	// first list only. Both are false in checkpoints that predate them,
	// whose policies stop and keep, as they were trained to.
	// DefaultConfig sets both; docs/training.md ("The list's lines,
	// stopping, keeping") says why.
	NoStop bool `json:"no_stop,omitempty"`
	NoKeep bool `json:"no_keep,omitempty"`
	// KL is the weight β of a penalty on the KL divergence from the
	// reference policy — the network the run started from, Init(Dims,
	// Seed, Prior) — as GRPO has it in DeepSeekMath: β·KL(π‖π_ref) per
	// decision, by the k3 estimator at the chosen option (π_ref/π − log
	// π_ref/π − 1, unbiased and never negative): it keeps a short run from
	// trading the prior, which carries across modules, for what only its
	// own tasks reward (docs/training.md, "The KL penalty to the start").
	// 0: no penalty (checkpoints written before it).
	KL float64 `json:"kl,omitempty"`
}

// Credit assignments (Config.Credit).
const (
	// CreditEpisode gives every decision of a trajectory the trajectory's
	// advantage: (return − the group's mean) / std.
	CreditEpisode = "episode"
	// CreditTry gives each decision the outcome of the try it chose — 1 when
	// every deciding test then passed, ½ when it fixed some and broke none,
	// else 0 (stopping included) — less the mean over the group's
	// decisions, over their std. The tests judge each try as it is made, so
	// a wrong try in a rollout that went on to a fix is not credited with
	// the fix: the signal of what to try first, without the noise of the
	// tries around it.
	CreditTry = "try"
)

// DefaultConfig is the learner `frog train` starts from: StartConfig of
// StartPrior.
func DefaultConfig() Config {
	return Config{Dims: DefaultDims, LR: 3e-3, WideLR: 3e-2, Clip: 0.2, Entropy: 0.01, MaxGradNorm: 1, Epochs: 2, Temperature: 1, Prior: true, Seed: 1,
		NoStop: true, NoKeep: true, KL: 0.1}
}

// Starts: where a run's network starts (Config.Prior).
const (
	// StartPrior starts the wide part at the fault-localisation prior
	// (Prior): the hand-written ranking, which learning refines.
	StartPrior = "prior"
	// StartScratch starts the wide part at zero: a nearly uniform policy
	// (the deep part's small random start breaks its ties), which learning
	// must take from a random ranker to a good one.
	StartScratch = "scratch"
)

// Starts lists the starts, the default first.
var Starts = []string{StartPrior, StartScratch}

// Start names where a network of this config starts: StartPrior or
// StartScratch. Every learner checkpoint holds its config's Prior, so
// every checkpoint says its start.
func (c Config) Start() string {
	if c.Prior {
		return StartPrior
	}
	return StartScratch
}

// StartConfig is the learner a start suggests: DefaultConfig from the
// prior; from scratch, the same without the prior and without the KL
// penalty. A penalty to the reference policy holds the policy at its
// start, which from the prior is a ranking that carries across modules
// (docs/training.md, "The KL penalty to the start") and from scratch only
// the random ranking learning has to leave. The learning rates are the
// same for both: the wide part's 0.03 moves a weight by about 2 in a run
// of 35 updates of 2 epochs, the scale of the prior's weights (Ochiai 3),
// and from scratch, at these rates and no KL, a run of make run's size
// rose from 7 to 26 of 59 held-out tasks in 10 updates (issue 33); no
// other rates were measured.
func StartConfig(start string) (Config, error) {
	c := DefaultConfig()
	switch start {
	case StartPrior:
	case StartScratch:
		c.Prior, c.KL = false, 0
	default:
		return Config{}, fmt.Errorf("start %q: want %s or %s", start, StartPrior, StartScratch)
	}
	return c, nil
}

// Validate reports the first nonsensical field.
func (c Config) Validate() error {
	switch {
	case c.Dims.valid() != nil:
		return c.Dims.valid()
	case !(c.LR > 0) || math.IsInf(c.LR, 0):
		return fmt.Errorf("learning rate %v: want > 0", c.LR)
	case !(c.WideLR >= 0) || math.IsInf(c.WideLR, 0):
		return fmt.Errorf("wide learning rate %v: want >= 0", c.WideLR)
	case !(c.Clip > 0 && c.Clip < 1):
		return fmt.Errorf("clip %v: want in (0, 1)", c.Clip)
	case c.Entropy < 0 || c.MaxGradNorm < 0 || math.IsNaN(c.Entropy) || math.IsNaN(c.MaxGradNorm):
		return errors.New("entropy weight and max grad norm: want >= 0")
	case !(c.KL >= 0) || math.IsInf(c.KL, 0):
		return fmt.Errorf("KL weight %v: want >= 0", c.KL)
	case c.Epochs < 1:
		return fmt.Errorf("epochs %d: want >= 1", c.Epochs)
	case !(c.Temperature > 0):
		return fmt.Errorf("temperature %v: want > 0", c.Temperature)
	case c.Credit != "" && c.Credit != CreditEpisode && c.Credit != CreditTry:
		return fmt.Errorf("credit %q: want %s or %s", c.Credit, CreditEpisode, CreditTry)
	}
	return nil
}

// Learner trains the neural policy by GRPO on a cuda.Backend: every
// arithmetic operation over candidates and weights — the network's forward
// and backward passes, the segment log-softmaxes, the entropy and its
// gradient, the gradient norm and Adam — runs on the backend; the host
// computes only per-decision scalars (the clipped ratio's coefficient, the
// loss) from the chosen options' log-probabilities. It is used from one
// goroutine at a time (the learner actor's update goroutine).
type Learner struct {
	b   cuda.Backend
	cfg Config
	// params, m and v live on the backend, with ref, the reference
	// policy's parameters (the start) when the KL penalty is on; step
	// counts Adam steps.
	params, m, v, grads, one, ref cuda.Buffer
	step                          int
	updates                       int64
	cur                           *Policy
}

var _ policy.Learner = (*Learner)(nil)

// NewLearner starts a learner on b with freshly initialized weights.
func NewLearner(b cuda.Backend, cfg Config) (*Learner, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	l := &Learner{b: b, cfg: cfg}
	if err := l.alloc(); err != nil {
		return nil, err
	}
	start := Init(cfg.Dims, cfg.Seed, cfg.Prior)
	if err := l.setParams(start); err != nil {
		l.Close()
		return nil, err
	}
	if cfg.KL > 0 {
		if err := l.b.WriteFloat32(l.ref, start); err != nil {
			l.Close()
			return nil, fmt.Errorf("neural: write the reference parameters: %w", err)
		}
	}
	return l, nil
}

func (l *Learner) alloc() error {
	P := l.cfg.Dims.Params()
	var err error
	a := func(n int) cuda.Buffer {
		if err != nil {
			return cuda.Buffer{}
		}
		var buf cuda.Buffer
		buf, err = l.b.Alloc(cuda.Float32, n)
		return buf
	}
	l.params, l.m, l.v, l.grads, l.one = a(P), a(P), a(P), a(P), a(1)
	if l.cfg.KL > 0 {
		l.ref = a(P)
	}
	if err == nil {
		err = l.b.Fill(l.one, 1)
	}
	if err != nil {
		return fmt.Errorf("neural: allocate: %w", err)
	}
	return nil
}

func (l *Learner) setParams(p []float32) error {
	if err := l.b.WriteFloat32(l.params, p); err != nil {
		return fmt.Errorf("neural: write parameters: %w", err)
	}
	l.cur = l.policy(slices.Clone(p))
	return nil
}

func (l *Learner) policy(p []float32) *Policy {
	return &Policy{Dims: l.cfg.Dims, Params: p, Temperature: l.cfg.Temperature, Seed: l.cfg.Seed, Protocol: l.cfg.Protocol,
		NoStop: l.cfg.NoStop, NoKeep: l.cfg.NoKeep}
}

// Policy is the current policy.
func (l *Learner) Policy() policy.Policy { return l.cur }

// Current is the current policy, as its own type.
func (l *Learner) Current() *Policy { return l.cur }

// Initial is the parameter vector the learner's run started from: Init
// with its seed and prior, the reference of its KL penalty.
func (l *Learner) Initial() []float32 { return Init(l.cfg.Dims, l.cfg.Seed, l.cfg.Prior) }

// Backend names the backend the learner computes on.
func (l *Learner) Backend() string { return l.b.Name() }

// Close frees the learner's buffers (not the backend, which the caller
// owns).
func (l *Learner) Close() error {
	var errs []error
	for _, b := range []cuda.Buffer{l.params, l.m, l.v, l.grads, l.one, l.ref} {
		if b.Len() > 0 {
			errs = append(errs, l.b.Free(b))
		}
	}
	return errors.Join(errs...)
}

// batch is one update's decisions, flattened.
type batch struct {
	x                   []float32 // options' features, rows of F
	off                 []int32   // decision d's options are rows [off[d], off[d+1])
	chosen              []int32   // global row of each decision's choice
	adv                 []float32 // the advantage of each decision's trajectory
	old                 []float64 // the behaviour policy's log-probability of the choice
	groups, zero, trajs int
}

// collect flattens the decisions of a batch's groups: every decision of
// every trajectory, with its trajectory's group-normalized advantage.
func (l *Learner) collect(groups []policy.Group) batch {
	var b batch
	F := l.cfg.Dims.F
	b.off = []int32{0}
	for _, g := range groups {
		b.groups++
		// The group's usable decisions, with their trajectory and step.
		type at struct{ ti, si int }
		var ds []at
		for ti, t := range g.Trajectories {
			for si, s := range t.Steps {
				d := s.Action.Decision
				if d == nil || d.Kind != Kind || d.Dim != F || d.Options() == 0 || d.Chosen < 0 || d.Chosen >= d.Options() {
					continue
				}
				ds = append(ds, at{ti, si})
			}
		}
		// perTry: r (and adv) hold one value per decision, else one per
		// trajectory.
		perTry := l.cfg.Credit == CreditTry
		var r []float64
		if perTry {
			r = make([]float64, len(ds))
			for i, a := range ds {
				r[i] = tryOutcome(&g.Trajectories[a.ti].Steps[a.si])
			}
		} else {
			r = g.Returns()
		}
		adv := make([]float64, len(r))
		if policy.Advantages(r, adv, policy.Epsilon) == 0 {
			b.zero++
			if !l.cfg.KeepZeroVariance {
				continue
			}
		}
		b.trajs += len(g.Trajectories)
		// Each trajectory weighs the same, however many decisions it made:
		// its decisions share its weight (the group's mean decisions per
		// trajectory). Summed over decisions instead, the long failing
		// rollouts outweigh the short rewarded ones, and what every option
		// shares against stopping (in_package, the bias of the deep part)
		// drifts toward stopping whatever the tries said.
		var weight []float64
		if !perTry && len(ds) > 0 {
			weight = make([]float64, len(g.Trajectories))
			n := make([]int, len(g.Trajectories))
			used := 0
			for _, a := range ds {
				if n[a.ti] == 0 {
					used++
				}
				n[a.ti]++
			}
			for ti := range weight {
				if n[ti] > 0 {
					weight[ti] = float64(len(ds)) / float64(used) / float64(n[ti])
				}
			}
		}
		for i, a := range ds {
			s := &g.Trajectories[a.ti].Steps[a.si]
			d := s.Action.Decision
			start := b.off[len(b.off)-1]
			b.x = append(b.x, d.Features...)
			b.off = append(b.off, start+int32(d.Options()))
			b.chosen = append(b.chosen, start+int32(d.Chosen))
			var v float64
			if perTry {
				v = adv[i]
			} else {
				v = adv[a.ti] * weight[a.ti]
			}
			b.adv = append(b.adv, float32(v))
			b.old = append(b.old, s.Action.LogProb)
		}
	}
	return b
}

// tryOutcome is what the tests said of the try a step's decision chose
// (CreditTry): 1 when every deciding test passed, ½ when it fixed some and
// broke none, 0 otherwise and for stopping.
func tryOutcome(s *env.Step) float64 {
	tries := s.Result.Tries()
	if s.Action.Tool != env.ToolTry || len(tries) == 0 {
		return 0
	}
	tr := &tries[0]
	switch {
	case tr.AllPass:
		return 1
	case repair.Improves(tr):
		return 0.5
	}
	return 0
}

// Update applies GRPO to a batch of groups and returns the new policy.
func (l *Learner) Update(ctx context.Context, groups []policy.Group) (policy.Policy, policy.UpdateStats, error) {
	st := policy.UpdateStats{Groups: len(groups)}
	var rewards float64
	for i := range groups {
		for _, r := range groups[i].Rewards() {
			rewards += r
			st.Trajectories++
		}
		st.Signal += policy.Variance(groups[i].Returns())
	}
	if st.Trajectories > 0 {
		st.MeanReward = rewards / float64(st.Trajectories)
	}
	if len(groups) > 0 {
		st.Signal /= float64(len(groups))
	}
	b := l.collect(groups)
	st.ZeroSignalGroups = b.zero
	D := len(b.chosen)
	st.Extra = map[string]float64{"decisions": float64(D), "options": float64(len(b.x) / l.cfg.Dims.F)}
	if D == 0 {
		return l.cur, st, ctx.Err() // nothing to learn from
	}
	w, err := l.newWork(len(b.x)/l.cfg.Dims.F, D)
	if err != nil {
		return nil, st, err
	}
	defer w.free()
	if err := w.upload(b); err != nil {
		return nil, st, err
	}
	if err := w.reference(); err != nil {
		return nil, st, err
	}
	before, err := l.save()
	if err != nil {
		return nil, st, err
	}
	p, err := l.epochs(ctx, w, &b, &st)
	if err != nil {
		// An update that fails part-way leaves nothing moved: the next
		// one starts from the weights and Adam state of the last policy.
		return nil, st, errors.Join(err, l.restore(before))
	}
	l.updates++
	l.cur = l.policy(p)
	return l.cur, st, nil
}

// epochs runs the update's GRPO epochs over batch b with w, recording the
// first epoch's figures in st, and returns the new parameters, refused
// when they are no longer finite.
func (l *Learner) epochs(ctx context.Context, w *work, b *batch, st *policy.UpdateStats) ([]float32, error) {
	var last stepStats
	for e := range l.cfg.Epochs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		s, err := w.step(*b)
		if err != nil {
			return nil, err
		}
		if e == 0 {
			st.Loss = s.loss
			st.Extra["kl"], st.Extra["entropy"], st.Extra["grad_norm"], st.Extra["clip_fraction"] = s.kl, s.entropy, s.gradNorm, s.clipFrac
			if l.cfg.KL > 0 {
				st.Extra["kl_ref"] = s.klRef
			}
		}
		last = s
	}
	st.Extra["kl_last_epoch"] = last.kl
	p := make([]float32, l.cfg.Dims.Params())
	if err := l.b.ReadFloat32(p, l.params); err != nil {
		return nil, fmt.Errorf("neural: read parameters: %w", err)
	}
	for _, v := range p {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return nil, errors.New("neural: parameters are no longer finite: the update is refused")
		}
	}
	return p, nil
}

// adamState is what an update moves besides the parameters: Adam's
// moments and step count.
type adamState struct {
	m, v []float32
	step int
}

// save reads the Adam state before an update, for restore.
func (l *Learner) save() (adamState, error) {
	P := l.cfg.Dims.Params()
	s := adamState{m: make([]float32, P), v: make([]float32, P), step: l.step}
	if err := errors.Join(l.b.ReadFloat32(s.m, l.m), l.b.ReadFloat32(s.v, l.v)); err != nil {
		return adamState{}, fmt.Errorf("neural: read the optimizer state: %w", err)
	}
	return s, nil
}

// restore puts back the current policy's parameters and the Adam state
// save read, after an update failed part-way.
func (l *Learner) restore(s adamState) error {
	l.step = s.step
	if err := errors.Join(l.b.WriteFloat32(l.params, l.cur.Params), l.b.WriteFloat32(l.m, s.m), l.b.WriteFloat32(l.v, s.v)); err != nil {
		return fmt.Errorf("neural: restore the state before the update: %w", err)
	}
	return nil
}

// Decision-level sanity for callers that record trajectories: a decision of
// this policy, and its chosen log-probability under p.
func (p *Policy) LogProb(d *env.Decision) (float64, error) {
	if d == nil || d.Dim != p.Dims.F || d.Chosen < 0 || d.Chosen >= d.Options() {
		return 0, errors.New("neural: not a decision of this network")
	}
	lp := logSoftmax(scores(p.Dims, p.Params, d.Features, p.temperature()))
	return lp[d.Chosen], nil
}
