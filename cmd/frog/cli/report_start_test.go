package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReportSaysTheStart checks where the report finds a run's start: its
// config.json's start, or for a run made before --start its learner's
// prior; an LLM run and a run without a config say none.
func TestReportSaysTheStart(t *testing.T) {
	for _, tc := range []struct {
		name, config, want string
	}{
		{"scratch", `{"command":"train","config":{"policy":"neural","learner":{"prior":false},"start":"scratch"}}`, "scratch"},
		{"prior", `{"command":"train","config":{"policy":"neural","learner":{"prior":true},"start":"prior"}}`, "prior"},
		{"before --start, prior", `{"command":"train","config":{"policy":"neural","learner":{"prior":true}}}`, "prior"},
		{"before --start, --prior=false", `{"command":"train","config":{"policy":"neural","learner":{"prior":false}}}`, "scratch"},
		{"llm", `{"command":"train","config":{"policy":"openai","learner":{"prior":true}}}`, ""},
		{"no config", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.config != "" {
				if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(tc.config), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			s := &runSeries{Run: dir}
			s.readStart(dir)
			if s.Start != tc.want {
				t.Errorf("start %q; want %q", s.Start, tc.want)
			}
			var b strings.Builder
			if err := s.print(&b); err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(b.String(), "start  "+tc.want); got != (tc.want != "") {
				t.Errorf("the summary:\n%s\nsays the start: %v; want %v", b.String(), got, tc.want != "")
			}
		})
	}
}
