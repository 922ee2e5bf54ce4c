package curriculum

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/frognano/frog/env"
)

// Snapshotter is a curriculum whose whole state can be saved as plain data
// and put back: what `frog train --resume` continues from. It is an
// optional capability, found by type assertion; Replay, Rounds, Target
// and Fixed have it.
//
// Snapshot and Restore are called from the goroutine that drives the
// curriculum (the curriculum actor's), between its other calls; neither
// blocks on anything but the CPU.
type Snapshotter interface {
	// Snapshot is the curriculum's state as bytes (JSON under a format
	// tag, with a checksum). A curriculum made with the same configuration
	// and given them by Restore answers every later call exactly as this
	// one would have.
	Snapshot() ([]byte, error)
	// Restore replaces the curriculum's state by a snapshot's. Bytes that
	// are not a curriculum snapshot, a snapshot of another kind of
	// curriculum, of another strategy or of one configured otherwise, and
	// a corrupted one are refused with an error wrapping ErrSnapshot; the
	// curriculum is unchanged then.
	Restore(data []byte) error
}

// ErrSnapshot is wrapped by every error of Restore that refuses its bytes.
var ErrSnapshot = errors.New("curriculum snapshot refused")

var (
	_ Snapshotter = (*Replay)(nil)
	_ Snapshotter = (*Target)(nil)
	_ Snapshotter = (*Fixed)(nil)
)

// snapshotFormat tags a curriculum snapshot; the number is its version.
const snapshotFormat = "frog-curriculum/1"

// envelope is a snapshot: the format, the kind of curriculum, and the
// state with its SHA-256 (over the state's compact JSON, so that
// re-indenting the snapshot inside a larger document keeps it valid).
type envelope struct {
	Format string          `json:"format"`
	Kind   string          `json:"kind"`
	SHA256 string          `json:"sha256"`
	State  json.RawMessage `json:"state"`
}

func snapshotOf(kind string, state any) ([]byte, error) {
	b, err := json.Marshal(state)
	if err != nil {
		return nil, fmt.Errorf("snapshot of a %s curriculum: %w", kind, err)
	}
	sum := sha256.Sum256(b)
	return json.Marshal(envelope{Format: snapshotFormat, Kind: kind, SHA256: hex.EncodeToString(sum[:]), State: b})
}

// decodeSnapshot checks data's envelope (format, kind, checksum) and
// decodes its state into state, refusing fields state does not have.
func decodeSnapshot(data []byte, kind string, state any) error {
	var e envelope
	if err := json.Unmarshal(data, &e); err != nil {
		return fmt.Errorf("%w: not a curriculum snapshot: %v", ErrSnapshot, err)
	}
	if e.Format != snapshotFormat {
		return fmt.Errorf("%w: not a curriculum snapshot (format %q, want %q)", ErrSnapshot, e.Format, snapshotFormat)
	}
	if e.Kind != kind {
		return fmt.Errorf("%w: a snapshot of a %s curriculum, not of a %s one", ErrSnapshot, e.Kind, kind)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, e.State); err != nil {
		return fmt.Errorf("%w: %s snapshot corrupted: %v", ErrSnapshot, kind, err)
	}
	if sum := sha256.Sum256(compact.Bytes()); hex.EncodeToString(sum[:]) != e.SHA256 {
		return fmt.Errorf("%w: %s snapshot corrupted (its checksum does not match)", ErrSnapshot, kind)
	}
	d := json.NewDecoder(bytes.NewReader(compact.Bytes()))
	d.DisallowUnknownFields()
	if err := d.Decode(state); err != nil {
		return fmt.Errorf("%w: %s snapshot corrupted: %v", ErrSnapshot, kind, err)
	}
	return nil
}

// tallyState is a tally as plain data: its bins in order.
type tallyState struct {
	Bins   []Bin `json:"bins"`
	Total  int64 `json:"total"`
	Passed int64 `json:"passed"`
}

func (t *tally) state() tallyState {
	s := tallyState{Bins: make([]Bin, 0, len(t.bins)), Total: t.total, Passed: t.passed}
	for _, b := range t.bins {
		s.Bins = append(s.Bins, *b)
	}
	sort.Slice(s.Bins, func(i, j int) bool { return s.Bins[i].Lo < s.Bins[j].Lo })
	return s
}

func (s tallyState) tally() (tally, error) {
	t := tally{total: s.Total, passed: s.Passed}
	var episodes, passed int64
	for _, b := range s.Bins {
		k := int(math.Floor(b.Lo))
		if float64(k) != b.Lo || b.Episodes < 1 || b.Passed < 0 || b.Passed > b.Episodes || t.bins[k] != nil {
			return tally{}, fmt.Errorf("tally bin %+v", b)
		}
		if t.bins == nil {
			t.bins = make(map[int]*Bin)
		}
		c := b
		t.bins[k] = &c
		episodes += b.Episodes
		passed += b.Passed
	}
	if episodes != s.Total || passed != s.Passed {
		return tally{}, fmt.Errorf("tally of %d outcomes (%d passed) whose bins hold %d (%d)", s.Total, s.Passed, episodes, passed)
	}
	return t, nil
}

// Snapshot is the difficulty (a check on Restore) and the tally.
func (f *Fixed) Snapshot() ([]byte, error) {
	return snapshotOf("fixed", fixedState{D: f.D, Tally: f.t.state()})
}

type fixedState struct {
	D     float64    `json:"difficulty"`
	Tally tallyState `json:"tally"`
}

// Restore puts a Fixed snapshot's tally back; its difficulty must be f's.
func (f *Fixed) Restore(data []byte) error {
	var s fixedState
	if err := decodeSnapshot(data, "fixed", &s); err != nil {
		return err
	}
	if s.D != f.D {
		return fmt.Errorf("%w: a snapshot of a fixed curriculum at difficulty %v, not %v", ErrSnapshot, s.D, f.D)
	}
	t, err := s.Tally.tally()
	if err != nil {
		return fmt.Errorf("%w: fixed snapshot corrupted: %v", ErrSnapshot, err)
	}
	f.t = t
	return nil
}

// targetState is a Target as plain data: its configuration (a check on
// Restore), its ability estimate and its tally.
type targetState struct {
	PassRate float64    `json:"pass_rate"`
	Rate     float64    `json:"rate"`
	Min      float64    `json:"min"`
	Max      float64    `json:"max"`
	Ability  float64    `json:"ability"`
	Tally    tallyState `json:"tally"`
}

func (c *Target) state() targetState {
	return targetState{PassRate: c.PassRate, Rate: c.Rate, Min: c.Min, Max: c.Max, Ability: c.a, Tally: c.t.state()}
}

// restoreFrom checks s against c's configuration and returns the Target it
// describes; c is not changed.
func (c *Target) restoreFrom(s targetState) (Target, error) {
	if s.PassRate != c.PassRate || s.Rate != c.Rate || s.Min != c.Min || s.Max != c.Max {
		return Target{}, fmt.Errorf("a snapshot of a target curriculum configured otherwise (pass rate %v, rate %v, range [%v, %v]; this one %v, %v, [%v, %v])",
			s.PassRate, s.Rate, s.Min, s.Max, c.PassRate, c.Rate, c.Min, c.Max)
	}
	if math.IsNaN(s.Ability) || math.IsInf(s.Ability, 0) {
		return Target{}, fmt.Errorf("ability estimate %v", s.Ability)
	}
	t, err := s.Tally.tally()
	if err != nil {
		return Target{}, err
	}
	n := *c
	n.a, n.t = s.Ability, t
	return n, nil
}

// Snapshot is the target's configuration, ability estimate and tally.
func (c *Target) Snapshot() ([]byte, error) { return snapshotOf("target", c.state()) }

// Restore puts a Target snapshot back; its configuration must be c's.
func (c *Target) Restore(data []byte) error {
	var s targetState
	if err := decodeSnapshot(data, "target", &s); err != nil {
		return err
	}
	n, err := c.restoreFrom(s)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrSnapshot, err)
	}
	*c = n
	return nil
}

// replayState is a Replay as plain data: every field of it and of its
// estimate, inner target, buffer entries (with their whole tasks) and
// generator.
type replayState struct {
	Config       ReplayConfig             `json:"config"`
	Estimate     estimateState            `json:"estimate"`
	Target       targetState              `json:"target"`
	RNG          []byte                   `json:"rng"`
	Buffer       []entryState             `json:"buffer"`
	Tick         int64                    `json:"tick"`
	Version      int64                    `json:"version"`
	Taken        int                      `json:"taken"`
	PlannedFresh int                      `json:"planned_fresh"`
	FreshPass    int64                    `json:"fresh_pass"`
	FreshN       int64                    `json:"fresh_n"`
	SteeredPass  int64                    `json:"steered_pass"`
	SteeredN     int64                    `json:"steered_n"`
	Aim          float64                  `json:"aim"`
	Requested    map[string]int64         `json:"requested"`
	Yield        map[string]int64         `json:"yield"`
	Matched      map[string]int64         `json:"matched,omitempty"`
	ReqOf        map[string]string        `json:"req_of"`
	ReqEv        map[string]evidenceState `json:"req_ev"`
	Tally        tallyState               `json:"tally"`
	Stats        FrontierStats            `json:"stats"`
}

type entryState struct {
	Task       env.Task `json:"task"`
	Bin        string   `json:"bin"`
	Last       int64    `json:"last"`
	Served     int64    `json:"served"`
	Retired    bool     `json:"retired"`
	Seen       bool     `json:"seen"`
	FirstGroup uint64   `json:"first_group"`
	Groups     int64    `json:"groups"`
	LastGroup  uint64   `json:"last_group"`
	Compounded int      `json:"compounded,omitempty"`
}

type evidenceState struct {
	Pass float64 `json:"pass"`
	Fail float64 `json:"fail"`
	Pred float64 `json:"pred"`
}

type beliefState struct {
	Bin      string        `json:"bin"`
	Evidence evidenceState `json:"evidence"`
	Tries    int64         `json:"tries"`
}

type estimateState struct {
	Config EstimateConfig           `json:"config"`
	Tasks  map[string]beliefState   `json:"tasks"`
	Bins   map[string]evidenceState `json:"bins"`
}

func (e evidence) state() evidenceState {
	return evidenceState{Pass: e.pass, Fail: e.fail, Pred: e.pred}
}

func (s evidenceState) evidence() (evidence, error) {
	for _, x := range []float64{s.Pass, s.Fail, s.Pred} {
		if !(x >= 0) || math.IsInf(x, 0) {
			return evidence{}, fmt.Errorf("evidence %+v", s)
		}
	}
	return evidence{pass: s.Pass, fail: s.Fail, pred: s.Pred}, nil
}

// Snapshot is the Replay's whole state (see Snapshotter). Its maps are
// written with sorted keys (encoding/json's rule), so equal states give
// equal bytes.
func (r *Replay) Snapshot() ([]byte, error) {
	rng, err := r.pcg.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("snapshot of a replay curriculum: %w", err)
	}
	s := replayState{
		Config: r.cfg, Target: r.target.state(), RNG: rng, Buffer: make([]entryState, len(r.buf)),
		Estimate: estimateState{Config: r.est.cfg, Tasks: make(map[string]beliefState, len(r.est.tasks)), Bins: make(map[string]evidenceState, len(r.est.bins))},
		Tick:     r.tick, Version: r.version, Taken: r.taken, PlannedFresh: r.plannedFresh,
		FreshPass: r.freshPass, FreshN: r.freshN, SteeredPass: r.steeredPass, SteeredN: r.steeredN, Aim: r.aim,
		Requested: r.requested, Yield: r.yield, Matched: r.matched, ReqOf: r.reqOf, ReqEv: make(map[string]evidenceState, len(r.reqEv)),
		Tally: r.t.state(), Stats: r.st,
	}
	for id, b := range r.est.tasks {
		s.Estimate.Tasks[id] = beliefState{Bin: b.bin, Evidence: b.ev.state(), Tries: b.tries}
	}
	for k, ev := range r.est.bins {
		s.Estimate.Bins[k] = ev.state()
	}
	for k, ev := range r.reqEv {
		s.ReqEv[k] = ev.state()
	}
	for i, e := range r.buf {
		s.Buffer[i] = entryState{Task: *e.t, Bin: e.bin, Last: e.last, Served: e.served, Retired: e.retired,
			Seen: e.seen, FirstGroup: e.firstGroup, Groups: e.groups, LastGroup: e.lastGroup, Compounded: e.compounded}
	}
	return snapshotOf("replay", s)
}

// Restore puts a Replay snapshot back. The snapshot must be of the same
// strategy and configuration (seed included) as r.
func (r *Replay) Restore(data []byte) error {
	var s replayState
	if err := decodeSnapshot(data, "replay", &s); err != nil {
		return err
	}
	if s.Config.Strategy != r.cfg.Strategy {
		return fmt.Errorf("%w: a snapshot of a %s curriculum, not of a %s one", ErrSnapshot, s.Config.Strategy, r.cfg.Strategy)
	}
	if s.Config != r.cfg {
		return fmt.Errorf("%w: a snapshot of a %s curriculum configured otherwise (%+v; this one %+v)", ErrSnapshot, r.cfg.Strategy, s.Config, r.cfg)
	}
	n, err := r.restored(s)
	if err != nil {
		return fmt.Errorf("%w: %s snapshot corrupted: %v", ErrSnapshot, r.cfg.Strategy, err)
	}
	*r = *n
	r.est.Predictor = r.predict
	return nil
}

// restored builds the Replay that s describes (r's configuration checked
// already); r is not changed.
func (r *Replay) restored(s replayState) (*Replay, error) {
	if s.Estimate.Config != r.est.cfg {
		return nil, fmt.Errorf("estimate configured otherwise (%+v; this one %+v)", s.Estimate.Config, r.est.cfg)
	}
	if len(s.Buffer) > r.cfg.Capacity {
		return nil, fmt.Errorf("%d tasks in a buffer of capacity %d", len(s.Buffer), r.cfg.Capacity)
	}
	if !(s.Aim >= 0 && s.Aim <= 1) {
		return nil, fmt.Errorf("controller aim %v", s.Aim)
	}
	pcg := new(rand.PCG)
	if err := pcg.UnmarshalBinary(s.RNG); err != nil {
		return nil, fmt.Errorf("generator state: %v", err)
	}
	target, err := r.target.restoreFrom(s.Target)
	if err != nil {
		return nil, fmt.Errorf("inner target: %v", err)
	}
	est, err := NewEstimate(s.Estimate.Config)
	if err != nil {
		return nil, err
	}
	for id, b := range s.Estimate.Tasks {
		ev, err := b.Evidence.evidence()
		if err != nil || b.Tries < 0 {
			return nil, fmt.Errorf("belief of task %q: %+v", id, b)
		}
		est.tasks[id] = &taskBelief{bin: b.Bin, ev: ev, tries: b.Tries}
	}
	for k, es := range s.Estimate.Bins {
		ev, err := es.evidence()
		if err != nil {
			return nil, fmt.Errorf("bin %q: %v", k, err)
		}
		est.bins[k] = &ev
	}
	t, err := s.Tally.tally()
	if err != nil {
		return nil, err
	}
	n := &Replay{
		cfg: r.cfg, est: est, target: &target, pcg: pcg, rng: rand.New(pcg),
		byID: make(map[string]*entry, len(s.Buffer)), tick: s.Tick, version: s.Version, taken: s.Taken, plannedFresh: s.PlannedFresh,
		freshPass: s.FreshPass, freshN: s.FreshN, steeredPass: s.SteeredPass, steeredN: s.SteeredN, aim: s.Aim,
		requested: nonNil(s.Requested), yield: nonNil(s.Yield), matched: nonNil(s.Matched), reqOf: nonNil(s.ReqOf), reqEv: make(map[string]*evidence, len(s.ReqEv)),
		t: t, st: s.Stats,
	}
	for k, es := range s.ReqEv {
		ev, err := es.evidence()
		if err != nil {
			return nil, fmt.Errorf("request %q: %v", k, err)
		}
		n.reqEv[k] = &ev
	}
	for i := range s.Buffer {
		es := &s.Buffer[i]
		if es.Task.ID == "" || n.byID[es.Task.ID] != nil {
			return nil, fmt.Errorf("buffer entry %d: task id %q empty or repeated", i, es.Task.ID)
		}
		if es.Served < 0 || es.Groups < 0 || es.Compounded < 0 || es.Last > s.Tick {
			return nil, fmt.Errorf("buffer entry %d (task %q): served %d, groups %d, last plan %d of %d", i, es.Task.ID, es.Served, es.Groups, es.Last, s.Tick)
		}
		task := es.Task
		e := &entry{t: &task, bin: es.Bin, last: es.Last, served: es.Served, retired: es.Retired, seen: es.Seen,
			firstGroup: es.FirstGroup, groups: es.Groups, lastGroup: es.LastGroup, compounded: es.Compounded}
		n.buf = append(n.buf, e)
		n.byID[task.ID] = e
	}
	return n, nil
}

// nonNil is m, or an empty map when m is nil (a snapshot's empty map).
func nonNil[V any](m map[string]V) map[string]V {
	if m == nil {
		return map[string]V{}
	}
	return m
}

// Held lists the ids of the tasks in the replay buffer, in the order they
// came: the tasks a resumed run's task store should not serve as fresh
// again first.
func (r *Replay) Held() []string {
	ids := make([]string, len(r.buf))
	for i, e := range r.buf {
		ids[i] = e.t.ID
	}
	return ids
}
