// Package openaitest is a fake OpenAI-compatible chat-completions server for
// tests and benchmarks: an httptest.Server speaking the wire format
// (POST /v1/chat/completions, GET /v1/models), whose answers a script
// decides. It is the one thing frog's LLM tests fake: the model. `frog bench
// llm` runs frog's LLM rollouts against it at a fixed latency.
//
// New starts a server; its Script is called once per chat request, from the
// server's handler goroutine, concurrently when requests are, so a script
// that keeps state guards it. Latency is waited before each answer; a
// Reply can hang, fail with a status (ContextLengthError is vLLM's body for
// a request past the model's context) or answer with content, tool calls
// and logprobs. A request whose client gives up (its context ends) stops
// the wait and gets no answer. The caller closes the server (Close, from
// httptest.Server) when done.
package openaitest
