package openai

import (
	"encoding/json"
	"fmt"

	"github.com/frognano/frog/policy"
)

// PolicyKind names the LLM policy in a policy blob.
const PolicyKind = "frog-openai-policy/1"

// PolicyCodec carries the LLM policy to rollout workers: the policy half
// of an actors.Codec. What crosses is the policy's Config; each worker
// calls the model servers itself. The API key does not cross: a worker
// reads it from its own environment variable Config.APIKeyEnv. A worker
// reads Config.VersionFile at the same path as the trainer (on another
// host, a shared volume; else its turns record no trainer version).
type PolicyCodec struct{}

// EncodePolicy encodes a *Policy's Config.
func (PolicyCodec) EncodePolicy(p policy.Policy) (string, []byte, error) {
	lp, ok := p.(*Policy)
	if !ok {
		return "", nil, fmt.Errorf("openai codec: policy %T is not the LLM policy", p)
	}
	b, err := json.Marshal(lp.Config())
	return PolicyKind, b, err
}

// DecodePolicy makes a worker's policy from the trainer's Config.
func (PolicyCodec) DecodePolicy(kind string, b []byte) (policy.Policy, error) {
	if kind != PolicyKind {
		return nil, fmt.Errorf("openai codec: policy kind %q, want %q", kind, PolicyKind)
	}
	var c Config
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("openai codec: %w", err)
	}
	return New(c)
}
