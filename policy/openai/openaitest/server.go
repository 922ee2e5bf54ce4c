package openaitest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"time"
)

// Message is one message of a request, content flattened to text.
type Message struct {
	Role       string     `json:"role"`
	Content    string     `json:"-"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

// ToolCall is one call of an answer.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
}

// Request is one chat-completions request as the server got it.
type Request struct {
	Model    string
	Messages []Message
	// Tools are the names of the function tools offered.
	Tools []string
	// N is the request's number among all the server got (1-based).
	N int64
	// Raw is the request body.
	Raw []byte
}

// Last is the request's last message.
func (r Request) Last() Message { return r.Messages[len(r.Messages)-1] }

// Reply is what the server answers to one request.
type Reply struct {
	// Status, when not 0 or 200, answers with that status and Body (an
	// OpenAI-style error object when Body is empty).
	Status int
	Body   string
	// Content and ToolCalls make a normal answer; FinishReason defaults to
	// "tool_calls" when there are calls, else "stop".
	Content      string
	ToolCalls    []ToolCall
	FinishReason string
	// LogProbs adds a logprob for each of a few tokens.
	LogProbs bool
	// Hang never answers: the handler waits until the client gives up.
	Hang bool
}

// Call is a tool call with an ID made from the request's number.
func Call(name, args string) ToolCall { return ToolCall{Name: name, Arguments: args} }

// Server is the fake server. Script is called for every chat request, from
// the handler's goroutine (concurrently when requests are); Latency is
// waited before each answer.
type Server struct {
	*httptest.Server
	Script  func(Request) Reply
	Latency time.Duration
	// Models are what GET /v1/models lists (default "test-model"); APIKey,
	// when set, is demanded as a bearer token.
	Models []string
	APIKey string
	// NoModels answers GET /v1/models with 404, as servers that list no
	// models do.
	NoModels bool

	requests atomic.Int64
	inflight atomic.Int64
	peak     atomic.Int64
}

// New starts a server answering with script.
func New(script func(Request) Reply) *Server {
	s := &Server{Script: script, Models: []string{"test-model"}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// BaseURL is the API root to give a client (…/v1).
func (s *Server) BaseURL() string { return s.URL + "/v1" }

// Requests is how many chat requests the server got; PeakInflight the most
// it was answering at once.
func (s *Server) Requests() int64     { return s.requests.Load() }
func (s *Server) PeakInflight() int64 { return s.peak.Load() }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if s.APIKey != "" && r.Header.Get("Authorization") != "Bearer "+s.APIKey {
		writeError(w, http.StatusUnauthorized, "invalid_api_key", "Incorrect API key provided")
		return
	}
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/v1/models" && !s.NoModels:
		var data []map[string]any
		for _, m := range s.Models {
			data = append(data, map[string]any{"id": m, "object": "model", "created": 0, "owned_by": "frog"})
		}
		writeJSON(w, map[string]any{"object": "list", "data": data})
	case r.Method == http.MethodPost && r.URL.Path == "/v1/chat/completions":
		s.chat(w, r)
	default:
		writeError(w, http.StatusNotFound, "not_found", "no route "+r.URL.Path)
	}
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	n := s.requests.Add(1)
	cur := s.inflight.Add(1)
	defer s.inflight.Add(-1)
	for {
		p := s.peak.Load()
		if cur <= p || s.peak.CompareAndSwap(p, cur) {
			break
		}
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	req, err := decode(raw)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	req.N, req.Raw = n, raw
	if s.Latency > 0 {
		t := time.NewTimer(s.Latency)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	rep := s.Script(req)
	switch {
	case rep.Hang:
		<-r.Context().Done()
		return
	case rep.Status != 0 && rep.Status != http.StatusOK:
		if rep.Body != "" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(rep.Status)
			io.WriteString(w, rep.Body)
			return
		}
		writeError(w, rep.Status, "server_error", http.StatusText(rep.Status))
		return
	}
	msg := map[string]any{"role": "assistant", "content": rep.Content}
	var calls []map[string]any
	for i, c := range rep.ToolCalls {
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("call_%d_%d", n, i)
		}
		calls = append(calls, map[string]any{"id": id, "type": "function", "function": map[string]any{"name": c.Name, "arguments": c.Arguments}})
	}
	if calls != nil {
		msg["tool_calls"] = calls
	}
	finish := rep.FinishReason
	if finish == "" {
		finish = "stop"
		if calls != nil {
			finish = "tool_calls"
		}
	}
	choice := map[string]any{"index": 0, "message": msg, "finish_reason": finish, "logprobs": nil}
	completion := len(rep.Content)/4 + 8*len(calls) + 1
	if rep.LogProbs {
		var lps []map[string]any
		for i := range 3 {
			lps = append(lps, map[string]any{"token": fmt.Sprint("t", i), "logprob": -0.5, "bytes": []int{}, "top_logprobs": []any{}})
		}
		choice["logprobs"] = map[string]any{"content": lps}
	}
	writeJSON(w, map[string]any{
		"id": fmt.Sprint("chatcmpl-", n), "object": "chat.completion", "created": 0, "model": req.Model,
		"choices": []any{choice},
		"usage":   map[string]any{"prompt_tokens": len(raw) / 4, "completion_tokens": completion, "total_tokens": len(raw)/4 + completion},
	})
}

func decode(raw []byte) (Request, error) {
	var body struct {
		Model    string `json:"model"`
		Messages []struct {
			Role       string          `json:"role"`
			Content    json.RawMessage `json:"content"`
			ToolCallID string          `json:"tool_call_id"`
			ToolCalls  []struct {
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"messages"`
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		return Request{}, err
	}
	if body.Model == "" || len(body.Messages) == 0 {
		return Request{}, fmt.Errorf("model and messages are required")
	}
	req := Request{Model: body.Model}
	for _, t := range body.Tools {
		req.Tools = append(req.Tools, t.Function.Name)
	}
	for _, m := range body.Messages {
		msg := Message{Role: m.Role, ToolCallID: m.ToolCallID}
		var text string
		if json.Unmarshal(m.Content, &text) == nil {
			msg.Content = text
		} else {
			var parts []struct {
				Text string `json:"text"`
			}
			_ = json.Unmarshal(m.Content, &parts)
			var b strings.Builder
			for _, p := range parts {
				b.WriteString(p.Text)
			}
			msg.Content = b.String()
		}
		for _, c := range m.ToolCalls {
			msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
		}
		req.Messages = append(req.Messages, msg)
	}
	return req, nil
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": code, "code": code, "param": nil}})
}

// ContextLengthError is the body vLLM answers (with 400) when a request
// exceeds the model's context.
const ContextLengthError = `{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}`
