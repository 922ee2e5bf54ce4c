package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/frognano/frog/env"
)

// Config shapes a Policy. Its JSON form is the --llm-config file of the
// commands; flags given on the command line override the file.
type Config struct {
	// BaseURLs are the servers' OpenAI API roots (…/v1); requests go to the
	// one with the fewest outstanding.
	BaseURLs []string `json:"base_urls"`
	Model    string   `json:"model"`
	// APIKeyEnv names the environment variable holding the API key; an
	// unset or empty variable sends no key (local servers need none).
	APIKeyEnv string `json:"api_key_env"`
	// Sampling. Temperature and TopP are always sent; MaxTokens 0 leaves
	// the completion's length to the server.
	Temperature float64 `json:"temperature"`
	TopP        float64 `json:"top_p"`
	MaxTokens   int     `json:"max_tokens,omitempty"`
	// LogProbs asks the server for the sampled tokens' log-probabilities.
	LogProbs bool `json:"logprobs,omitempty"`
	// Seed, when not 0, is sent with every request (servers that honour it
	// sample reproducibly) and seeds the retries' jitter.
	Seed int64 `json:"seed,omitempty"`
	// MaxTurns is the most steps (tool calls, mistakes included) of an
	// episode: the commands make it the episode's step limit.
	MaxTurns int `json:"max_turns"`
	// RequestTimeout bounds one attempt of a model call.
	RequestTimeout time.Duration `json:"request_timeout"`
	// MaxRetries is how many times a failed attempt (unreachable, timeout,
	// 429, 5xx) is retried, after a jittered exponential backoff from
	// RetryBase up to RetryMax.
	MaxRetries int           `json:"max_retries"`
	RetryBase  time.Duration `json:"retry_base"`
	RetryMax   time.Duration `json:"retry_max"`
	// MaxInflight is the most requests outstanding on each server.
	MaxInflight int `json:"max_inflight"`
	// ContextBudget is the most tokens a request's messages may hold,
	// estimated at 4 bytes a token: the oldest tool results are elided
	// with a note until it fits. After the server refuses a request as too
	// long, the episode's budget is halved. 0: no budget.
	ContextBudget int `json:"context_budget"`
	// Tools are the tools exposed to the model, by env name.
	Tools []string `json:"tools"`
	// VersionFile, when set, is where the external trainer announces the
	// version of the weights the servers now serve (an integer, rewritten
	// whenever it loads new weights). Each model call records the version
	// announced then (env.Turn.TrainerVersion); ExportLearner measures
	// staleness by it.
	VersionFile string `json:"policy_version_file,omitempty"`
	// SystemPrompt and TaskPrompt are templates over PromptData in
	// text/template's syntax, of which they may use the subset
	// promptTemplate runs; empty means the defaults (DefaultSystemPrompt,
	// DefaultTaskPrompt).
	SystemPrompt string `json:"system_prompt,omitempty"`
	TaskPrompt   string `json:"task_prompt,omitempty"`
}

// DefaultTools are the tools a model sees unless told otherwise: the ones
// any coding agent has. candidates, try and apply (frog's template repairs)
// can be added.
var DefaultTools = []string{"view", "search", "run_tests", "coverage", "edit", "revert", "submit"}

// DefaultConfig is what the commands start from.
func DefaultConfig() Config {
	return Config{
		APIKeyEnv:      "OPENAI_API_KEY",
		Temperature:    1,
		TopP:           1,
		MaxTurns:       30,
		RequestTimeout: 5 * time.Minute,
		MaxRetries:     4,
		RetryBase:      500 * time.Millisecond,
		RetryMax:       15 * time.Second,
		MaxInflight:    64,
		ContextBudget:  32768,
		Tools:          append([]string(nil), DefaultTools...),
	}
}

// LoadConfig reads a JSON config over base: the file's fields replace
// base's, the others stay. Durations are Go durations ("90s") or
// nanoseconds.
func LoadConfig(path string, base Config) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return base, err
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return base, fmt.Errorf("%s: %w", path, err)
	}
	for _, k := range []string{"request_timeout", "retry_base", "retry_max"} {
		v, ok := raw[k]
		if !ok {
			continue
		}
		var s string
		if json.Unmarshal(v, &s) == nil {
			d, err := time.ParseDuration(s)
			if err != nil {
				return base, fmt.Errorf("%s: %s: %w", path, k, err)
			}
			raw[k], _ = json.Marshal(int64(d))
		}
	}
	fixed, _ := json.Marshal(raw)
	dec := json.NewDecoder(strings.NewReader(string(fixed)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&base); err != nil {
		return base, fmt.Errorf("%s: %w", path, err)
	}
	return base, nil
}

// Bounds of a Config's sizes: beyond them a count computed from one
// overflows.
const (
	maxTurns    = 1 << 16
	maxInflight = 1 << 16
	// MaxContextBudget is the largest --context-budget, in tokens (4 GiB
	// of request at 4 bytes a token).
	MaxContextBudget = 1 << 30
)

// Validate reports the first nonsensical field, named as its flag.
func (c Config) Validate() error {
	if len(c.BaseURLs) == 0 {
		return errors.New("--base-url: a model server is required (an OpenAI-compatible API root, e.g. http://localhost:8000/v1)")
	}
	for _, u := range c.BaseURLs {
		p, err := url.Parse(u)
		if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return fmt.Errorf("--base-url %q: want an http or https URL such as http://localhost:8000/v1", u)
		}
	}
	switch {
	case c.Model == "":
		return errors.New("--model: the model to ask is required (as the server names it)")
	case c.Temperature < 0:
		return fmt.Errorf("--temperature %g: want >= 0", c.Temperature)
	case c.TopP <= 0 || c.TopP > 1:
		return fmt.Errorf("--top-p %g: want in (0, 1]", c.TopP)
	case c.MaxTokens < 0:
		return fmt.Errorf("--max-tokens %d: want >= 0", c.MaxTokens)
	case c.MaxTurns < 1 || c.MaxTurns > maxTurns:
		return fmt.Errorf("--max-turns %d: want 1 to %d", c.MaxTurns, maxTurns)
	case c.RequestTimeout <= 0:
		return fmt.Errorf("--request-timeout %v: want > 0", c.RequestTimeout)
	case c.MaxRetries < 0:
		return fmt.Errorf("--max-retries %d: want >= 0", c.MaxRetries)
	case c.RetryBase <= 0 || c.RetryMax < c.RetryBase:
		return fmt.Errorf("retry backoff %v to %v: want 0 < base <= max", c.RetryBase, c.RetryMax)
	case c.MaxInflight < 1 || c.MaxInflight > maxInflight:
		return fmt.Errorf("--max-inflight %d: want 1 to %d", c.MaxInflight, maxInflight)
	case c.ContextBudget < 0 || c.ContextBudget > MaxContextBudget:
		return fmt.Errorf("--context-budget %d: want 0 to %d", c.ContextBudget, MaxContextBudget)
	case len(c.Tools) == 0:
		return errors.New("--tools: expose at least submit")
	}
	seen := map[string]bool{}
	for _, name := range c.Tools {
		if _, err := env.ParseTool(name); err != nil {
			return fmt.Errorf("--tools: %w", err)
		}
		seen[name] = true
	}
	if !seen["submit"] {
		return errors.New("--tools: submit must be among them, or no episode could end before its step limit")
	}
	if _, err := newPrompts(c); err != nil {
		return err
	}
	return nil
}

// APIKey is the key the config's variable holds ("" when unset).
func (c Config) APIKey() string {
	if c.APIKeyEnv == "" {
		return ""
	}
	return os.Getenv(c.APIKeyEnv)
}
