package curriculum

import (
	"fmt"
	"math/rand/v2"

	"github.com/frognano/frog/env"
)

// roundsState is a Rounds curriculum as plain data.
type roundsState struct {
	Config    RoundsConfig     `json:"config"`
	RNG       []byte           `json:"rng"`
	Tick      int64            `json:"tick"`
	Version   int64            `json:"version"`
	Round     int              `json:"round"`
	Quota     int              `json:"quota"`
	Planned   int              `json:"planned"`
	Awaiting  int              `json:"awaiting"`
	Cands     []candidateState `json:"candidates"`
	Training  bool             `json:"training"`
	TrainFrom int64            `json:"train_from"`
	Pool      []env.Task       `json:"pool"`
	Prev      []env.Task       `json:"prev"`
	Refines   []refineReq      `json:"refines"`
	Tally     tallyState       `json:"tally"`
	Stats     RoundsStats      `json:"stats"`
}

// candidateState is a candidate as plain data.
type candidateState struct {
	Task    env.Task `json:"task"`
	Served  int      `json:"served"`
	Last    int64    `json:"last"`
	Groups  []uint64 `json:"groups"`
	N       int      `json:"n"`
	Pass    int      `json:"pass"`
	Decided bool     `json:"decided"`
}

func values(ts []*env.Task) []env.Task {
	out := make([]env.Task, len(ts))
	for i, t := range ts {
		out[i] = *t
	}
	return out
}

func pointers(ts []env.Task) []*env.Task {
	var out []*env.Task
	for i := range ts {
		out = append(out, &ts[i])
	}
	return out
}

// Snapshot is the Rounds curriculum's whole state (see Snapshotter).
func (r *Rounds) Snapshot() ([]byte, error) {
	rng, err := r.pcg.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("snapshot of a rounds curriculum: %w", err)
	}
	s := roundsState{Config: r.cfg, RNG: rng, Tick: r.tick, Version: r.version, Round: r.round, Quota: r.quota,
		Planned: r.planned, Awaiting: r.awaiting, Training: r.training, TrainFrom: r.trainFrom,
		Pool: values(r.pool), Prev: values(r.prev), Refines: r.refines, Tally: r.t.state(), Stats: r.st}
	for _, c := range r.order {
		s.Cands = append(s.Cands, candidateState{Task: *c.t, Served: c.served, Last: c.last, Groups: c.groups,
			N: c.n, Pass: c.pass, Decided: c.decided})
	}
	return snapshotOf(StrategyRounds, s)
}

// Restore puts a Rounds snapshot back. The snapshot must be of a Rounds
// curriculum configured as r (seed included).
func (r *Rounds) Restore(data []byte) error {
	var s roundsState
	if err := decodeSnapshot(data, StrategyRounds, &s); err != nil {
		return err
	}
	if s.Config != r.cfg {
		return fmt.Errorf("%w: a snapshot of a rounds curriculum configured otherwise (%+v; this one %+v)", ErrSnapshot, s.Config, r.cfg)
	}
	n, err := restoredRounds(s)
	if err != nil {
		return fmt.Errorf("%w: rounds snapshot corrupted: %v", ErrSnapshot, err)
	}
	*r = *n
	return nil
}

// restoredRounds builds the Rounds curriculum that s describes.
func restoredRounds(s roundsState) (*Rounds, error) {
	t, err := s.Tally.tally()
	if err != nil {
		return nil, err
	}
	if s.Round < 1 || len(s.Stats.PerRound) != s.Round || s.Quota < 0 || s.Planned < 0 || s.Awaiting < 0 {
		return nil, fmt.Errorf("round %d of %d reported, quota %d, planned %d, awaiting %d",
			s.Round, len(s.Stats.PerRound), s.Quota, s.Planned, s.Awaiting)
	}
	r := &Rounds{cfg: s.Config, pcg: new(rand.PCG), tick: s.Tick, version: s.Version, round: s.Round,
		quota: s.Quota, planned: s.Planned, awaiting: s.Awaiting, cands: map[string]*candidate{},
		training: s.Training, trainFrom: s.TrainFrom, pool: pointers(s.Pool), prev: pointers(s.Prev),
		refines: s.Refines, t: t, st: s.Stats}
	if err := r.pcg.UnmarshalBinary(s.RNG); err != nil {
		return nil, fmt.Errorf("rng: %w", err)
	}
	r.rng = rand.New(r.pcg)
	for i := range s.Cands {
		cs := s.Cands[i]
		if r.cands[cs.Task.ID] != nil {
			return nil, fmt.Errorf("candidate %s twice", cs.Task.ID)
		}
		c := &candidate{t: &cs.Task, served: cs.Served, last: cs.Last, groups: cs.Groups, n: cs.N, pass: cs.Pass, decided: cs.Decided}
		r.cands[c.t.ID] = c
		r.order = append(r.order, c)
		if !c.decided {
			r.undecided++
		}
	}
	return r, nil
}
