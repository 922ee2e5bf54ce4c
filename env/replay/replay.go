package replay

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/frognano/frog/env"
)

// ErrNotReplayable is what a replay answers to a call its table cannot
// answer: a state the table's search never reached (an edit of the agent's
// own, a partial fix kept, candidates at other lines, a test named). It
// wraps env.ErrInfra, so that such an episode ends as an infrastructure
// fault, never scored: a guessed verdict would not be a replay.
var ErrNotReplayable = env.Infra(errors.New("not replayable"))

// Env is a replay of a table: a Provider of sandboxes that hold only the
// files the table records, and the Harness that answers from the table.
// It is safe for concurrent use; nothing in it blocks.
type Env struct {
	table *Table
	tasks map[string]*entry
	st    stats
}

// entry is one task's record and its verdicts by the content they judge.
type entry struct {
	rec *Record
	// verdicts maps a changed file and its content (file + "\x00" +
	// content) to the verdict of the workspace that holds it.
	verdicts map[string]env.Verdict
}

type stats struct {
	opened, closed, calls atomic.Int64
	mu                    sync.Mutex
	not                   map[string]int64
}

// New makes the replay of t. A candidate whose recorded edits do not apply
// to its recorded file is an error: the table is not sound.
func New(t *Table) (*Env, error) {
	e := &Env{table: t, tasks: make(map[string]*entry, len(t.Records))}
	for i := range t.Records {
		rec := &t.Records[i]
		en := &entry{rec: rec, verdicts: map[string]env.Verdict{}}
		for _, v := range rec.Verdicts {
			c := rec.Candidates[v.Candidate]
			data, err := env.Splice([]byte(rec.Files[c.File]), c.Edits)
			if err != nil {
				return nil, fmt.Errorf("task %s: candidate %d: %w", rec.Task.ID, v.Candidate, err)
			}
			en.verdicts[c.File+"\x00"+string(data)] = v.Verdict
		}
		e.tasks[rec.Task.ID] = en
	}
	return e, nil
}

// Table is the table e replays.
func (e *Env) Table() *Table { return e.table }

var (
	_ env.Provider      = (*Env)(nil)
	_ env.ProviderStats = (*Env)(nil)
	_ env.Immediate     = (*Env)(nil)
	_ env.Harness       = (*Env)(nil)
	_ env.Sandbox       = (*sandbox)(nil)
)

// Immediate reports true: a replay never waits.
func (e *Env) Immediate() bool { return true }

// Open opens a sandbox of opts.Task: its recorded files, nothing else. A
// task the table does not hold is not replayable.
func (e *Env) Open(ctx context.Context, opts env.OpenOptions) (env.Sandbox, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if opts.Task == nil {
		return nil, env.Infra(errors.New("replay: open without a task"))
	}
	en, err := e.entry(opts.Task, "open")
	if err != nil {
		return nil, err
	}
	e.st.opened.Add(1)
	return &sandbox{e: e, en: en, written: map[string][]byte{}}, nil
}

// Stats counts the sandboxes opened and closed; Faults counts the calls
// that were not replayable, by tool ("not-replayable:<tool>").
func (e *Env) Stats() env.SandboxStats {
	s := env.SandboxStats{Opened: e.st.opened.Load(), Closed: e.st.closed.Load()}
	s.Live = s.Opened - s.Closed
	e.st.mu.Lock()
	defer e.st.mu.Unlock()
	if len(e.st.not) > 0 {
		s.Faults = map[string]int64{}
		for k, v := range e.st.not {
			s.Faults["not-replayable:"+k] = v
		}
	}
	return s
}

// Report is what a replay did: the calls it answered from the table and
// those it could not, by tool. Tasks are the table's tasks, LeftOut the
// store's tasks its making left out (the task check's quarantine among
// them): a replay checks no task itself, frog tabulate did.
type Report struct {
	Table         string           `json:"table"`
	Tasks         int              `json:"tasks"`
	LeftOut       int              `json:"left_out"`
	Answered      int64            `json:"answered"`
	NotReplayable map[string]int64 `json:"not_replayable,omitempty"`
}

// Report is e's report so far; name names the table.
func (e *Env) Report(name string) Report {
	r := Report{Table: name, Tasks: len(e.tasks), LeftOut: e.table.LeftOutTotal(), Answered: e.st.calls.Load()}
	e.st.mu.Lock()
	defer e.st.mu.Unlock()
	if len(e.st.not) > 0 {
		r.NotReplayable = map[string]int64{}
		for k, v := range e.st.not {
			r.NotReplayable[k] = v
		}
	}
	return r
}

// Unanswered is how many calls were not replayable, of every tool.
func (r Report) Unanswered() int64 {
	var n int64
	for _, k := range r.NotReplayable {
		n += k
	}
	return n
}

// entry is task's, or ErrNotReplayable.
func (e *Env) entry(task *env.Task, tool string) (*entry, error) {
	en := e.tasks[task.ID]
	if en == nil {
		return nil, e.not(task, tool, "the table does not hold the task")
	}
	return en, nil
}

// not counts a call the table cannot answer and returns its error.
func (e *Env) not(task *env.Task, tool, why string) error {
	e.st.mu.Lock()
	if e.st.not == nil {
		e.st.not = map[string]int64{}
	}
	e.st.not[tool]++
	e.st.mu.Unlock()
	return fmt.Errorf("replay of task %s: %s: %s: %w", task.ID, tool, why, ErrNotReplayable)
}

// start returns task's entry when ws is the task's start, or
// ErrNotReplayable.
func (e *Env) start(ws *env.Workspace, tool string) (*entry, error) {
	en, err := e.entry(ws.Task, tool)
	if err != nil {
		return nil, err
	}
	if ws.Hash() != "" {
		return nil, e.not(ws.Task, tool, "the workspace was changed, and the table holds the task's start only")
	}
	return en, nil
}

// replayed is the cost of a call the table answered: no test ran.
var replayed = env.Cost{Cached: true}

// RunTests answers the deciding tests' report at the start.
func (e *Env) RunTests(ctx context.Context, _ env.Sandbox, ws *env.Workspace, tests []string) (env.TestReport, env.Cost, error) {
	en, err := e.start(ws, "run_tests")
	if err != nil {
		return env.TestReport{}, env.Cost{}, err
	}
	if len(tests) > 0 {
		return env.TestReport{}, env.Cost{}, e.not(ws.Task, "run_tests", "tests named: the table holds the deciding tests' run")
	}
	if en.rec.Tests == nil {
		return env.TestReport{}, env.Cost{}, e.not(ws.Task, "run_tests", "the search had no report of the tests")
	}
	e.st.calls.Add(1)
	return *en.rec.Tests, replayed, ctx.Err()
}

// Coverage answers the deciding tests' coverage at the start.
func (e *Env) Coverage(ctx context.Context, _ env.Sandbox, ws *env.Workspace, tests []string) (env.CoverageReport, env.Cost, error) {
	en, err := e.start(ws, "coverage")
	if err != nil {
		return env.CoverageReport{}, env.Cost{}, err
	}
	if len(tests) > 0 {
		return env.CoverageReport{}, env.Cost{}, e.not(ws.Task, "coverage", "tests named: the table holds the deciding tests' coverage")
	}
	if en.rec.Coverage == nil {
		return env.CoverageReport{}, env.Cost{}, e.not(ws.Task, "coverage", "the search had no coverage")
	}
	e.st.calls.Add(1)
	return *en.rec.Coverage, replayed, ctx.Err()
}

// Candidates answers the list at the start, at exactly the lines the
// search asked for.
func (e *Env) Candidates(ctx context.Context, _ env.Sandbox, ws *env.Workspace, lines []env.Line) ([]env.Candidate, error) {
	en, err := e.start(ws, "candidates")
	if err != nil {
		return nil, err
	}
	if !en.rec.Listed || !slices.Equal(lines, en.rec.Lines) {
		return nil, e.not(ws.Task, "candidates", "other lines than the table's protocol asked for")
	}
	e.st.calls.Add(1)
	return slices.Clone(en.rec.Candidates), ctx.Err()
}

// Try answers each candidate's recorded try at the start.
func (e *Env) Try(ctx context.Context, _ env.Sandbox, ws *env.Workspace, list []env.Candidate, ids []int) ([]env.TryResult, env.Cost, error) {
	en, err := e.start(ws, "try")
	if err != nil {
		return nil, env.Cost{}, err
	}
	rec := en.rec
	out := make([]env.TryResult, 0, len(ids))
	for _, id := range ids {
		if id < 0 || id >= len(list) || id >= len(rec.Candidates) || !sameEdit(&list[id], &rec.Candidates[id]) {
			return nil, env.Cost{}, e.not(ws.Task, "try", fmt.Sprintf("candidate %d is not the table's", id))
		}
		tr := rec.Tries[id]
		tr.Cached = true
		out = append(out, tr)
	}
	e.st.calls.Add(1)
	return out, replayed, ctx.Err()
}

// Verdict answers the verdict of the start, or of the start with one of
// the candidates whose tries passed applied.
func (e *Env) Verdict(ctx context.Context, _ env.Sandbox, ws *env.Workspace) (env.Verdict, env.Cost, error) {
	en, err := e.entry(ws.Task, "verdict")
	if err != nil {
		return env.Verdict{}, env.Cost{}, err
	}
	changed := ws.Changed()
	switch len(changed) {
	case 0:
		e.st.calls.Add(1)
		return en.rec.Start, replayed, ctx.Err()
	case 1:
		for f, data := range changed {
			if v, ok := en.verdicts[f+"\x00"+string(data)]; ok {
				e.st.calls.Add(1)
				return v, replayed, ctx.Err()
			}
		}
	}
	return env.Verdict{}, env.Cost{}, e.not(ws.Task, "verdict", "a workspace the table holds no verdict of (only the start, and the start with one passing candidate applied)")
}

// sameEdit reports whether a and b are the same repair.
func sameEdit(a, b *env.Candidate) bool {
	return a.File == b.File && a.Line == b.Line && a.Op == b.Op && slices.Equal(a.Edits, b.Edits)
}

// sandbox is a replay's sandbox: the task's recorded files, and what the
// episode wrote. It runs no command.
type sandbox struct {
	e       *Env
	en      *entry
	written map[string][]byte
	closed  bool
}

func (s *sandbox) Exec(_ context.Context, opts env.ExecOptions) (env.ExecResult, error) {
	if s.closed {
		return env.ExecResult{}, env.ErrClosed
	}
	name := "exec"
	if len(opts.Cmd) > 0 {
		name = "exec " + opts.Cmd[0]
	}
	return env.ExecResult{}, s.e.not(&s.en.rec.Task, name, "a replay runs no command")
}

func (s *sandbox) ReadFile(_ context.Context, path string) ([]byte, error) {
	if s.closed {
		return nil, env.ErrClosed
	}
	if data, ok := s.written[path]; ok {
		return slices.Clone(data), nil
	}
	if data, ok := s.en.rec.Files[path]; ok {
		return []byte(data), nil
	}
	return nil, s.e.not(&s.en.rec.Task, "read", "the table does not hold "+path)
}

func (s *sandbox) WriteFile(_ context.Context, path string, data []byte) error {
	if s.closed {
		return env.ErrClosed
	}
	s.written[path] = slices.Clone(data)
	return nil
}

func (s *sandbox) Close(context.Context) error {
	if !s.closed {
		s.closed = true
		s.e.st.closed.Add(1)
	}
	return nil
}
