package openai_test

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/frognano/frog/policy/openai"
)

// A worker's LLM policy has the trainer's configuration, and the key
// stays out of the blob.
func TestPolicyCodecCarriesTheConfig(t *testing.T) {
	cfg := openai.DefaultConfig()
	cfg.BaseURLs, cfg.Model, cfg.APIKeyEnv = []string{"http://127.0.0.1:1/v1"}, "m", "FROG_TEST_KEY"
	cfg.SystemPrompt, cfg.MaxTurns, cfg.Seed = "be brief", 9, 5
	t.Setenv("FROG_TEST_KEY", "sk-secret")
	p, err := openai.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var c openai.PolicyCodec
	kind, b, err := c.EncodePolicy(p)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte("sk-secret")) {
		t.Errorf("the blob holds the API key: %s", b)
	}
	back, err := c.DecodePolicy(kind, b)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(cfg, back.(*openai.Policy).Config()); d != "" {
		t.Errorf("config changed on the way (-sent +received):\n%s", d)
	}
	if _, err := c.DecodePolicy("frog-neural-policy/1", b); err == nil {
		t.Error("a blob of another kind was decoded")
	}
}
