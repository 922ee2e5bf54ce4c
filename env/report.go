package env

import (
	"strconv"
	"strings"
)

// TestStatus is a test's verdict.
type TestStatus string

// Test verdicts, as go test -json reports them, a panic and a timeout told
// apart from a plain failure.
const (
	TestPass    TestStatus = "pass"
	TestFail    TestStatus = "fail"
	TestPanic   TestStatus = "panic"
	TestTimeout TestStatus = "timeout"
	TestSkip    TestStatus = "skip"
)

// TestReport is what a run of tests did.
type TestReport struct {
	// Built is false when the package or its tests did not compile;
	// BuildOutput then holds the compiler's messages.
	Built       bool   `json:"built"`
	BuildOutput string `json:"build_output,omitempty"`
	// Tests are the top-level tests that ran, in the order they ended.
	Tests  []TestResult `json:"tests"`
	Passed int          `json:"passed"`
	Failed int          `json:"failed"`
	// TimedOut says the run hit its time limit (the tests still running
	// then are reported with TestTimeout).
	TimedOut bool `json:"timed_out,omitempty"`
}

// Status returns the verdict of the named test, and whether it ran.
func (r TestReport) Status(name string) (TestStatus, bool) {
	for i := range r.Tests {
		if r.Tests[i].Name == name {
			return r.Tests[i].Status, true
		}
	}
	return "", false
}

// Failing lists the tests that did not pass (skipped ones aside).
func (r TestReport) Failing() []string {
	var out []string
	for _, t := range r.Tests {
		if t.Status != TestPass && t.Status != TestSkip {
			out = append(out, t.Name)
		}
	}
	return out
}

// TestResult is one top-level test's verdict.
type TestResult struct {
	Name   string     `json:"name"`
	Status TestStatus `json:"status"`
	// Message is the failure's own text (t.Error's, the panic's value),
	// cut in the middle when long; File and Line where the test says it
	// failed (the first "file.go:N:" of its output), when it says.
	Message string `json:"message,omitempty"`
	File    string `json:"file,omitempty"`
	Line    int    `json:"line,omitempty"`
	// Frames are a panic's stack frames inside the module, innermost first.
	Frames  []Frame `json:"frames,omitempty"`
	Seconds float64 `json:"seconds"`
}

// Frame is one stack frame: a function and where it was.
type Frame struct {
	Func string `json:"func"`
	File string `json:"file"` // workspace-relative
	Line int    `json:"line"`
}

// CoverageReport says which lines each test ran: Blocks are the code
// blocks (statement runs) any of the tests ran, and Tests maps each test
// to the indexes of its blocks. Passed says which tests passed in that run.
type CoverageReport struct {
	Blocks []Block          `json:"blocks"`
	Tests  map[string][]int `json:"tests"`
	Passed map[string]bool  `json:"passed"`
}

// Block is a run of statements: lines Start to End (inclusive) of a file.
type Block struct {
	File  string `json:"file"` // workspace-relative
	Start int    `json:"start"`
	End   int    `json:"end"`
}

// Covers reports whether b holds line l.
func (b Block) Covers(l Line) bool {
	return b.File == l.File && b.Start <= l.Line && l.Line <= b.End
}

// Candidate is one repair the candidates tool proposes: a template edit of
// the code as it is now. It is the agent's own proposal, made from the
// workspace's code alone, and it is valid only for the workspace as it was
// when listed: after any edit, apply or revert, list again.
type Candidate struct {
	// ID is the candidate's index in its list.
	ID   int    `json:"id"`
	File string `json:"file"`
	Line int    `json:"line"`
	// Op names the template ("flip-relational", "restore-return-err", …)
	// and Kind its family ("token", "guard", "bounds", "args", …).
	Op   string `json:"op"`
	Kind string `json:"kind"`
	// Context is the kind of statement the edit is in ("if", "for",
	// "return", "assign", …) and Func the function.
	Context string `json:"context,omitempty"`
	Func    string `json:"func,omitempty"`
	// Desc says what the edit does, for people and language models.
	Desc string `json:"desc"`
	// Edits are byte-range replacements of File as it is now.
	Edits []Edit `json:"edits"`
	// Affinity is, for a candidate that borrows or builds code (a
	// condition for an if true, a statement for an empty body), the share
	// of the names it uses that the code around it uses too; Local says
	// the borrowed code comes from the same function.
	Affinity float64 `json:"affinity,omitempty"`
	Local    bool    `json:"local,omitempty"`
	// Origin, Place, Similar, Repeat and Count describe a statement put
	// back where one may have been removed (restore-stmt): where it comes
	// from (func, file or package: the nearest place it stands), where it
	// goes in its statement list (start, end or between), the share of
	// the two statements around the insertion point it has around it
	// where it stands, whether it repeats one of them, and how many times
	// the package writes it.
	Origin  string  `json:"origin,omitempty"`
	Place   string  `json:"place,omitempty"`
	Similar float64 `json:"similar,omitempty"`
	Repeat  bool    `json:"repeat,omitempty"`
	Count   int     `json:"count,omitempty"`
	// Natural is how many bits more probable the edit makes the lines it
	// touches under a token trigram model of the module's code (which
	// leaves those lines out): positive when the edited code reads more
	// like the rest of the module. Surprise is the line's mean surprise
	// under that model, in bits a token: injected bugs raise it.
	Natural  float64 `json:"natural,omitempty"`
	Surprise float64 `json:"surprise,omitempty"`
}

// Edit replaces Old at byte Offset of a file with New.
type Edit struct {
	Offset int    `json:"offset"`
	Old    string `json:"old"`
	New    string `json:"new"`
}

// TryResult is what the tests did with one candidate applied.
type TryResult struct {
	Candidate int `json:"candidate"`
	// Built is false when the edited code did not compile.
	Built bool `json:"built"`
	// Failing lists the deciding tests that did not pass with it; Fixed
	// those among the ones failing before that now pass, Broken those that
	// passed before and now fail. AllPass says every deciding test passed.
	Failing []string `json:"failing,omitempty"`
	Fixed   []string `json:"fixed,omitempty"`
	Broken  []string `json:"broken,omitempty"`
	AllPass bool     `json:"all_pass"`
	// Schema says the try ran through a prebuilt schema binary (a test run,
	// no build); otherwise it was a real build. Cached says the outcome
	// cache answered.
	Schema bool `json:"schema,omitempty"`
	Cached bool `json:"cached,omitempty"`
}

// CutMiddle returns s when it fits in n bytes, and otherwise its head and
// tail with a note of what was cut between them.
func CutMiddle(s string, n int) string {
	if n <= 0 || len(s) <= n {
		return s
	}
	note := "\n… [%d bytes cut] …\n"
	keep := max(n-len(note)-8, 2)
	head, tail := keep/2, keep-keep/2
	// Cut at UTF-8 boundaries.
	for head > 0 && head < len(s) && s[head]&0xC0 == 0x80 {
		head--
	}
	for tail > 0 && len(s)-tail > 0 && s[len(s)-tail]&0xC0 == 0x80 {
		tail--
	}
	var b strings.Builder
	b.WriteString(s[:head])
	b.WriteString(strings.Replace(note, "%d", strconv.Itoa(len(s)-head-tail), 1))
	b.WriteString(s[len(s)-tail:])
	return b.String()
}
