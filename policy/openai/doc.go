// Package openai is frog's policy over a language model behind any
// OpenAI-compatible chat-completions server (vLLM, SGLang, llama.cpp's
// server, Ollama, OpenAI itself), on the official Go SDK
// (github.com/openai/openai-go/v3).
//
// The agent loop: a system prompt and the task's statement (both
// text/template, overridable), then one model call per turn with env's tools
// exposed as function tools, each with a JSON schema. Every tool call becomes
// one env.Action; an answer with several calls is played one call per step,
// with no new model call until all are answered. A Policy value holds no
// conversation: each Act rebuilds the request from the observation's history,
// whose actions carry the model's answers (env.Turn), so one value serves
// every episode, survives retries of an episode, and leaks nothing when one
// ends.
//
// Failures are typed where they belong:
//
//   - unreachable server, timeouts, 429 and 5xx, after retries with
//     jittered backoff: an infrastructure fault (env.ErrInfra), never a
//     reward of 0;
//   - a context-length error, a malformed tool call (unknown tool, bad
//     arguments, invalid JSON) and text with no tool call are the agent's
//     own doing: an action with env.Action.Mistake set, which the episode
//     records and shows to the model as an error it can read, counting a
//     step; the episode goes on to its step limit.
//
// Requests are not batched by frog (the server batches): Act runs each
// observation of a batch as its own request, at most MaxInflight at once per
// server, on the server with the fewest outstanding requests, and returns
// policy.ItemErrors so that one failing request fails only its episode.
//
// An Exporter writes completed groups as JSONL shards of chat-messages
// records (messages with tool calls and tool results, reward,
// group-normalized advantage, tokens, logprobs) that Hugging Face datasets
// and Python RL trainers load; ReadShards reads them back. docs/llm.md has
// the schema. `frog rollout` plays stored tasks and exports them this way.
//
// ExportLearner is the policy.Learner of `frog train --policy openai`,
// whose weights live in an external trainer: each update writes the
// batch's groups to a Sink and returns the same policy. The learner actor
// calls Update from its update goroutine, one call at a time; Update
// blocks while the sink is full, so that the staleness gate pauses
// admission, and returns ctx's error when ctx ends first.
//
// A Policy is safe for concurrent use: the policy server calls Act from
// its inference goroutines, several batches at once. Act blocks until
// every request of the batch is answered or ctx is cancelled; Close
// releases its idle connections.
package openai
