package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/frognano/frog/policy/neural"
)

// parseTrain parses args as `frog train` flags and validates them, as
// frog does before it trains: the options, what went to stderr, and the
// validation's error.
func parseTrain(t *testing.T, args ...string) (*trainOptions, string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	c, o := trainCmd(&globals{stdout: &stdout, stderr: &stderr})
	if err := c.ParseFlags(args); err != nil {
		t.Fatalf("parse %q: %v", args, err)
	}
	err := c.PreRunE(c, nil)
	if stdout.Len() > 0 {
		t.Errorf("stdout %q; want nothing (--json promises one JSON object there)", stdout.String())
	}
	return o, stderr.String(), err
}

func TestTrainStart(t *testing.T) {
	prior, scratch := neural.DefaultConfig(), neural.DefaultConfig()
	scratch.KL = 0
	for _, tc := range []struct {
		name          string
		args          []string
		start         string
		lr, wide, kl  float64
		err, stderr   string
		prior, silent bool
	}{
		{name: "default", start: "prior", lr: prior.LR, wide: prior.WideLR, kl: prior.KL, prior: true},
		{name: "prior", args: []string{"--start", "prior"}, start: "prior", lr: prior.LR, wide: prior.WideLR, kl: prior.KL, prior: true},
		{name: "scratch", args: []string{"--start", "scratch"}, start: "scratch", lr: scratch.LR, wide: scratch.WideLR, kl: 0},
		{name: "scratch, --kl given", args: []string{"--start", "scratch", "--kl", "0.5"}, start: "scratch", lr: scratch.LR, wide: scratch.WideLR, kl: 0.5},
		{name: "prior, --kl 0 given", args: []string{"--start", "prior", "--kl", "0"}, start: "prior", lr: prior.LR, wide: prior.WideLR, kl: 0, prior: true},
		{name: "scratch, rates given", args: []string{"--start", "scratch", "--lr", "0.01", "--wide-lr", "0.1"}, start: "scratch", lr: 0.01, wide: 0.1, kl: 0},
		{name: "--prior=false, deprecated", args: []string{"--prior=false"}, start: "scratch", lr: scratch.LR, wide: scratch.WideLR, kl: 0, stderr: "--prior is deprecated"},
		{name: "--prior, deprecated", args: []string{"--prior"}, start: "prior", lr: prior.LR, wide: prior.WideLR, kl: prior.KL, prior: true, stderr: "--prior is deprecated"},
		{name: "--prior=false --kl 0.2", args: []string{"--prior=false", "--kl", "0.2"}, start: "scratch", lr: scratch.LR, wide: scratch.WideLR, kl: 0.2, stderr: "--prior is deprecated"},
		{name: "both, the same start", args: []string{"--start", "scratch", "--prior=false"}, start: "scratch", lr: scratch.LR, wide: scratch.WideLR, kl: 0, stderr: "--prior is deprecated"},
		{name: "both, scratch and --prior", args: []string{"--start", "scratch", "--prior"}, err: "--start scratch and --prior=true name different starts"},
		{name: "both, prior and --prior=false", args: []string{"--start", "prior", "--prior=false"}, err: "--start prior and --prior=false name different starts"},
		{name: "unknown start", args: []string{"--start", "warm"}, err: `--start: start "warm": want prior or scratch`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, stderr, err := parseTrain(t, append(tc.args, "--heldout", "")...)
			if tc.err != "" {
				var u *UsageError
				if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.As(err, &u) {
					t.Fatalf("error %v; want a usage error containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			l := o.Learner
			if o.Start != tc.start || l.Start() != tc.start || l.Prior != tc.prior || l.LR != tc.lr || l.WideLR != tc.wide || l.KL != tc.kl {
				t.Errorf("start %q (learner's %q, prior %v), lr %v, wide-lr %v, kl %v; want %q (%v), %v, %v, %v",
					o.Start, l.Start(), l.Prior, l.LR, l.WideLR, l.KL, tc.start, tc.prior, tc.lr, tc.wide, tc.kl)
			}
			if tc.stderr == "" && stderr != "" || !strings.Contains(stderr, tc.stderr) {
				t.Errorf("stderr %q; want %q", stderr, tc.stderr)
			}
		})
	}
}

// TestTrainStartRecorded checks that config.json records the start, and
// that a resumed run keeps its own: a run made before --start (no start in
// its config.json) by its learner's prior; a --start given to --resume
// must be the run's.
func TestTrainStartRecorded(t *testing.T) {
	o, _, err := parseTrain(t, "--start", "scratch", "--heldout", "")
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(map[string]any{"command": "train", "config": o})
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		Config struct {
			Start   string `json:"start"`
			Learner struct {
				Prior bool    `json:"prior"`
				KL    float64 `json:"kl"`
			} `json:"learner"`
		} `json:"config"`
	}
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	if c := rec.Config; c.Start != "scratch" || c.Learner.Prior || c.Learner.KL != 0 {
		t.Errorf("config.json: start %q, learner prior %v, kl %v; want scratch, false, 0", c.Start, c.Learner.Prior, c.Learner.KL)
	}

	// A run of scratch as --start records it, and one of before --start.
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		run := filepath.Join(dir, name)
		if err := os.MkdirAll(run, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(run, "config.json"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		return run
	}
	now := write("now", data)
	old := write("old", []byte(strings.Replace(string(data), `"start":"scratch",`, "", 1)))
	if bytes.Contains(mustRead(t, filepath.Join(old, "config.json")), []byte(`"start"`)) {
		t.Fatal("the old config.json still has a start")
	}
	for _, tc := range []struct {
		name string
		args []string
		err  string
	}{
		{name: "now", args: []string{"--resume", now}},
		{name: "old", args: []string{"--resume", old}},
		{name: "old, --start scratch", args: []string{"--resume", old, "--start", "scratch"}},
		{name: "old, --prior=false", args: []string{"--resume", old, "--prior=false"}},
		{name: "now, --start prior", args: []string{"--resume", now, "--start", "prior"}, err: "the run's start is scratch"},
		{name: "old, --prior", args: []string{"--resume", old, "--prior"}, err: "the run's start is scratch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, _, err := parseTrain(t, tc.args...)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v; want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if o.Start != "scratch" || o.Learner.Prior || o.Learner.KL != 0 {
				t.Errorf("resumed: start %q, prior %v, kl %v; want the run's: scratch, false, 0", o.Start, o.Learner.Prior, o.Learner.KL)
			}
		})
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
