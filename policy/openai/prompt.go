package openai

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/frognano/frog/env"
)

// PromptData is what the prompt templates see: the task as an agent may be
// told it, the tools exposed, and the step limit.
type PromptData struct {
	Task     env.TaskView
	Tools    []string
	MaxTurns int
}

// DefaultSystemPrompt is the system message unless Config.SystemPrompt
// replaces it.
const DefaultSystemPrompt = `You are a software engineer fixing a bug in a Go module. You work in a
sandbox holding the module's source; every path is relative to its root.
You act only through the tools ({{join .Tools ", "}}), one or more tool calls per
answer, and you have at most {{.MaxTurns}} tool calls in all. Find the bug, fix it
with edit, check with run_tests, then call submit: the task's tests decide
whether the bug is fixed. Do not change the tests.`

// DefaultTaskPrompt is the first user message unless Config.TaskPrompt
// replaces it.
const DefaultTaskPrompt = `{{with .Task.ProblemStatement}}{{.}}

{{end}}Module: {{.Task.Repo}}
Package directory: {{.Task.Dir}}
{{with .Task.FailToPass}}Tests that fail now and must pass: {{join . ", "}}
{{end}}{{with .Task.PassToPass}}Tests that must keep passing: {{join . ", "}}
{{end}}`

type prompts struct {
	system, task *promptTemplate
}

func newPrompts(c Config) (*prompts, error) {
	sys, task := c.SystemPrompt, c.TaskPrompt
	if sys == "" {
		sys = DefaultSystemPrompt
	}
	if task == "" {
		task = DefaultTaskPrompt
	}
	st, err := parseTemplate("system", sys)
	if err != nil {
		return nil, fmt.Errorf("system prompt template: %w", err)
	}
	tt, err := parseTemplate("task", task)
	if err != nil {
		return nil, fmt.Errorf("task prompt template: %w", err)
	}
	p := &prompts{system: st, task: tt}
	// A template that fails on a typical task fails here, not mid-run.
	if _, _, err := p.render(PromptData{Task: env.TaskView{ID: "t", Repo: "m", Dir: ".", FailToPass: []string{"TestA"}}, Tools: c.Tools, MaxTurns: c.MaxTurns}); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *prompts) render(d PromptData) (system, task string, err error) {
	var s, t strings.Builder
	if err := p.system.execute(&s, d); err != nil {
		return "", "", fmt.Errorf("system prompt template: %w", err)
	}
	if err := p.task.execute(&t, d); err != nil {
		return "", "", fmt.Errorf("task prompt template: %w", err)
	}
	return s.String(), t.String(), nil
}

// Message is one chat message in the OpenAI wire format's shape: what a
// request sends and what the export writes.
type Message struct {
	Role       string         `json:"role"`
	Content    string         `json:"content"`
	ToolCalls  []WireToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
	// Name is the tool a tool message answers (the field many chat
	// templates read).
	Name string `json:"name,omitempty"`
}

// WireToolCall is a tool call as the chat-completions format writes it.
type WireToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function WireFunction `json:"function"`
}

// WireFunction is a tool call's function and its arguments (a JSON string).
type WireFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

func wireCalls(calls []env.ToolCall) []WireToolCall {
	out := make([]WireToolCall, len(calls))
	for i, c := range calls {
		out[i] = WireToolCall{ID: c.ID, Type: "function", Function: WireFunction{Name: c.Name, Arguments: c.Arguments}}
	}
	return out
}

// conversation is a request's messages rebuilt from an episode's history,
// and the tool calls of the last answer not yet played.
type conversation struct {
	msgs []Message
	// results marks the messages that hold a step's result: the ones
	// elision may cut, oldest first.
	results []int
	// pending is the index of the next unplayed call of the last answer
	// (-1: none) and answer that answer's calls.
	pending int
	answer  []env.ToolCall
	// overflows counts the server's context-length refusals so far.
	overflows int
}

// rebuild makes the conversation an episode has had: system, task, then per
// step the model's answer (on the step that started it) and the step's
// result, as a tool message or, when the answer made no call, a user one.
func rebuild(system, task string, hist []env.Step) conversation {
	c := conversation{msgs: []Message{{Role: "system", Content: system}, {Role: "user", Content: task}}, pending: -1}
	var answer []env.ToolCall
	last := -1
	for i := range hist {
		st := &hist[i]
		t := st.Action.Turn
		if t == nil {
			// A step this policy did not choose: shown as a note.
			c.results = append(c.results, len(c.msgs))
			c.msgs = append(c.msgs, Message{Role: "user", Content: "step " + st.Action.Tool.String() + ": " + renderResult(&st.Result)})
			continue
		}
		if !t.Continues {
			if t.ContextExceeded {
				c.overflows++
				c.msgs = append(c.msgs, Message{Role: "user", Content: renderResult(&st.Result)})
				answer, last = nil, -1
				continue
			}
			answer, last = t.ToolCalls, -1
			c.msgs = append(c.msgs, Message{Role: "assistant", Content: t.Content, ToolCalls: wireCalls(answer)})
		}
		text := renderResult(&st.Result)
		if st.Action.Tool == env.ToolSubmit && st.Action.Mistake() == "" {
			text = "submitted"
		}
		c.results = append(c.results, len(c.msgs))
		if t.Call >= 0 && t.Call < len(answer) {
			c.msgs = append(c.msgs, Message{Role: "tool", Content: text, ToolCallID: answer[t.Call].ID, Name: answer[t.Call].Name})
			last = t.Call
		} else {
			c.msgs = append(c.msgs, Message{Role: "user", Content: text})
		}
	}
	if answer != nil && last+1 < len(answer) {
		c.pending, c.answer = last+1, answer
	}
	return c
}

// elide makes the messages fit budget bytes of JSON, and returns how many
// messages it cut and the bytes it took out. The oldest step results go
// first, each replaced by a note; then the older answers (content and tool
// call arguments), each cut in the middle to a short head and tail; last,
// when that is not enough (one answer or statement of megabytes), every
// text longer than an even share of what is left is cut in the middle to
// that share, the last answer's and the task's included. A cut says so
// where it was made. Only messages of hundreds of short results can stay
// over budget, by the notes that stand for them.
func (c *conversation) elide(budget int) (cut, bytes int) {
	if budget <= 0 {
		return 0, 0
	}
	// A text longer than the whole budget is cut to it first: it could not
	// be sent whole, and measuring it whole each request would cost more
	// than the request.
	touched := map[int]bool{}
	before := 0
	for i, m := range c.msgs {
		long := len(m.Content) > budget
		for _, t := range m.ToolCalls {
			long = long || len(t.Function.Arguments) > budget
		}
		if !long {
			continue
		}
		c.cutMessage(i, budget)
		before += approxSize(m) - msgSize(c.msgs[i]) // the rest with size, below
		touched[i] = true
	}
	size := 0
	for _, m := range c.msgs {
		size += msgSize(m)
	}
	before += size
	if size <= budget {
		return len(touched), before - size
	}
	// The last answer and its results are what the model must see next.
	keepFrom := len(c.msgs)
	for i := len(c.msgs) - 1; i >= 0; i-- {
		if c.msgs[i].Role == "assistant" {
			keepFrom = i
			break
		}
	}
	for _, i := range c.results {
		if size <= budget || i >= keepFrom {
			break
		}
		m := &c.msgs[i]
		note := fmt.Sprintf("[elided: %d bytes of an earlier result, cut to fit the context budget]", len(m.Content))
		if len(note) >= len(m.Content) {
			continue
		}
		size += jsonLen(note) - jsonLen(m.Content)
		m.Content = note
		touched[i] = true
	}
	for i := 0; i < keepFrom && size > budget; i++ {
		if c.msgs[i].Role != "assistant" {
			continue
		}
		old := msgSize(c.msgs[i])
		if c.cutMessage(i, oldAnswer) {
			size += msgSize(c.msgs[i]) - old
			touched[i] = true
		}
	}
	if size > budget {
		size = c.squeeze(budget, size, touched)
	}
	return len(touched), before - size
}

// oldAnswer is the bytes an older answer's content, or a call's arguments,
// keeps when cut: its head and tail.
const oldAnswer = 1 << 10

// minShare is the least a text keeps when everything is cut to a share.
const minShare = 256

// cutMessage cuts message i's content and each of its calls' arguments to
// at most n bytes of JSON, and says whether it cut anything.
func (c *conversation) cutMessage(i, n int) bool {
	m := &c.msgs[i]
	cut := false
	if jsonLen(m.Content) > n {
		m.Content = fitText(m.Content, n)
		cut = true
	}
	if len(m.ToolCalls) > 0 {
		calls := make([]WireToolCall, len(m.ToolCalls))
		copy(calls, m.ToolCalls)
		for j := range calls {
			if a := calls[j].Function.Arguments; jsonLen(a) > n {
				calls[j].Function.Arguments = cutArgs(a, n)
				cut = true
			}
		}
		m.ToolCalls = calls
	}
	return cut
}

// squeeze cuts every text (contents and arguments) longer than a share to
// that share, the share the largest with which the messages fit budget,
// and returns their size then. Escaping makes a cut text's size a little
// uncertain: it tries again, a few times, with what is left over.
func (c *conversation) squeeze(budget, size int, touched map[int]bool) int {
	for range 4 {
		var texts []int
		for _, m := range c.msgs {
			texts = append(texts, jsonLen(m.Content))
			for _, t := range m.ToolCalls {
				texts = append(texts, jsonLen(t.Function.Arguments))
			}
		}
		total := 0
		for _, n := range texts {
			total += n
		}
		room := budget - (size - total) // what the texts may hold
		fits := func(share int) bool {
			sum := 0
			for _, n := range texts {
				sum += min(n, share)
			}
			return sum <= room
		}
		lo, hi := minShare, max(minShare, slices.Max(texts))
		for lo < hi { // the largest share that fits, or minShare
			mid := lo + (hi-lo+1)/2
			if fits(mid) {
				lo = mid
			} else {
				hi = mid - 1
			}
		}
		for i := range c.msgs {
			if c.cutMessage(i, lo) {
				touched[i] = true
			}
		}
		size = 0
		for _, m := range c.msgs {
			size += msgSize(m)
		}
		if size <= budget || lo == minShare {
			return size
		}
	}
	return size
}

// fitText cuts s in the middle, with a note, to at most n bytes of JSON.
// It measures only what it keeps: s may be megabytes.
func fitText(s string, n int) string {
	if len(s) <= n && jsonLen(s) <= n {
		return s
	}
	keep := min(len(s), n)
	for {
		out := env.CutMiddle(s, keep)
		if jsonLen(out) <= n || keep <= minShare/4 {
			return out
		}
		keep = keep * 3 / 4
	}
}

// cutArgs cuts a call's arguments to at most about n bytes of JSON,
// keeping them JSON: an object's longest strings are cut in the middle
// until it fits; anything else becomes an object whose "elided" string
// holds their head and tail.
func cutArgs(args string, n int) string {
	var obj map[string]any
	if json.Unmarshal([]byte(args), &obj) == nil {
		for range 8 {
			out := marshalArgs(obj)
			over := jsonLen(out) - n
			if over <= 0 {
				return out
			}
			key, longest := "", 0
			for k, v := range obj {
				if s, ok := v.(string); ok && len(s) > longest {
					key, longest = k, len(s)
				}
			}
			if longest <= minShare/2 {
				break
			}
			obj[key] = env.CutMiddle(obj[key].(string), max(longest-over-64, minShare/2))
		}
	}
	for keep := max(n/3, minShare/2); ; keep = keep * 3 / 4 {
		out := marshalArgs(map[string]any{"elided": env.CutMiddle(args, keep)})
		if jsonLen(out) <= n || keep <= minShare/4 {
			return out
		}
	}
}

func marshalArgs(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "{}"
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// approxSize is a message's bytes in a request's JSON without escaping:
// what a message too long to measure weighs.
func approxSize(m Message) int {
	n := len(m.Content) + len(m.ToolCallID) + len(m.Name) + 64
	for _, t := range m.ToolCalls {
		n += len(t.ID) + len(t.Function.Name) + len(t.Function.Arguments) + 80
	}
	return n
}

// msgSize bounds a message's bytes in a request's JSON: its texts as JSON
// strings and the fields around them.
func msgSize(m Message) int {
	n := jsonLen(m.Content) + jsonLen(m.ToolCallID) + jsonLen(m.Name) + 64
	for _, t := range m.ToolCalls {
		n += jsonLen(t.ID) + jsonLen(t.Function.Name) + jsonLen(t.Function.Arguments) + 80
	}
	return n
}

// jsonLen is the length of s as the body of a JSON string, as
// encoding/json writes it (HTML escaped): what a text costs in a request.
func jsonLen(s string) int {
	n := len(s)
	for i := 0; i < len(s); i++ {
		switch b := s[i]; {
		case b == '"' || b == '\\' || b == '\n' || b == '\r' || b == '\t':
			n++
		case b < 0x20 || b == '<' || b == '>' || b == '&':
			n += 5
		case b >= 0x80:
			// Invalid UTF-8 is written as \ufffd (3 bytes), U+2028 and
			// U+2029 as \u2028 (6): count them at most at 6 a byte.
			if r, size := utf8.DecodeRuneInString(s[i:]); r == utf8.RuneError && size == 1 {
				n += 2
			} else if r == '\u2028' || r == '\u2029' {
				n += 3
				i += size - 1
			} else {
				i += size - 1
			}
		}
	}
	return n
}

// taskMessage renders the task's message for requests of budget bytes:
// cut in the middle to a quarter of the budget (its statement may be a log
// of megabytes), the same in every request of an episode and in its
// export, which records what the model was sent. It returns the bytes cut.
func (p *prompts) taskMessage(d PromptData, budget int) (system, task string, cut int, err error) {
	if budget > 0 && len(d.Task.ProblemStatement) > budget {
		d.Task.ProblemStatement = env.CutMiddle(d.Task.ProblemStatement, budget)
	}
	system, task, err = p.render(d)
	if err != nil || budget <= 0 {
		return system, task, 0, err
	}
	short := fitText(task, budget/4)
	return system, short, len(task) - len(short), nil
}

// renderResult is a step's result as the model is shown it.
func renderResult(r *env.StepResult) string {
	var b strings.Builder
	b.WriteString(r.Output)
	if rep := r.Tests(); rep != nil {
		for _, t := range rep.Tests {
			if t.Status == env.TestPass || t.Status == env.TestSkip {
				continue
			}
			fmt.Fprintf(&b, "\n--- %s: %s", t.Name, strings.ToUpper(string(t.Status)))
			if t.File != "" {
				fmt.Fprintf(&b, " at %s:%d", t.File, t.Line)
			}
			if t.Message != "" {
				fmt.Fprintf(&b, "\n%s", strings.TrimRight(t.Message, "\n"))
			}
			for _, f := range t.Frames {
				fmt.Fprintf(&b, "\n    %s %s:%d", f.Func, f.File, f.Line)
			}
		}
	}
	if cov := r.Coverage(); cov != nil {
		names := make([]string, 0, len(cov.Tests))
		for n := range cov.Tests {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			verdict := "fails"
			if cov.Passed[n] {
				verdict = "passes"
			}
			fmt.Fprintf(&b, "\n%s (%s) runs:", n, verdict)
			for _, bi := range cov.Tests[n] {
				if bi >= 0 && bi < len(cov.Blocks) {
					bl := cov.Blocks[bi]
					fmt.Fprintf(&b, " %s:%d-%d", bl.File, bl.Start, bl.End)
				}
			}
		}
	}
	for _, c := range r.Candidates() {
		fmt.Fprintf(&b, "\n%d: %s:%d %s", c.ID, c.File, c.Line, c.Desc)
	}
	if s := r.Stdout(); s != "" {
		b.WriteString("\nstdout:\n" + s)
	}
	if s := r.Stderr(); s != "" {
		b.WriteString("\nstderr:\n" + s)
	}
	if r.TimedOut() {
		b.WriteString("\n(timed out)")
	}
	if b.Len() == 0 {
		return "ok"
	}
	return env.CutMiddle(b.String(), maxResult)
}

// maxResult caps the bytes of one step's result in a request.
const maxResult = 16 << 10
