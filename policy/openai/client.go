package openai

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/frognano/frog/env"
)

// server is one model server: its client, its request slots and its
// outstanding count (requests waiting for a slot or in flight).
type server struct {
	url         string
	client      sdk.Client
	slots       chan struct{}
	outstanding atomic.Int64
	requests    atomic.Int64
	failures    atomic.Int64
}

// pool balances requests over servers by least outstanding requests.
type pool struct {
	servers []*server
	next    atomic.Uint64
}

func newPool(c Config, httpClient *http.Client) *pool {
	p := &pool{}
	for _, u := range c.BaseURLs {
		s := &server{url: strings.TrimRight(u, "/"), slots: make(chan struct{}, c.MaxInflight)}
		// The SDK's own retries are off: frog retries itself, so that each
		// attempt is classified (a context-length 400 is never retried, a
		// 429 is), a retry can go to another server, attempts are counted
		// in the step's record, and backoff is testable.
		s.client = sdk.NewClient(
			option.WithBaseURL(s.url+"/"),
			option.WithAPIKey(c.APIKey()),
			option.WithHTTPClient(httpClient),
			option.WithMaxRetries(0),
			option.WithMiddleware(timeServer),
		)
		p.servers = append(p.servers, s)
	}
	return p
}

// pick returns the server with the fewest outstanding requests (ties go
// round robin) and counts the request on it; done must be called after.
func (p *pool) pick() *server {
	start := int(p.next.Add(1))
	best := p.servers[start%len(p.servers)]
	for i := 1; i < len(p.servers); i++ {
		s := p.servers[(start+i)%len(p.servers)]
		if s.outstanding.Load() < best.outstanding.Load() {
			best = s
		}
	}
	best.outstanding.Add(1)
	return best
}

// ServerStats is one server's part of a summary.
type ServerStats struct {
	URL         string `json:"url"`
	Requests    int64  `json:"requests"`
	Failures    int64  `json:"failed_attempts"`
	Outstanding int64  `json:"outstanding"`
}

// callTiming collects, through the request's context, the time the HTTP
// round trips took: the time spent waiting for the server.
// The body of a refusal is kept too: servers put their reasons in shapes
// the SDK's error does not read (vLLM's is not under "error").
type callTiming struct {
	server atomic.Int64
	mu     sync.Mutex
	body   []byte
}

type timingKey struct{}

// timeServer is the SDK middleware that measures each round trip (request
// written, response headers back) and reads the body before the clock
// stops, so the server's time is all of the wire's.
func timeServer(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	t, _ := req.Context().Value(timingKey{}).(*callTiming)
	start := time.Now()
	resp, err := next(req)
	if err == nil && resp != nil && resp.Body != nil {
		data, rerr := io.ReadAll(resp.Body)
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(data))
		if t != nil && resp.StatusCode >= 400 {
			t.mu.Lock()
			t.body = data[:min(len(data), 4096)]
			t.mu.Unlock()
		}
		if rerr != nil {
			resp, err = nil, rerr
		}
	}
	if t != nil {
		t.server.Add(int64(time.Since(start)))
	}
	return resp, err
}

// callError classifies why a model call failed.
type callKind uint8

const (
	callOK callKind = iota
	// callRetry: unreachable, timed out, 429, 5xx, a garbled answer.
	callRetry
	// callContext: the request is longer than the model's context.
	callContext
	// callFatal: a refusal that a retry would not change (401, 404, 400).
	callFatal
	// callCancelled: the caller's context ended.
	callCancelled
)

// classify says what kind of failure err is. parent is the caller's
// context: its end is a cancellation, an attempt's own timeout is not.
func classify(parent context.Context, err error, body []byte) callKind {
	if err == nil {
		return callOK
	}
	if parent.Err() != nil {
		return callCancelled
	}
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		switch code := apiErr.StatusCode; {
		case code == http.StatusTooManyRequests || code == http.StatusRequestTimeout || code >= 500:
			return callRetry
		case isContextLength(apiErr, body):
			return callContext
		default:
			return callFatal
		}
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) {
		return callRetry
	}
	// Connection refused or reset, a body cut short, JSON the SDK could not
	// decode: the server's fault, worth another attempt.
	return callRetry
}

// contextPhrases are how servers say a request exceeds the model's
// context (OpenAI's code, vLLM, SGLang, llama.cpp, Ollama, TGI).
var contextPhrases = []string{
	"context_length_exceeded", "context length", "context_length", "maximum context",
	"context window", "context size", "exceed_context_size", "too many tokens", "prompt is too long", "input is too long",
}

func isContextLength(e *sdk.Error, body []byte) bool {
	if e.StatusCode != http.StatusBadRequest && e.StatusCode != http.StatusRequestEntityTooLarge {
		return false
	}
	text := strings.ToLower(e.Code + " " + e.Type + " " + e.Message + " " + e.RawJSON() + " " + string(body))
	for _, p := range contextPhrases {
		if strings.Contains(text, p) {
			return true
		}
	}
	return false
}

// callResult is one model call that answered, with its accounting.
type callResult struct {
	completion *sdk.ChatCompletion
	server     string
	latency    time.Duration
	overhead   time.Duration
	queued     time.Duration
	retries    int
}

// backoff is the jittered exponential backoff between attempts: a random
// delay in [d/2, d] where d doubles from base up to max.
type backoff struct {
	mu   sync.Mutex
	rng  *rand.Rand
	base time.Duration
	max  time.Duration
}

func (b *backoff) delay(retry int) time.Duration {
	d := b.base << min(retry, 20)
	if d > b.max || d <= 0 {
		d = b.max
	}
	b.mu.Lock()
	j := time.Duration(b.rng.Int64N(int64(d/2) + 1))
	b.mu.Unlock()
	return d/2 + j
}

// complete makes one model call: on the least loaded server, under its
// slots, each attempt bounded by the request timeout, failed attempts
// retried after a backoff. Errors: ctx's own on cancellation; a
// *contextError when the request is too long; else an infrastructure fault.
func (p *Policy) complete(ctx context.Context, params sdk.ChatCompletionNewParams) (callResult, error) {
	res := callResult{}
	start := time.Now()
	var waited time.Duration // queued for slots and asleep in backoff
	var last error
	for attempt := 0; ; attempt++ {
		s := p.pool.pick()
		q := time.Now()
		select {
		case s.slots <- struct{}{}:
		case <-ctx.Done():
			s.outstanding.Add(-1)
			return res, ctx.Err()
		}
		res.queued += time.Since(q)
		waited += time.Since(q)
		timing := &callTiming{}
		actx, cancel := context.WithTimeout(context.WithValue(ctx, timingKey{}, timing), p.cfg.RequestTimeout)
		c, err := s.client.Chat.Completions.New(actx, params)
		cancel()
		<-s.slots
		s.outstanding.Add(-1)
		s.requests.Add(1)
		res.overhead -= time.Duration(timing.server.Load())
		if err == nil && (c == nil || len(c.Choices) == 0) {
			err = errors.New("the answer has no choices")
		}
		timing.mu.Lock()
		body := timing.body
		timing.mu.Unlock()
		kind := classify(ctx, err, body)
		if kind != callOK && len(body) > 0 {
			err = fmt.Errorf("%w: %s", err, env.CutMiddle(string(body), 400))
		}
		if kind == callOK {
			res.completion, res.server, res.retries = c, s.url, attempt
			res.latency = time.Since(start)
			res.overhead += res.latency - waited
			return res, nil
		}
		s.failures.Add(1)
		last = fmt.Errorf("%s: %w", s.url, err)
		switch kind {
		case callCancelled:
			return res, ctx.Err()
		case callContext:
			return res, &contextError{err: last}
		case callFatal:
			return res, env.Infra(fmt.Errorf("model call refused: %w", last))
		}
		if attempt >= p.cfg.MaxRetries {
			return res, env.Infra(fmt.Errorf("model call failed after %d attempts: %w", attempt+1, last))
		}
		d := p.backoff.delay(attempt)
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return res, ctx.Err()
		}
		waited += d
	}
}

// contextError is a server's refusal of a request as too long.
type contextError struct{ err error }

func (e *contextError) Error() string { return e.err.Error() }
func (e *contextError) Unwrap() error { return e.err }
