package sim

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/policy"
)

// Codec carries the simulated agent to rollout workers (an actors.Codec):
// the policy as its skill and seed, each task as its record and the fix
// the trainer's oracle knows of it. On the worker, decoding a task tells
// the worker's own Oracle. The oracle part is the simulation's, sent only
// because the simulated agent is an oracle (docs/remote.md).
type Codec struct {
	// Oracle is the oracle the trainer's tasks are looked up in (their
	// Private fix first) and, on a worker, the one decoded tasks are tied to
	// and decoded policies read.
	Oracle *Oracle
}

// PolicyKind names the simulated policy in a policy blob.
const PolicyKind = "sim"

type wirePolicy struct {
	Skill float64 `json:"skill"`
	Seed  uint64  `json:"seed"`
}

// EncodePolicy encodes a simulated Policy.
func (c Codec) EncodePolicy(p policy.Policy) (string, []byte, error) {
	sp, ok := p.(Policy)
	if !ok {
		return "", nil, fmt.Errorf("sim codec: policy %T is not the simulated one", p)
	}
	b, err := json.Marshal(wirePolicy{Skill: sp.Skill, Seed: sp.Seed})
	return PolicyKind, b, err
}

// DecodePolicy makes a Policy that reads c.Oracle.
func (c Codec) DecodePolicy(kind string, weights []byte) (policy.Policy, error) {
	if kind != PolicyKind {
		return nil, fmt.Errorf("sim codec: policy kind %q, want %q", kind, PolicyKind)
	}
	var w wirePolicy
	if err := json.Unmarshal(weights, &w); err != nil {
		return nil, fmt.Errorf("sim codec: policy: %w", err)
	}
	return Policy{Skill: w.Skill, Seed: w.Seed, Oracle: c.Oracle}, nil
}

// EncodeTask encodes t's record and what the oracle knows of it.
func (c Codec) EncodeTask(t *env.Task) ([]byte, []byte, error) {
	rec, err := json.Marshal(t)
	if err != nil {
		return nil, nil, err
	}
	var fix Fix
	if p, ok := t.Private.(*Fix); ok {
		fix = *p
	} else if f, ok := c.Oracle.Lookup(t.ID); ok {
		fix = f
	} else {
		return nil, nil, fmt.Errorf("sim codec: the oracle does not know task %s", t.ID)
	}
	or, err := json.Marshal(fix)
	return rec, or, err
}

// DecodeTask decodes a task and ties its fix to it in c.Oracle.
func (c Codec) DecodeTask(record, oracle []byte) (*env.Task, error) {
	t := new(env.Task)
	if err := json.Unmarshal(record, t); err != nil {
		return nil, fmt.Errorf("sim codec: task: %w", err)
	}
	if len(oracle) == 0 {
		return nil, errors.New("sim codec: a task came without its oracle part")
	}
	var fix Fix
	if err := json.Unmarshal(oracle, &fix); err != nil {
		return nil, fmt.Errorf("sim codec: task %s: oracle: %w", t.ID, err)
	}
	c.Oracle.Tie(t, fix)
	return t, nil
}
