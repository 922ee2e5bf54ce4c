package openai

import (
	"fmt"
	"sort"
	"strings"
	"text/template"

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
	system, task *template.Template
}

func newPrompts(c Config) (*prompts, error) {
	funcs := template.FuncMap{"join": strings.Join}
	sys, task := c.SystemPrompt, c.TaskPrompt
	if sys == "" {
		sys = DefaultSystemPrompt
	}
	if task == "" {
		task = DefaultTaskPrompt
	}
	st, err := template.New("system").Funcs(funcs).Parse(sys)
	if err != nil {
		return nil, fmt.Errorf("system prompt template: %w", err)
	}
	tt, err := template.New("task").Funcs(funcs).Parse(task)
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
	if err := p.system.Execute(&s, d); err != nil {
		return "", "", fmt.Errorf("system prompt template: %w", err)
	}
	if err := p.task.Execute(&t, d); err != nil {
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
		if st.Action.Tool == env.ToolSubmit && st.Action.Mistake == "" {
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

// elide cuts the oldest step results (never the last answer's) until the
// messages fit budget bytes, and returns how many it cut.
func (c *conversation) elide(budget int) int {
	if budget <= 0 {
		return 0
	}
	size := 0
	for _, m := range c.msgs {
		size += msgSize(m)
	}
	// The results of the last answer are what the model must see next.
	keepFrom := len(c.msgs)
	for i := len(c.msgs) - 1; i >= 0; i-- {
		if c.msgs[i].Role == "assistant" {
			keepFrom = i
			break
		}
	}
	n := 0
	for _, i := range c.results {
		if size <= budget || i >= keepFrom {
			break
		}
		m := &c.msgs[i]
		note := fmt.Sprintf("[elided: %d bytes of an earlier result, cut to fit the context budget]", len(m.Content))
		if len(note) >= len(m.Content) {
			continue
		}
		size -= len(m.Content) - len(note)
		m.Content = note
		n++
	}
	return n
}

func msgSize(m Message) int {
	n := len(m.Content) + 16
	for _, t := range m.ToolCalls {
		n += len(t.ID) + len(t.Function.Name) + len(t.Function.Arguments) + 16
	}
	return n
}

// renderResult is a step's result as the model is shown it.
func renderResult(r *env.StepResult) string {
	var b strings.Builder
	b.WriteString(r.Output)
	if r.Tests != nil {
		for _, t := range r.Tests.Tests {
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
	if cov := r.Coverage; cov != nil {
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
	for _, c := range r.Candidates {
		fmt.Fprintf(&b, "\n%d: %s:%d %s", c.ID, c.File, c.Line, c.Desc)
	}
	if r.Stdout != "" {
		b.WriteString("\nstdout:\n" + r.Stdout)
	}
	if r.Stderr != "" {
		b.WriteString("\nstderr:\n" + r.Stderr)
	}
	if r.TimedOut {
		b.WriteString("\n(timed out)")
	}
	if b.Len() == 0 {
		return "ok"
	}
	return env.CutMiddle(b.String(), maxResult)
}

// maxResult caps the bytes of one step's result in a request.
const maxResult = 16 << 10
