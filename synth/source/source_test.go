package source

import (
	"context"
	"errors"
	"math"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/rs/zerolog"

	"github.com/frognano/frog/env/process"
	"github.com/frognano/frog/synth"
	"github.com/frognano/frog/synth/validate"
)

const tiny = "../validate/testdata/tiny"

func TestLocalAndPackages(t *testing.T) {
	m, err := Local(tiny)
	if err != nil {
		t.Fatal(err)
	}
	if m.Path != "example.com/tiny" || m.Version != "" {
		t.Errorf("Local(%s) = %+v, want path example.com/tiny and no version", tiny, m)
	}
	pkgs, err := Packages(m)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(pkgs, []string{"./calc"}); diff != "" {
		t.Errorf("Packages (-got +want):\n%s", diff)
	}
	if _, err := Local(t.TempDir()); err == nil {
		t.Error("Local of a directory without go.mod succeeded")
	}
}

func TestIsRemote(t *testing.T) {
	for spec, want := range map[string]bool{tiny: false, "github.com/google/btree@v1.1.3": true, "./nowhere": false} {
		if got := IsRemote(spec); got != want {
			t.Errorf("IsRemote(%q) = %v, want %v", spec, got, want)
		}
	}
}

func TestDifficulty(t *testing.T) {
	easy := Difficulty("token", synth.Features{K: 1, Complexity: 1, FailToPass: 4, PointsAtLine: true, OchiaiRank: 1})
	hard := Difficulty("idiom", synth.Features{K: 2, Complexity: 12, FailToPass: 1, OchiaiRank: 5})
	if !(easy < hard) || easy < 0 || hard > 12 || math.IsNaN(hard) {
		t.Errorf("Difficulty easy %v, hard %v: want 0 <= easy < hard <= 12", easy, hard)
	}
}

func newTiny(t *testing.T) *Synthesizer {
	t.Helper()
	m, err := Local(tiny)
	if err != nil {
		t.Fatal(err)
	}
	cfg := process.DefaultConfig()
	cfg.Dir = t.TempDir()
	prov, err := process.New(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	s, err := New([]Module{m}, Config{Validate: validate.Config{MinTimeout: 5 * time.Second}, Seed: 1, Provider: prov}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

func TestSynthesizerTasks(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test on a module")
	}
	s := newTiny(t)
	tasks, err := s.Tasks(context.Background(), 2, 3)
	if err != nil && !errors.Is(err, ErrExhausted) {
		t.Fatal(err)
	}
	if len(tasks) == 0 {
		t.Fatalf("no tasks; stats %+v", s.Stats())
	}
	for _, tk := range tasks {
		if len(tk.FailToPass) == 0 || len(tk.PassToPass) == 0 || tk.Patch == "" || len(tk.TestCmd) == 0 || tk.Difficulty <= 0 {
			t.Errorf("task %s incomplete: %+v", tk.ID, tk)
		}
	}
	st := s.Stats()
	if st.Total.Valid < len(tasks) || st.Modules[0].Prepared != 1 {
		t.Errorf("stats %+v: want >= %d valid and 1 prepared package", st, len(tasks))
	}
	var fam validate.Counters
	for _, c := range st.Families {
		fam.Merge(c)
	}
	if diff := cmp.Diff(fam, st.Total); diff != "" {
		t.Errorf("family counters do not add up to the total (-families +total):\n%s", diff)
	}
}

func TestSynthesizerGenerateCancelled(t *testing.T) {
	s := newTiny(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := s.Generate(ctx, 1, func(synth.TaskRecord) error { return nil })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Generate on a cancelled ctx = %v, want context.Canceled", err)
	}
}

func TestGitSource(t *testing.T) {
	repo := t.TempDir()
	if err := copyTree(tiny, repo); err != nil {
		t.Fatal(err)
	}
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=frog", "-c", "user.email=frog@localhost"}, args...)...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "--quiet")
	git("add", ".")
	git("commit", "--quiet", "-m", "tiny")
	git("tag", "v1.0.0")
	git("commit", "--quiet", "--allow-empty", "-m", "later")

	m, err := Open(context.Background(), "git+file://"+repo+"@v1.0.0", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if m.Path != "example.com/tiny" || len(m.Version) != 41 && len(m.Version) != 40 {
		t.Errorf("git module = %+v, want example.com/tiny at a commit hash", m)
	}
	if pkgs, err := Packages(m); err != nil || !cmp.Equal(pkgs, []string{"./calc"}) {
		t.Errorf("Packages = %v, %v", pkgs, err)
	}
	if _, err := Open(context.Background(), "git+file://"+repo+"@nosuchref", t.TempDir()); err == nil || !strings.Contains(err.Error(), "nosuchref") {
		t.Errorf("a missing ref: err = %v, want one naming it", err)
	}
}
