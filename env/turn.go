package env

import "time"

// Turn records the language-model call behind an action, for policies that
// talk to a model (policy/openai). One answer of the model may hold several
// tool calls: the step that starts the answer carries the whole answer
// (Content, ToolCalls) and the call's accounting; each later call of the
// same answer is its own step whose Turn has Call set and Continues true.
// A trajectory's steps thus rebuild the conversation exactly, and a
// trainer can export it as chat messages.
//
// Turn is plain data: no SDK type, no pointer into a client.
type Turn struct {
	// Continues says this step performs a later tool call of the previous
	// step's answer: no model call was made for it.
	Continues bool `json:"continues,omitempty"`
	// Call is the index in the answer's ToolCalls of the call this step
	// performs; -1 when the answer made no tool call.
	Call int `json:"call"`
	// Content is the assistant's text; ToolCalls its calls as it sent them
	// (unparsed arguments included). Set on the step that starts an answer.
	Content   string     `json:"content,omitempty"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// FinishReason is the server's ("stop", "tool_calls", "length").
	FinishReason string `json:"finish_reason,omitempty"`
	// ContextExceeded says the server refused the request as too long for
	// the model's context: no answer, the agent's own doing.
	ContextExceeded bool `json:"context_exceeded,omitempty"`

	// RequestHash is the SHA-256 (hex) of the request's messages in a
	// canonical form (policy/openai: each field NUL-terminated);
	// RequestMessages how many there were and Elided how many older tool
	// results were cut from them to fit the context budget. The messages
	// themselves are rebuilt from the trajectory's earlier steps.
	RequestHash     string `json:"request_hash,omitempty"`
	RequestMessages int    `json:"request_messages,omitempty"`
	Elided          int    `json:"elided,omitempty"`
	// Usage as the server reported it.
	PromptTokens     int `json:"prompt_tokens,omitempty"`
	CompletionTokens int `json:"completion_tokens,omitempty"`
	// LogProbs are the sampled tokens' log-probabilities when the server
	// returned them.
	LogProbs []TokenLogProb `json:"logprobs,omitempty"`
	// Latency is the wall time of the model call, retries included;
	// Overhead the part of it not spent waiting for the server's answers
	// (building the request, decoding, frog's queueing and limits aside);
	// Queued the time spent waiting for a free request slot (--max-inflight);
	// Retries the attempts that failed before the one that answered.
	Latency  time.Duration `json:"latency_ns,omitempty"`
	Overhead time.Duration `json:"overhead_ns,omitempty"`
	Queued   time.Duration `json:"queued_ns,omitempty"`
	Retries  int           `json:"retries,omitempty"`
	// Server is the base URL that answered and Model the model it named.
	Server string `json:"server,omitempty"`
	Model  string `json:"model,omitempty"`
	// TrainerVersion is the weights' version the external trainer had
	// announced when the call was made (policy/openai's version file), -1
	// when none is announced.
	TrainerVersion int64 `json:"trainer_version"`
}

// ToolCall is one function call of a model's answer, as sent.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// TokenLogProb is one sampled token and its log-probability.
type TokenLogProb struct {
	Token   string  `json:"token"`
	LogProb float64 `json:"logprob"`
}
