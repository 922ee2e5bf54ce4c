package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/frognano/frog/env"
)

// toolSpec is one function tool: its description, its JSON schema and how
// its arguments become an env.Action.
type toolSpec struct {
	tool   env.Tool
	desc   string
	params map[string]any
	// parse fills act from the call's arguments (decoded strictly into
	// the tool's argument struct) or says what is wrong with them.
	parse func(data []byte, act *env.Action) error
}

func obj(required []string, props map[string]any) map[string]any {
	if required == nil {
		required = []string{}
	}
	return map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false}
}

func str(desc string) map[string]any { return map[string]any{"type": "string", "description": desc} }
func integer(desc string) map[string]any {
	return map[string]any{"type": "integer", "description": desc}
}
func strs(desc string) map[string]any {
	return map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": desc}
}

var toolSpecs = map[string]toolSpec{
	"view": {
		tool: env.ToolView,
		desc: "Show a file of the workspace, or lines start_line to end_line of it (1-based, inclusive).",
		params: obj([]string{"path"}, map[string]any{
			"path":       str("file path relative to the workspace root"),
			"start_line": integer("first line to show (optional)"),
			"end_line":   integer("last line to show (optional)"),
		}),
		parse: func(data []byte, act *env.Action) error {
			var a struct {
				Path      string `json:"path"`
				StartLine int    `json:"start_line"`
				EndLine   int    `json:"end_line"`
			}
			if err := strict(data, &a); err != nil {
				return err
			}
			if a.Path == "" {
				return fmt.Errorf("path is required")
			}
			act.Path = a.Path
			if a.StartLine != 0 || a.EndLine != 0 {
				act.Args = &env.ActionArgs{StartLine: a.StartLine, EndLine: a.EndLine}
			}
			return nil
		},
	},
	"search": {
		tool:   env.ToolSearch,
		desc:   "Search the workspace's files for a pattern (a basic regular expression, as grep's); prints file:line:text of each match.",
		params: obj([]string{"query"}, map[string]any{"query": str("the pattern")}),
		parse: func(data []byte, act *env.Action) error {
			var a struct {
				Query string `json:"query"`
			}
			if err := strict(data, &a); err != nil {
				return err
			}
			if a.Query == "" {
				return fmt.Errorf("query is required")
			}
			act.Args = &env.ActionArgs{Query: a.Query}
			return nil
		},
	},
	"run_tests": {
		tool:   env.ToolRunTests,
		desc:   "Run the tests (the named top-level tests, or by default the task's deciding tests) and report each test's verdict, with failure messages and locations.",
		params: obj(nil, map[string]any{"tests": strs("top-level test names (optional)")}),
		parse:  parseTests,
	},
	"coverage": {
		tool:   env.ToolCoverage,
		desc:   "Measure which lines each named test runs (by default the task's deciding tests).",
		params: obj(nil, map[string]any{"tests": strs("top-level test names (optional)")}),
		parse:  parseTests,
	},
	"edit": {
		tool: env.ToolEdit,
		desc: "Edit a file: replace the one occurrence of old with new; with old empty, the whole file becomes new.",
		params: obj([]string{"path", "new"}, map[string]any{
			"path": str("file path relative to the workspace root"),
			"old":  str("exact text to replace; it must occur exactly once (empty: replace the whole file)"),
			"new":  str("replacement text"),
		}),
		parse: func(data []byte, act *env.Action) error {
			var a struct {
				Path string  `json:"path"`
				Old  string  `json:"old"`
				New  *string `json:"new"`
			}
			if err := strict(data, &a); err != nil {
				return err
			}
			if a.Path == "" || a.New == nil {
				return fmt.Errorf("path and new are required")
			}
			act.Path, act.Old, act.New = a.Path, a.Old, *a.New
			return nil
		},
	},
	"revert": {
		tool:   env.ToolRevert,
		desc:   "Put every file back as it was when the episode started.",
		params: obj(nil, map[string]any{}),
		parse:  func(data []byte, _ *env.Action) error { return strict(data, &struct{}{}) },
	},
	"submit": {
		tool:   env.ToolSubmit,
		desc:   "End the episode: the task's tests then decide whether the bug is fixed.",
		params: obj(nil, map[string]any{}),
		parse:  func(data []byte, _ *env.Action) error { return strict(data, &struct{}{}) },
	},
	"candidates": {
		tool: env.ToolCandidates,
		desc: "List template repairs (small edits such as a flipped comparison or a restored return) of the code at the given lines.",
		params: obj([]string{"lines"}, map[string]any{"lines": map[string]any{
			"type": "array", "description": "where to look",
			"items": obj([]string{"file", "line"}, map[string]any{"file": str("file path"), "line": integer("1-based line")}),
		}}),
		parse: func(data []byte, act *env.Action) error {
			var a struct {
				Lines []env.Line `json:"lines"`
			}
			if err := strict(data, &a); err != nil {
				return err
			}
			if len(a.Lines) == 0 {
				return fmt.Errorf("lines is required")
			}
			act.Args = &env.ActionArgs{Lines: a.Lines}
			return nil
		},
	},
	"try": {
		tool:   env.ToolTry,
		desc:   "Run the deciding tests with each of the listed candidates applied in turn, without changing the workspace.",
		params: obj([]string{"candidates"}, map[string]any{"candidates": map[string]any{"type": "array", "items": map[string]any{"type": "integer"}, "description": "candidate IDs of the last list"}}),
		parse:  parseCandidates,
	},
	"apply": {
		tool:   env.ToolApply,
		desc:   "Apply one candidate of the last list to the workspace.",
		params: obj([]string{"candidates"}, map[string]any{"candidates": map[string]any{"type": "array", "items": map[string]any{"type": "integer"}, "description": "one candidate ID"}}),
		parse:  parseCandidates,
	},
}

func parseTests(data []byte, act *env.Action) error {
	var a struct {
		Tests []string `json:"tests"`
	}
	if err := strict(data, &a); err != nil {
		return err
	}
	if a.Tests != nil {
		act.Args = &env.ActionArgs{Tests: a.Tests}
	}
	return nil
}

func parseCandidates(data []byte, act *env.Action) error {
	var a struct {
		Candidates []int `json:"candidates"`
	}
	if err := strict(data, &a); err != nil {
		return err
	}
	if a.Candidates != nil {
		act.Args = &env.ActionArgs{Candidates: a.Candidates}
	}
	return nil
}

// strict decodes a call's arguments into v, refusing unknown fields and
// trailing data. Empty arguments are an empty object.
func strict(data []byte, v any) error {
	if len(bytes.TrimSpace(data)) == 0 {
		data = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("data after the JSON object")
	}
	return nil
}

// parseCall turns one tool call of the model into an action, or into the
// agent's mistake, named so the model can correct it.
func parseCall(c env.ToolCall, exposed []string) env.Action {
	spec, ok := toolSpecs[c.Name]
	if !ok || !slices.Contains(exposed, c.Name) {
		return mistake(fmt.Sprintf("unknown tool %q: the tools are %s", c.Name, strings.Join(exposed, ", ")))
	}
	act := env.Action{Tool: spec.tool}
	if !json.Valid([]byte(c.Arguments)) && strings.TrimSpace(c.Arguments) != "" {
		return mistake(fmt.Sprintf("%s: the arguments are not valid JSON: %s", c.Name, env.CutMiddle(c.Arguments, 200)))
	}
	if err := spec.parse([]byte(c.Arguments), &act); err != nil {
		return mistake(fmt.Sprintf("%s: bad arguments: %v", c.Name, err))
	}
	return act
}

// mistake is the action of a model that gave none: the agent's mistake,
// told with msg.
func mistake(msg string) env.Action { return env.Action{Args: &env.ActionArgs{Mistake: msg}} }
