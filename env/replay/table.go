package replay

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/frognano/frog/env"
)

// Format is the version of the table's file format this frog writes and
// reads. A table of another version is refused, not guessed at.
const Format = 1

// Header is a table's first line: what made it and from what.
type Header struct {
	Kind   string `json:"kind"` // "header"
	Format int    `json:"format"`
	// Version is the frog version that wrote the table (its candidate
	// templates and features are that frog's code).
	Version string `json:"frog_version"`
	// Store is the task store the table was made from and StoreHash the
	// SHA-256 of its bytes.
	Store     string `json:"store"`
	StoreHash string `json:"store_sha256"`
	// Settings are how the verdicts were had: the repair protocol whose
	// candidate lists were searched, the sandbox and the harness's options.
	// A replay of a policy on another protocol is refused.
	Settings Settings `json:"settings"`
}

// Settings are the harness settings a table records. Protocol is the
// repair protocol (policy/repair.Config) as JSON: the table's package sits
// below the policies and keeps it as data.
type Settings struct {
	Protocol json.RawMessage `json:"protocol"`
	Sandbox  string          `json:"sandbox"`
	MaxSteps int             `json:"max_steps"`
	NoCache  bool            `json:"no_outcome_cache,omitempty"`
}

// Record is one task of a table: what an episode of the built-in repair
// policy can observe at the task's start and every candidate's verdict.
type Record struct {
	Kind string   `json:"kind"` // "task"
	Task env.Task `json:"task"`
	// Module, Family and K label the task in reports (its store record's
	// module, operator family and number of bugs).
	Module string `json:"module,omitempty"`
	Family string `json:"family,omitempty"`
	K      int    `json:"k,omitempty"`
	// Tests is the deciding tests' report at the start (run_tests with no
	// names), Coverage their coverage (coverage with no names); nil when
	// the search did not get them (the policy then stops there too).
	Tests    *env.TestReport     `json:"tests"`
	Coverage *env.CoverageReport `json:"coverage"`
	// Listed says candidates were listed: at Lines, in the order asked,
	// the harness made Candidates; Tries[i] is the result of trying
	// Candidates[i] at the start.
	Listed     bool            `json:"listed"`
	Lines      []env.Line      `json:"lines"`
	Candidates []env.Candidate `json:"candidates"`
	Tries      []env.TryResult `json:"tries"`
	// Verdicts are the verdicts of the workspace with one candidate
	// applied, for every candidate whose try passed every deciding test
	// (the only ones the protocol applies). Start is the verdict of the
	// workspace as the task starts (a submit without an edit).
	Verdicts []CandidateVerdict `json:"verdicts"`
	Start    env.Verdict        `json:"start_verdict"`
	// Files holds the starting content of the files Verdicts' candidates
	// edit: what an apply reads before it splices.
	Files map[string]string `json:"files"`
	// Executions are the test runs each call cost the search, by tool name
	// (run_tests, coverage, try: all the list's tries in one), for costs.
	Executions map[string]int `json:"executions"`
}

// CandidateVerdict is the verdict of a workspace with candidate Candidate
// applied. Real says a real build decided it (the search applied that
// candidate and submitted); otherwise it is the candidate's try, a run of
// every deciding test through the task's schema binary.
type CandidateVerdict struct {
	Candidate int `json:"candidate"`
	env.Verdict
	Real bool `json:"real"`
}

// End is a table's last line: its counts. A file without it was cut short
// and is refused.
type End struct {
	Kind  string `json:"kind"` // "end"
	Tasks int    `json:"tasks"`
	// LeftOut counts the store's tasks the table leaves out, by reason
	// (the task check's, or the search's).
	LeftOut map[string]int `json:"left_out"`
}

// Table is a replay table: its header, its tasks and what it left out.
type Table struct {
	Header  Header
	Records []Record
	LeftOut map[string]int
}

// Encode writes t as JSON lines: the header, a line a task, the end.
func (t *Table) Encode(w io.Writer) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	h := t.Header
	h.Kind, h.Format = "header", Format
	if err := enc.Encode(h); err != nil {
		return err
	}
	for i := range t.Records {
		r := t.Records[i]
		r.Kind = "task"
		if err := enc.Encode(r); err != nil {
			return fmt.Errorf("task %s: %w", r.Task.ID, err)
		}
	}
	left := t.LeftOut
	if left == nil {
		left = map[string]int{}
	}
	if err := enc.Encode(End{Kind: "end", Tasks: len(t.Records), LeftOut: left}); err != nil {
		return err
	}
	return bw.Flush()
}

// Decode reads a table Encode wrote; name names it in errors. A table of
// another format, one cut short (no end line, or a count that does not
// match) and a task listed twice are errors.
func Decode(r io.Reader, name string) (*Table, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 1<<30)
	t := &Table{}
	line, ended := 0, false
	seen := map[string]bool{}
	for sc.Scan() {
		line++
		b := sc.Bytes()
		var kind struct {
			Kind string `json:"kind"`
		}
		if err := json.Unmarshal(b, &kind); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		switch {
		case ended:
			return nil, fmt.Errorf("%s:%d: a line after the end record", name, line)
		case line == 1 && kind.Kind != "header":
			return nil, fmt.Errorf("%s: not a replay table (its first line is no header; frog tabulate writes them)", name)
		case kind.Kind == "header":
			if line != 1 {
				return nil, fmt.Errorf("%s:%d: a second header", name, line)
			}
			if err := json.Unmarshal(b, &t.Header); err != nil {
				return nil, fmt.Errorf("%s:%d: header: %w", name, line, err)
			}
			if t.Header.Format != Format {
				return nil, fmt.Errorf("%s: table format %d, and this frog reads format %d: tabulate again", name, t.Header.Format, Format)
			}
		case kind.Kind == "task":
			var rec Record
			if err := json.Unmarshal(b, &rec); err != nil {
				return nil, fmt.Errorf("%s:%d: %w", name, line, err)
			}
			if err := rec.check(); err != nil {
				return nil, fmt.Errorf("%s:%d: task %s: %w", name, line, rec.Task.ID, err)
			}
			if seen[rec.Task.ID] {
				return nil, fmt.Errorf("%s:%d: task %s is listed twice", name, line, rec.Task.ID)
			}
			seen[rec.Task.ID] = true
			t.Records = append(t.Records, rec)
		case kind.Kind == "end":
			var end End
			if err := json.Unmarshal(b, &end); err != nil {
				return nil, fmt.Errorf("%s:%d: %w", name, line, err)
			}
			if end.Tasks != len(t.Records) {
				return nil, fmt.Errorf("%s: the end record counts %d tasks, and the table holds %d", name, end.Tasks, len(t.Records))
			}
			t.LeftOut, ended = end.LeftOut, true
		default:
			return nil, fmt.Errorf("%s:%d: unknown record kind %q", name, line, kind.Kind)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if line == 0 {
		return nil, fmt.Errorf("%s: empty: not a replay table", name)
	}
	if !ended {
		return nil, fmt.Errorf("%s: cut short (no end record after line %d)", name, line)
	}
	return t, nil
}

// check says what in a record does not hold together.
func (r *Record) check() error {
	switch {
	case r.Task.ID == "":
		return errors.New("no task id")
	case len(r.Tries) != len(r.Candidates):
		return fmt.Errorf("%d tries of %d candidates", len(r.Tries), len(r.Candidates))
	}
	for i, c := range r.Candidates {
		if c.ID != i || r.Tries[i].Candidate != i {
			return fmt.Errorf("candidate %d is numbered %d, its try %d", i, c.ID, r.Tries[i].Candidate)
		}
	}
	for _, v := range r.Verdicts {
		if v.Candidate < 0 || v.Candidate >= len(r.Candidates) {
			return fmt.Errorf("a verdict of candidate %d, of %d", v.Candidate, len(r.Candidates))
		}
		if _, ok := r.Files[r.Candidates[v.Candidate].File]; !ok {
			return fmt.Errorf("candidate %d's file %s is not recorded", v.Candidate, r.Candidates[v.Candidate].File)
		}
	}
	return nil
}

// Tasks are the table's tasks, in its order.
func (t *Table) Tasks() []env.Task {
	out := make([]env.Task, len(t.Records))
	for i := range t.Records {
		out[i] = t.Records[i].Task
	}
	return out
}

// LeftOutTotal is how many of the store's tasks the table left out.
func (t *Table) LeftOutTotal() int {
	n := 0
	for _, k := range t.LeftOut {
		n += k
	}
	return n
}
