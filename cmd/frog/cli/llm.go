package cli

import (
	"context"
	"os"

	"github.com/spf13/pflag"

	"github.com/frognano/frog/policy/openai"
)

// llmOptions are the flags of commands that play a language model behind
// OpenAI-compatible servers: each maps to a field of openai.Config, and
// --llm-config reads a JSON file of that config under them (a flag given on
// the command line overrides the file).
type llmOptions struct {
	File       string `json:"llm_config,omitempty"`
	SystemFile string `json:"system_prompt_file,omitempty"`
	TaskFile   string `json:"task_prompt_file,omitempty"`
	flagged    openai.Config
	fs         *pflag.FlagSet
	Config     openai.Config `json:"config"`
}

func (o *llmOptions) flags(f *pflag.FlagSet) {
	d := openai.DefaultConfig()
	c := &o.flagged
	o.fs = f
	f.StringVar(&o.File, "llm-config", "", "JSON file of the model's configuration (the fields of docs/llm.md); flags override it")
	f.StringSliceVar(&c.BaseURLs, "base-url", nil, "OpenAI-compatible API root, e.g. http://localhost:8000/v1 (repeatable: requests go to the least busy)")
	f.StringVar(&c.Model, "model", "", "model name, as the server names it")
	f.StringVar(&c.APIKeyEnv, "api-key-env", d.APIKeyEnv, "environment variable holding the API key (unset: no key sent)")
	if f.Lookup("temperature") == nil {
		// frog train has its own --temperature; with --policy openai it is
		// the model's.
		f.Float64Var(&c.Temperature, "temperature", d.Temperature, "sampling temperature")
	}
	f.Float64Var(&c.TopP, "top-p", d.TopP, "nucleus sampling top-p")
	f.IntVar(&c.MaxTokens, "max-tokens", d.MaxTokens, "most tokens per answer (0: the server's default)")
	f.IntVar(&c.MaxTurns, "max-turns", d.MaxTurns, "most tool calls per episode (mistakes included): the episode's step limit")
	f.DurationVar(&c.RequestTimeout, "request-timeout", d.RequestTimeout, "timeout of one attempt of a model call")
	f.IntVar(&c.MaxRetries, "max-retries-llm", d.MaxRetries, "retries of a model call after an unreachable server, a timeout, 429 or 5xx (jittered backoff)")
	f.IntVar(&c.MaxInflight, "max-inflight", d.MaxInflight, "most requests outstanding per server (distinct from --concurrency, the live episodes)")
	f.IntVar(&c.ContextBudget, "context-budget", d.ContextBudget, "most tokens of a request (estimated at 4 bytes each): older tool results are elided to fit (0: no budget)")
	f.StringSliceVar(&c.Tools, "tools", d.Tools, "tools exposed to the model (add candidates, try, apply for frog's template repairs)")
	f.BoolVar(&c.LogProbs, "logprobs", false, "ask the server for the sampled tokens' log-probabilities")
	f.Int64Var(&c.Seed, "llm-seed", 0, "seed sent with every request (0: none)")
	f.StringVar(&c.VersionFile, "policy-version-file", "", "file where the external trainer announces the version its servers serve (an integer): staleness is measured by it")
	f.StringVar(&o.SystemFile, "system-prompt-file", "", "file replacing the system prompt: a template in text/template's syntax over PromptData (docs/llm.md lists what it may use)")
	f.StringVar(&o.TaskFile, "task-prompt-file", "", "file replacing the task statement, a template like --system-prompt-file's")
}

// resolve makes the config: defaults, then the file, then the flags given,
// then the prompt files. Errors are usage errors.
func (o *llmOptions) resolve() (openai.Config, error) {
	if o.fs == nil {
		// Set by a command itself (frog bench llm), not from flags.
		if err := o.Config.Validate(); err != nil {
			return o.Config, &UsageError{Err: err}
		}
		return o.Config, nil
	}
	cfg := openai.DefaultConfig()
	if o.File != "" {
		var err error
		if cfg, err = openai.LoadConfig(o.File, cfg); err != nil {
			return cfg, usagef("--llm-config: %v", err)
		}
	}
	f, c := o.fs, &o.flagged
	set := func(name string, apply func()) {
		if f.Changed(name) {
			apply()
		}
	}
	set("base-url", func() { cfg.BaseURLs = c.BaseURLs })
	set("model", func() { cfg.Model = c.Model })
	set("api-key-env", func() { cfg.APIKeyEnv = c.APIKeyEnv })
	set("temperature", func() { cfg.Temperature, _ = f.GetFloat64("temperature") })
	set("top-p", func() { cfg.TopP = c.TopP })
	set("max-tokens", func() { cfg.MaxTokens = c.MaxTokens })
	set("max-turns", func() { cfg.MaxTurns = c.MaxTurns })
	set("request-timeout", func() { cfg.RequestTimeout = c.RequestTimeout })
	set("max-retries-llm", func() { cfg.MaxRetries = c.MaxRetries })
	set("max-inflight", func() { cfg.MaxInflight = c.MaxInflight })
	set("context-budget", func() { cfg.ContextBudget = c.ContextBudget })
	set("tools", func() { cfg.Tools = c.Tools })
	set("logprobs", func() { cfg.LogProbs = c.LogProbs })
	set("llm-seed", func() { cfg.Seed = c.Seed })
	set("policy-version-file", func() { cfg.VersionFile = c.VersionFile })
	for _, p := range []struct {
		flag, file string
		dst        *string
	}{{"--system-prompt-file", o.SystemFile, &cfg.SystemPrompt}, {"--task-prompt-file", o.TaskFile, &cfg.TaskPrompt}} {
		if p.file == "" {
			continue
		}
		data, err := os.ReadFile(p.file)
		if err != nil {
			return cfg, usagef("%s: %v", p.flag, err)
		}
		*p.dst = string(data)
	}
	if err := cfg.Validate(); err != nil {
		return cfg, &UsageError{Err: err}
	}
	o.Config = cfg
	return cfg, nil
}

// openLLM makes the policy and checks, before any episode starts, that
// every server answers, takes the key and serves the model: a failure is a
// usage error (exit 2) that says which.
func (o *llmOptions) openLLM(ctx context.Context) (*openai.Policy, error) {
	cfg, err := o.resolve()
	if err != nil {
		return nil, err
	}
	p, err := openai.New(cfg)
	if err != nil {
		return nil, &UsageError{Err: err}
	}
	if err := p.Check(ctx); err != nil {
		if ctx.Err() != nil {
			return nil, ErrInterrupted
		}
		return nil, &UsageError{Err: err}
	}
	return p, nil
}

// checkPolicyName accepts the --policy values of LLM commands.
func checkPolicyName(name string) error {
	if name != "openai" {
		return usagef("--policy %q: want openai (a model behind an OpenAI-compatible server)", name)
	}
	return nil
}
