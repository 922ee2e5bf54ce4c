package openai_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/frognano/frog/policy/openai"
)

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	os.WriteFile(good, []byte(`{"base_urls": ["http://a:8000/v1"], "model": "m", "request_timeout": "90s", "max_inflight": 8}`), 0o644)
	c, err := openai.LoadConfig(good, openai.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if c.RequestTimeout != 90*time.Second || c.MaxInflight != 8 || c.Model != "m" || c.MaxTurns != openai.DefaultConfig().MaxTurns {
		t.Errorf("loaded %+v; want the file's fields over the defaults", c)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	for name, body := range map[string]string{
		"unknown field": `{"modle": "m"}`,
		"bad duration":  `{"retry_base": "soon"}`,
		"not json":      `{`,
	} {
		p := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".json")
		os.WriteFile(p, []byte(body), 0o644)
		if _, err := openai.LoadConfig(p, openai.DefaultConfig()); err == nil {
			t.Errorf("%s: loaded", name)
		}
	}
	bad := c
	bad.Tools = []string{"view"}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "submit") {
		t.Errorf("tools without submit: %v", err)
	}
	bad = c
	bad.TaskPrompt = "{{.Task.Nope}}"
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "task prompt") {
		t.Errorf("a task template that cannot run: %v", err)
	}
}
