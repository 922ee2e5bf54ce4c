package openai

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/policy"
)

// Record is one episode as the export writes it: a JSON line of a shard.
// Messages are the conversation in the chat-completions format (system,
// user, assistant with tool_calls, tool results), whole: the export elides
// nothing the model said or was shown, but for the task's message, which
// it records as the requests sent it (cut to the context budget). Reward and Advantage are null unless the episode completed;
// Advantage is GRPO's (r − mean)/(std + ε) over the completed episodes of
// its group. docs/llm.md has the schema and how trainers read it.
type Record struct {
	Messages []Message `json:"messages"`
	// Tools are the function tools the model was offered, in the
	// chat-completions format.
	Tools     []ToolDef `json:"tools"`
	Reward    *float64  `json:"reward"`
	Advantage *float64  `json:"advantage"`
	TaskID    string    `json:"task_id"`
	GroupID   string    `json:"group_id"`
	GroupSize int       `json:"group_size"`
	Episode   uint64    `json:"episode"`
	// Outcome is completed, failed_infra or cancelled; only completed
	// records are for training.
	Outcome   string `json:"outcome"`
	Submitted bool   `json:"submitted"`
	Attempts  int    `json:"attempts"`
	// PolicyVersion is the oldest version among the episode's actions (the
	// policy server's); TrainerVersion the oldest the external trainer had
	// announced at the episode's model calls (-1: none announced).
	PolicyVersion    int64  `json:"policy_version"`
	TrainerVersion   int64  `json:"trainer_version"`
	Model            string `json:"model"`
	PromptTokens     int    `json:"prompt_tokens"`
	CompletionTokens int    `json:"completion_tokens"`
	Steps            int    `json:"steps"`
	Mistakes         int    `json:"mistakes"`
	// Turns hold each model call's record, aligned with the assistant
	// messages (Turns[i].Message is the index in Messages).
	Turns []TurnRecord `json:"turns"`
}

// ToolDef is a function tool as the chat-completions format writes it.
type ToolDef struct {
	Type     string      `json:"type"`
	Function FunctionDef `json:"function"`
}

// FunctionDef is a tool's name, description and JSON-schema parameters.
type FunctionDef struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Parameters  map[string]any `json:"parameters"`
}

// TurnRecord is one model call of an exported episode.
type TurnRecord struct {
	Message          int       `json:"message"`
	PromptTokens     int       `json:"prompt_tokens"`
	CompletionTokens int       `json:"completion_tokens"`
	Tokens           []string  `json:"tokens"`
	LogProbs         []float64 `json:"logprobs"`
	FinishReason     string    `json:"finish_reason"`
	RequestHash      string    `json:"request_hash"`
	Elided           int       `json:"elided"`
	LatencyMS        float64   `json:"latency_ms"`
	Retries          int       `json:"retries"`
	Server           string    `json:"server"`
	Version          int64     `json:"policy_version"`
}

// Episode is what the exporter needs of one ended episode.
type Episode struct {
	Episode   uint64
	Group     uint64
	GroupSize int
	Task      env.TaskView
	// Outcome is "completed", "failed_infra" or "cancelled"; Trajectory is
	// set for completed ones.
	Outcome    string
	Trajectory *env.Trajectory
	Attempts   int
}

// ToolDefs are the tools p offers, as the export writes them.
func (p *Policy) ToolDefs() []ToolDef {
	out := make([]ToolDef, 0, len(p.cfg.Tools))
	for _, name := range p.cfg.Tools {
		s := toolSpecs[name]
		out = append(out, ToolDef{Type: "function", Function: FunctionDef{Name: name, Description: s.desc, Parameters: s.params}})
	}
	return out
}

// Messages is an episode's whole conversation as the model had it: its
// task's message as every request sent it (cut to a quarter of the context
// budget), then every answer and result whole (unelided), ending with the
// last action's result.
func (p *Policy) Messages(task env.TaskView, traj *env.Trajectory) ([]Message, error) {
	system, prompt, _, err := p.prompts.taskMessage(PromptData{Task: task, Tools: p.cfg.Tools, MaxTurns: p.cfg.MaxTurns}, p.budget(0))
	if err != nil {
		return nil, err
	}
	return rebuild(system, prompt, traj.Steps).msgs, nil
}

// Record makes the export record of one episode; adv is its advantage
// (nil: none).
func (p *Policy) Record(ep Episode, adv *float64) (Record, error) {
	r := Record{
		Tools: p.ToolDefs(), Advantage: adv, TaskID: ep.Task.ID, GroupID: fmt.Sprintf("g%d", ep.Group), GroupSize: ep.GroupSize,
		Episode: ep.Episode, Outcome: ep.Outcome, Attempts: ep.Attempts, Model: p.cfg.Model, PolicyVersion: -1, TrainerVersion: -1,
		Messages: []Message{}, Turns: []TurnRecord{},
	}
	if ep.Trajectory == nil {
		return r, nil
	}
	tr := ep.Trajectory
	msgs, err := p.Messages(ep.Task, tr)
	if err != nil {
		return r, err
	}
	r.Messages = msgs
	reward := tr.Reward
	r.Reward, r.Submitted, r.Steps, r.PolicyVersion = &reward, tr.Submitted, len(tr.Steps), tr.MinVersion()
	r.TrainerVersion = oldestTrainerVersion(tr.Steps)
	// The assistant messages, in order, are the turns that did not continue
	// an answer and were not context refusals.
	var asst []int
	for i, m := range msgs {
		if m.Role == "assistant" {
			asst = append(asst, i)
		}
	}
	k := 0
	for _, st := range tr.Steps {
		if st.Action.Mistake() != "" {
			r.Mistakes++
		}
		t := st.Action.Turn
		if t == nil || t.Continues {
			continue
		}
		r.PromptTokens += t.PromptTokens
		r.CompletionTokens += t.CompletionTokens
		if t.ContextExceeded {
			continue
		}
		tr := TurnRecord{
			Message: -1, PromptTokens: t.PromptTokens, CompletionTokens: t.CompletionTokens, FinishReason: t.FinishReason,
			RequestHash: t.RequestHash, Elided: t.Elided, LatencyMS: float64(t.Latency.Microseconds()) / 1000, Retries: t.Retries,
			Server: t.Server, Version: st.Action.Version, Tokens: []string{}, LogProbs: []float64{},
		}
		if k < len(asst) {
			tr.Message = asst[k]
		}
		k++
		for _, lp := range t.LogProbs {
			tr.Tokens = append(tr.Tokens, lp.Token)
			tr.LogProbs = append(tr.LogProbs, lp.LogProb)
		}
		r.Turns = append(r.Turns, tr)
	}
	return r, nil
}

// Exporter gathers ended episodes into their groups and, when a group is
// whole, computes its advantages and hands its records to sink. Add may be
// called from any goroutine; sink is called with the exporter's lock held,
// one group at a time, and its error is kept (the first) and returned by
// Close. Records of groups that never became whole are written by Close,
// with the advantages of the members there are.
type Exporter struct {
	p    *Policy
	sink func(Record) error

	mu      sync.Mutex
	groups  map[uint64][]Episode
	err     error
	records int64
	written int64
}

// NewExporter exports p's episodes to sink.
func NewExporter(p *Policy, sink func(Record) error) *Exporter {
	return &Exporter{p: p, sink: sink, groups: map[uint64][]Episode{}}
}

// Add files one ended episode.
func (e *Exporter) Add(ep Episode) {
	e.mu.Lock()
	defer e.mu.Unlock()
	g := append(e.groups[ep.Group], ep)
	if len(g) < ep.GroupSize {
		e.groups[ep.Group] = g
		return
	}
	delete(e.groups, ep.Group)
	e.flush(g)
}

func (e *Exporter) flush(g []Episode) {
	sort.Slice(g, func(i, j int) bool { return g[i].Episode < g[j].Episode })
	var rewards []float64
	var idx []int
	for i, ep := range g {
		if ep.Outcome == "completed" && ep.Trajectory != nil {
			rewards = append(rewards, ep.Trajectory.Reward)
			idx = append(idx, i)
		}
	}
	adv := make([]float64, len(rewards))
	policy.Advantages(rewards, adv, policy.Epsilon)
	advOf := map[int]*float64{}
	for j, i := range idx {
		advOf[i] = &adv[j]
	}
	for i, ep := range g {
		r, err := e.p.Record(ep, advOf[i])
		if err == nil && e.err == nil {
			err = e.sink(r)
		}
		e.records++
		if err != nil {
			if e.err == nil {
				e.err = err
			}
			continue
		}
		e.written++
	}
}

// Close writes the groups still open and returns the first error.
func (e *Exporter) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	keys := make([]uint64, 0, len(e.groups))
	for k := range e.groups {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	for _, k := range keys {
		e.flush(e.groups[k])
		delete(e.groups, k)
	}
	return e.err
}

// Written is how many records the sink took.
func (e *Exporter) Written() int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.written
}

// ReadShards reads every record of the shard-*.jsonl files in dir, in
// shard order; a line that is not a record is an error naming it.
func ReadShards(dir string) ([]Record, error) {
	names, err := filepath.Glob(filepath.Join(dir, "shard-*.jsonl"))
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%s: no shard-*.jsonl", dir)
	}
	sort.Strings(names)
	var out []Record
	for _, name := range names {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 0, 1<<20), 256<<20)
		line := 0
		for sc.Scan() {
			line++
			var r Record
			dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&r); err != nil {
				f.Close()
				return nil, fmt.Errorf("%s:%d: %w", name, line, err)
			}
			out = append(out, r)
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	return out, nil
}
