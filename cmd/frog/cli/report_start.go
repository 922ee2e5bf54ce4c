package cli

import (
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/frognano/frog/policy/neural"
)

// readStart sets s.Start from the run's config.json: where its network
// started (--start). The config of a run made before --start says it by its
// learner's prior; an LLM run's and an unreadable config say nothing.
func (s *runSeries) readStart(dir string) {
	data, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		return
	}
	var rec struct {
		Config struct {
			Policy  string `json:"policy"`
			Start   string `json:"start"`
			Learner *struct {
				Prior bool `json:"prior"`
			} `json:"learner"`
		} `json:"config"`
	}
	if json.Unmarshal(data, &rec) != nil {
		return
	}
	switch c := rec.Config; {
	case c.Policy == "openai":
	case c.Start != "":
		s.Start = c.Start
	case c.Learner != nil:
		s.Start = neural.Config{Prior: c.Learner.Prior}.Start()
	}
}
