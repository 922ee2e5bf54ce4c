package openai

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/policy"
)

// Policy is an agent over a model behind OpenAI-compatible servers. Its Act
// may be called from many goroutines at once; it blocks until every
// observation of the batch has its action or ctx is cancelled. A Policy
// holds no conversation (see the package doc): the value is shared by every
// episode.
type Policy struct {
	cfg     Config
	prompts *prompts
	tools   []sdk.ChatCompletionToolUnionParam
	pool    *pool
	backoff *backoff
	http    *http.Client

	versions *versionFile
	// fixed bounds the bytes of a request that are not its messages: the
	// tools offered and the parameters.
	fixed int

	calls, mistakes, contextErrors, infra atomic.Int64
	promptTokens, completionTokens        atomic.Int64
	elided, elidedBytes                   atomic.Int64
}

var _ policy.Policy = (*Policy)(nil)

// New makes the policy cfg describes. It makes no request: Check does.
func New(cfg Config) (*Policy, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	pr, err := newPrompts(cfg)
	if err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = 0
	tr.MaxIdleConnsPerHost = cfg.MaxInflight
	tr.MaxConnsPerHost = 0
	// One connection pool for all the servers, each keeping as many idle
	// connections as it may have requests in flight.
	hc := &http.Client{Transport: tr}
	p := &Policy{
		cfg: cfg, prompts: pr, http: hc, versions: &versionFile{path: cfg.VersionFile},
		pool:    newPool(cfg, hc),
		backoff: &backoff{rng: rand.New(rand.NewPCG(uint64(cfg.Seed), 0x6f70656e)), base: cfg.RetryBase, max: cfg.RetryMax},
	}
	for _, name := range cfg.Tools {
		spec := toolSpecs[name]
		p.tools = append(p.tools, sdk.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: name, Description: sdk.String(spec.desc), Parameters: shared.FunctionParameters(spec.params),
		}))
	}
	tools, err := json.Marshal(p.tools)
	if err != nil {
		return nil, fmt.Errorf("tools: %w", err)
	}
	p.fixed = len(tools) + jsonLen(cfg.Model) + requestFields
	return p, nil
}

// requestFields bounds the bytes of a request's fields beside its messages,
// tools and model name: temperature, top_p, max_tokens, logprobs, seed and
// the JSON around them.
const requestFields = 256

// budget is the bytes a request's messages may hold: the context budget
// (4 bytes a token) less what the rest of the request takes, halved after
// each refusal of the server for length; 0: no budget.
func (p *Policy) budget(overflows int) int {
	if p.cfg.ContextBudget == 0 {
		return 0
	}
	return max(4*p.cfg.ContextBudget>>min(overflows, 16)-p.fixed, 1)
}

// Close lets go of the idle connections to the servers. The policy must
// not be used after.
func (p *Policy) Close() { p.http.CloseIdleConnections() }

// Config is the policy's configuration.
func (p *Policy) Config() Config { return p.cfg }

// Act chooses each observation's action, each by its own model call (or
// from the tool calls of the episode's last answer), concurrently. Items
// that failed are reported through policy.ItemErrors.
func (p *Policy) Act(ctx context.Context, obs []env.Observation, acts []env.Action) error {
	if len(obs) == 1 {
		var err error
		acts[0], err = p.act(ctx, &obs[0])
		if err != nil {
			return policy.ItemErrors{err}
		}
		return nil
	}
	errs := make(policy.ItemErrors, len(obs))
	var wg sync.WaitGroup
	for i := range obs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			acts[i], errs[i] = p.act(ctx, &obs[i])
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return errs
		}
	}
	return nil
}

// Agent is p as an env.Agent, for env.Run: one episode, one request at a
// time, the agent's errors as they are (env.ErrInfra for a server that
// failed for good).
func (p *Policy) Agent() env.Agent { return agent{p} }

type agent struct{ p *Policy }

func (a agent) Act(ctx context.Context, obs env.Observation) (env.Action, error) {
	return a.p.act(ctx, &obs)
}

// act is one episode's next action.
func (p *Policy) act(ctx context.Context, obs *env.Observation) (env.Action, error) {
	system, task, cutTask, err := p.prompts.taskMessage(PromptData{Task: obs.View(), Tools: p.cfg.Tools, MaxTurns: p.cfg.MaxTurns}, p.budget(0))
	if err != nil {
		return env.Action{}, err
	}
	conv := rebuild(system, task, obs.History)
	if conv.pending >= 0 {
		// The last answer has calls left to play: no model call.
		act := parseCall(conv.answer[conv.pending], p.cfg.Tools)
		act.Turn = &env.Turn{Continues: true, Call: conv.pending, TrainerVersion: p.TrainerVersion()}
		p.count(act)
		return act, nil
	}
	elided, elidedBytes := conv.elide(p.budget(conv.overflows))
	if cutTask > 0 && conv.msgs[1].Content == task {
		elided++ // the task's message, cut before elide saw it
	}
	elidedBytes += cutTask
	p.elided.Add(int64(elided))
	p.elidedBytes.Add(int64(elidedBytes))
	msgs := conv.params()
	hash := conv.hash()
	params := sdk.ChatCompletionNewParams{
		Model: shared.ChatModel(p.cfg.Model), Messages: msgs, Tools: p.tools,
		Temperature: sdk.Float(p.cfg.Temperature), TopP: sdk.Float(p.cfg.TopP),
	}
	if p.cfg.MaxTokens > 0 {
		params.MaxTokens = sdk.Int(int64(p.cfg.MaxTokens))
	}
	if p.cfg.LogProbs {
		params.Logprobs = sdk.Bool(true)
	}
	if p.cfg.Seed != 0 {
		params.Seed = sdk.Int(p.cfg.Seed)
	}
	turn := &env.Turn{Call: -1, RequestHash: hash, RequestMessages: len(msgs), Elided: elided, Model: p.cfg.Model, TrainerVersion: p.TrainerVersion()}
	p.calls.Add(1)
	res, err := p.complete(ctx, params)
	turn.Latency, turn.Overhead, turn.Queued, turn.Retries, turn.Server = res.latency, res.overhead, res.queued, res.retries, res.server
	var cerr *contextError
	switch {
	case errors.As(err, &cerr):
		p.contextErrors.Add(1)
		turn.ContextExceeded = true
		act := mistake("the conversation is longer than the model's context (" + env.CutMiddle(cerr.Error(), 300) +
			"); older results will be cut further. Keep tool outputs short: view line ranges, not whole files.")
		act.Turn = turn
		p.count(act)
		return act, nil
	case err != nil:
		if ctx.Err() == nil {
			p.infra.Add(1)
		}
		return env.Action{}, err
	}
	c := res.completion
	ch := c.Choices[0]
	turn.FinishReason = ch.FinishReason
	turn.PromptTokens, turn.CompletionTokens = int(c.Usage.PromptTokens), int(c.Usage.CompletionTokens)
	p.promptTokens.Add(c.Usage.PromptTokens)
	p.completionTokens.Add(c.Usage.CompletionTokens)
	for _, lp := range ch.Logprobs.Content {
		turn.LogProbs = append(turn.LogProbs, env.TokenLogProb{Token: lp.Token, LogProb: lp.Logprob})
	}
	turn.Content = ch.Message.Content
	for _, tc := range ch.Message.ToolCalls {
		name, args := tc.Function.Name, tc.Function.Arguments
		if tc.Type == "custom" {
			name, args = tc.Custom.Name, tc.Custom.Input
		}
		turn.ToolCalls = append(turn.ToolCalls, env.ToolCall{ID: tc.ID, Name: name, Arguments: args})
	}
	var act env.Action
	if len(turn.ToolCalls) == 0 {
		msg := "no tool call: act only through the tools; call submit when the fix is done"
		if ch.FinishReason == "length" {
			msg = "the answer was cut at the token limit before any tool call: answer shorter, with a tool call"
		}
		act = mistake(msg)
	} else {
		turn.Call = 0
		act = parseCall(turn.ToolCalls[0], p.cfg.Tools)
	}
	act.Turn = turn
	for _, lp := range turn.LogProbs {
		act.LogProb += lp.LogProb
	}
	p.count(act)
	return act, nil
}

func (p *Policy) count(act env.Action) {
	if act.Mistake() != "" {
		p.mistakes.Add(1)
	}
}

// hash is the SHA-256 (hex) of the messages' canonical form: each field of
// each message (role, content, tool calls' id, name and arguments, the
// call a result answers) followed by a NUL byte. It is cheaper than hashing
// the request's JSON, and as exact.
func (c *conversation) hash() string {
	h := sha256.New()
	field := func(s string) {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	for _, m := range c.msgs {
		field(m.Role)
		field(m.Content)
		for _, t := range m.ToolCalls {
			field(t.ID)
			field(t.Function.Name)
			field(t.Function.Arguments)
		}
		field(m.ToolCallID)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// params are the conversation's messages as the SDK sends them.
func (c *conversation) params() []sdk.ChatCompletionMessageParamUnion {
	out := make([]sdk.ChatCompletionMessageParamUnion, 0, len(c.msgs))
	for _, m := range c.msgs {
		switch m.Role {
		case "system":
			out = append(out, sdk.SystemMessage(m.Content))
		case "user":
			out = append(out, sdk.UserMessage(m.Content))
		case "tool":
			out = append(out, sdk.ToolMessage(m.Content, m.ToolCallID))
		case "assistant":
			a := sdk.ChatCompletionAssistantMessageParam{}
			if m.Content != "" || len(m.ToolCalls) == 0 {
				a.Content.OfString = param.NewOpt(m.Content)
			}
			for _, t := range m.ToolCalls {
				a.ToolCalls = append(a.ToolCalls, sdk.ChatCompletionMessageToolCallUnionParam{OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{
					ID: t.ID, Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{Name: t.Function.Name, Arguments: t.Function.Arguments},
				}})
			}
			out = append(out, sdk.ChatCompletionMessageParamUnion{OfAssistant: &a})
		}
	}
	return out
}

// Stats is what the policy did, for summaries and progress bars.
type Stats struct {
	// Calls are model calls made; Mistakes actions that were the agent's
	// mistakes (malformed, unknown or missing tool calls, context
	// overflows); ContextErrors the overflows among them; InfraFaults calls
	// that failed for good (after retries).
	Calls         int64 `json:"calls"`
	Mistakes      int64 `json:"mistakes"`
	ContextErrors int64 `json:"context_errors"`
	InfraFaults   int64 `json:"infra_faults"`
	// Elided is how many messages the context budget cut, summed over the
	// requests, and ElidedBytes the bytes (of JSON) it took out.
	Elided           int64         `json:"elided"`
	ElidedBytes      int64         `json:"elided_bytes"`
	PromptTokens     int64         `json:"prompt_tokens"`
	CompletionTokens int64         `json:"completion_tokens"`
	Servers          []ServerStats `json:"servers"`
}

// Stats reads the counters; it may be called at any time.
func (p *Policy) Stats() Stats {
	st := Stats{
		Calls: p.calls.Load(), Mistakes: p.mistakes.Load(), ContextErrors: p.contextErrors.Load(), InfraFaults: p.infra.Load(),
		Elided: p.elided.Load(), ElidedBytes: p.elidedBytes.Load(),
		PromptTokens: p.promptTokens.Load(), CompletionTokens: p.completionTokens.Load(),
	}
	for _, s := range p.pool.servers {
		st.Servers = append(st.Servers, ServerStats{URL: s.url, Requests: s.requests.Load(), Failures: s.failures.Load(), Outstanding: s.outstanding.Load()})
	}
	return st
}

// Check asks every server, before any episode starts, whether it answers,
// accepts the key and serves the model: GET /models, and where a server
// does not list models, a one-token completion. Its error says which.
func (p *Policy) Check(ctx context.Context) error {
	for _, s := range p.pool.servers {
		if err := p.check(ctx, s); err != nil {
			return fmt.Errorf("model server %s: %w", s.url, err)
		}
	}
	return nil
}

func (p *Policy) check(ctx context.Context, s *server) error {
	cctx, cancel := context.WithTimeout(ctx, min(p.cfg.RequestTimeout, 30e9))
	defer cancel()
	page, err := s.client.Models.List(cctx)
	var apiErr *sdk.Error
	switch {
	case errors.As(err, &apiErr) && (apiErr.StatusCode == http.StatusUnauthorized || apiErr.StatusCode == http.StatusForbidden):
		if p.cfg.APIKey() == "" {
			return fmt.Errorf("the server wants an API key and $%s is not set (--api-key-env names the variable)", p.cfg.APIKeyEnv)
		}
		return fmt.Errorf("the server refuses the key in $%s: %v", p.cfg.APIKeyEnv, err)
	case errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusNotFound:
		// No model list here: ask the model itself for one token.
		_, err := s.client.Chat.Completions.New(cctx, sdk.ChatCompletionNewParams{
			Model: shared.ChatModel(p.cfg.Model), Messages: []sdk.ChatCompletionMessageParamUnion{sdk.UserMessage("ping")}, MaxTokens: sdk.Int(1),
		})
		if err != nil {
			return fmt.Errorf("model %q: %w", p.cfg.Model, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("unreachable: %w", err)
	}
	var names []string
	for _, m := range page.Data {
		if m.ID == p.cfg.Model {
			return nil
		}
		names = append(names, m.ID)
	}
	return fmt.Errorf("unknown model %q (the server serves %v)", p.cfg.Model, names)
}
