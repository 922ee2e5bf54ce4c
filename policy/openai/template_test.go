package openai

import (
	"strings"
	"testing"
	"text/template"

	"github.com/frognano/frog/env"
)

// TestTemplateAgreesWithTextTemplate runs templates through the evaluator
// and through text/template itself: the output must be the same, byte for
// byte, and an error in one must be an error in the other.
func TestTemplateAgreesWithTextTemplate(t *testing.T) {
	full := PromptData{
		Task: env.TaskView{ID: "t1", Repo: "example.com/m", Dir: "pkg/x", ProblemStatement: "Sum is off by one.",
			FailToPass: []string{"TestSum", "TestSumEmpty"}, PassToPass: []string{"TestOther"}},
		Tools: []string{"view", "edit", "submit"}, MaxTurns: 12,
	}
	bare := PromptData{Task: env.TaskView{ID: "t2", Repo: "m", Dir: "."}}
	templates := []string{
		DefaultSystemPrompt,
		DefaultTaskPrompt,
		"",
		"plain text, no actions",
		"{{/* a comment */}}x{{- /* trimmed */ -}} y",
		"{{.MaxTurns}} {{.Task.ID}} {{$.Task.Repo}} {{.Tools}}",
		"{{.}}",
		"{{.Task.FailToPass}}",
		`{{if .Task.ProblemStatement}}has{{else}}none{{end}}`,
		`{{if not .Task.PassToPass}}no p2p{{else if .Tools}}tools{{else}}neither{{end}}`,
		`{{with .Task.FailToPass}}{{len .}} failing: {{join . "; "}}{{else}}nothing fails{{end}}`,
		`{{range .Tools}}[{{.}}]{{else}}no tools{{end}}`,
		`{{range $.Task.FailToPass}}{{$.Task.ID}}:{{.}} {{end}}`,
		`{{printf "%s has %d turns" .Task.ID .MaxTurns}}`,
		`{{print .MaxTurns "x" 3}}`,
		`{{.Tools | join ", "}}`,
		`{{if eq .MaxTurns 12}}twelve{{end}}{{if ne .Task.Dir "."}} nested{{end}}`,
		`{{if eq .Task.ID "t1" "t2"}}known{{end}}`,
		`{{and .Tools .Task.ProblemStatement}}|{{or .Task.ProblemStatement "none"}}`,
		`{{(len .Tools)}} {{len .Task.Repo}}`,
		`{{if and (gt1 .MaxTurns) true}}x{{end}}`, // an unknown function: both refuse
		`{{.Task.Nope}}`,          // an unknown field
		`{{join .MaxTurns ", "}}`, // join of a number
		`{{range .MaxTurns}}x{{end}}`,
		`{{.Task.ID`, // unclosed
	}
	for _, text := range templates {
		for _, d := range []PromptData{full, bare} {
			want, werr := runTextTemplate(text, d)
			got, gerr := runOurs(text, d)
			if (werr != nil) != (gerr != nil) {
				t.Errorf("template %q on %s: text/template err %v, ours %v", text, d.Task.ID, werr, gerr)
				continue
			}
			if werr == nil && got != want {
				t.Errorf("template %q on %s:\n got %q\nwant %q", text, d.Task.ID, got, want)
			}
		}
	}
}

func runTextTemplate(text string, d PromptData) (string, error) {
	tt, err := template.New("t").Funcs(template.FuncMap{"join": strings.Join}).Parse(text)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	err = tt.Execute(&b, d)
	return b.String(), err
}

func runOurs(text string, d PromptData) (string, error) {
	pt, err := parseTemplate("t", text)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	err = pt.execute(&b, d)
	return b.String(), err
}

// TestTemplateRefusesWhatItDoesNotRun names the construct at parse time, so
// a prompt file that needs text/template's full language fails when frog
// starts, not mid-run.
func TestTemplateRefusesWhatItDoesNotRun(t *testing.T) {
	for _, text := range []string{
		`{{define "x"}}y{{end}}{{template "x"}}`,
		`{{$x := .Tools}}{{$x}}`,
		`{{range $i, $t := .Tools}}{{$t}}{{end}}`,
		`{{range .Tools}}{{break}}{{end}}`,
		`{{.Task.View 1}}`,
		`{{nil}}`,
	} {
		if _, err := parseTemplate("t", text); err == nil {
			t.Errorf("parseTemplate(%q): no error", text)
		}
	}
}

// TestCustomPromptsRender checks the whole path a --task-prompt-file takes:
// Config to prompts to the rendered message.
func TestCustomPromptsRender(t *testing.T) {
	c := DefaultConfig()
	c.TaskPrompt = "Fix {{.Task.Repo}}/{{.Task.Dir}}{{with .Task.FailToPass}} ({{join . \", \"}}){{end}}."
	p, err := newPrompts(c)
	if err != nil {
		t.Fatal(err)
	}
	_, task, err := p.render(PromptData{Task: env.TaskView{Repo: "m", Dir: "d", FailToPass: []string{"TestA", "TestB"}}})
	if err != nil {
		t.Fatal(err)
	}
	if want := "Fix m/d (TestA, TestB)."; task != want {
		t.Errorf("task prompt %q, want %q", task, want)
	}
	c.TaskPrompt = "{{.Task.Missing}}"
	if _, err := newPrompts(c); err == nil {
		t.Error("a template naming a field PromptData lacks: no error at construction")
	}
}
