package neural

import (
	"encoding/json"
	"fmt"

	"github.com/frognano/frog/policy"
	"github.com/frognano/frog/policy/repair"
)

// PolicyCodec carries the neural policy to rollout workers: the policy
// half of an actors.Codec (the trainer encodes each version once, a worker
// decodes its replica and runs inference itself).
type PolicyCodec struct{}

// PolicyKind names the neural policy in a policy blob.
const PolicyKind = "frog-neural-policy/1"

type wirePolicy struct {
	Dims        Dims          `json:"dims"`
	Params      string        `json:"params"`
	Temperature float64       `json:"temperature"`
	Greedy      bool          `json:"greedy,omitempty"`
	Seed        uint64        `json:"seed"`
	Protocol    repair.Config `json:"protocol"`
	NoStop      bool          `json:"no_stop,omitempty"`
	NoKeep      bool          `json:"no_keep,omitempty"`
}

// EncodePolicy encodes a *Policy: its shape, weights and sampling.
func (PolicyCodec) EncodePolicy(p policy.Policy) (string, []byte, error) {
	np, ok := p.(*Policy)
	if !ok {
		return "", nil, fmt.Errorf("neural codec: policy %T is not the neural policy: only frog's built-in policy runs on workers so far", p)
	}
	b, err := json.Marshal(wirePolicy{Dims: np.Dims, Params: encode(np.Params), Temperature: np.Temperature, Greedy: np.Greedy,
		Seed: np.Seed, Protocol: np.Protocol, NoStop: np.NoStop, NoKeep: np.NoKeep})
	return PolicyKind, b, err
}

// DecodePolicy makes a worker's replica; a blob whose weights do not fit
// its network is refused.
func (PolicyCodec) DecodePolicy(kind string, weights []byte) (policy.Policy, error) {
	if kind != PolicyKind {
		return nil, fmt.Errorf("neural codec: policy kind %q, want %q", kind, PolicyKind)
	}
	var w wirePolicy
	if err := json.Unmarshal(weights, &w); err != nil {
		return nil, fmt.Errorf("neural codec: %w", err)
	}
	params, err := decode(w.Params, w.Dims.Params())
	if err != nil {
		return nil, fmt.Errorf("neural codec: weights of a network %+v: %w", w.Dims, err)
	}
	return &Policy{Dims: w.Dims, Params: params, Temperature: w.Temperature, Greedy: w.Greedy, Seed: w.Seed,
		Protocol: w.Protocol, NoStop: w.NoStop, NoKeep: w.NoKeep}, nil
}
