package baseline

import (
	"encoding/json"
	"fmt"

	"github.com/frognano/frog/policy"
)

// PolicyKind names a baseline in a policy blob.
const PolicyKind = "frog-baseline/1"

// PolicyCodec carries a baseline to rollout workers: the policy half of
// an actors.Codec. A baseline is its name and seed; the worker makes the
// same one.
type PolicyCodec struct{}

type wireBaseline struct {
	Name string `json:"name"`
	Seed uint64 `json:"seed"`
}

// EncodePolicy encodes a *Policy made by New.
func (PolicyCodec) EncodePolicy(p policy.Policy) (string, []byte, error) {
	bp, ok := p.(*Policy)
	if !ok {
		return "", nil, fmt.Errorf("baseline codec: policy %T is not a baseline", p)
	}
	b, err := json.Marshal(wireBaseline{Name: bp.name, Seed: bp.seed})
	return PolicyKind, b, err
}

// DecodePolicy makes the worker's copy with New.
func (PolicyCodec) DecodePolicy(kind string, b []byte) (policy.Policy, error) {
	if kind != PolicyKind {
		return nil, fmt.Errorf("baseline codec: policy kind %q, want %q", kind, PolicyKind)
	}
	var w wireBaseline
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, fmt.Errorf("baseline codec: %w", err)
	}
	return New(w.Name, w.Seed)
}
