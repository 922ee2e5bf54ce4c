package envtest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/frognano/frog/env"
)

// OracleTask is a real task with its gold fix: the content of each file the
// fix touches, as the buggy workspace has it with the fix applied.
type OracleTask struct {
	Task  *env.Task
	Fixed map[string][]byte
}

// RunOracle plays every task in sandboxes of p, judged by h, three ways:
// the gold fix applied through the agent's own edit tool gives reward 1;
// submitting the workspace unchanged gives 0; an edit that breaks the build
// gives 0 and no infrastructure fault. The unchanged workspace's coverage
// is measured first: every FAIL_TO_PASS test fails under it, every
// PASS_TO_PASS test passes, and each failing one covers some code. It is
// the check that a backend lays out real tasks and that their verdicts and
// observations mean what they say.
func RunOracle(t *testing.T, p env.Provider, h env.Harness, tasks []OracleTask) {
	t.Helper()
	if len(tasks) == 0 {
		t.Fatal("RunOracle: no tasks")
	}
	for _, ot := range tasks {
		t.Run(ot.Task.ID, func(t *testing.T) {
			files := slices.Sorted(maps.Keys(ot.Fixed))
			gold := make([]env.Action, 0, len(files))
			for _, f := range files {
				gold = append(gold, env.Action{Tool: env.ToolEdit, Path: f, New: string(ot.Fixed[f])})
			}
			broken := []env.Action{{Tool: env.ToolEdit, Path: files[0], New: "package broken\n\nfunc {\n"}}
			for _, tt := range []struct {
				name   string
				acts   []env.Action
				reward float64
			}{
				{"gold", gold, 1},
				{"unchanged", []env.Action{{Tool: env.ToolCoverage}}, 0},
				{"build broken", broken, 0},
			} {
				t.Run(tt.name, func(t *testing.T) {
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
					defer cancel()
					sb, err := p.Open(ctx, env.OpenOptions{Run: "oracle", Task: ot.Task})
					if err != nil {
						t.Fatalf("open a sandbox for a real task: %v", err)
					}
					defer sb.Close(context.WithoutCancel(ctx))
					acts := append(slices.Clone(tt.acts), env.Action{Tool: env.ToolRunTests}, env.Action{Tool: env.ToolSubmit})
					traj, err := env.Run(ctx, sb, playList(acts), ot.Task, env.RunOptions{MaxSteps: len(acts) + 1, Harness: h})
					if err != nil {
						t.Fatalf("episode: %v (infrastructure fault: %v)", err, errors.Is(err, env.ErrInfra))
					}
					if traj.Reward != tt.reward {
						var log []string
						for _, s := range traj.Steps {
							log = append(log, fmt.Sprintf("%s: %s", s.Action.Tool, firstLine(s.Result.Output)))
						}
						t.Fatalf("reward %v, want %v:\n%s", traj.Reward, tt.reward, strings.Join(log, "\n"))
					}
					if tt.name == "unchanged" {
						checkCoverage(t, ot.Task, traj.Steps[0].Result.Coverage())
					}
					// The run_tests before the submit agrees with the verdict.
					rep := traj.Steps[len(traj.Steps)-2].Result.Tests()
					if rep == nil {
						t.Fatal("run_tests gave no report")
					}
					if pass := rep.Built && len(rep.Failing()) == 0; pass != (tt.reward == 1) {
						t.Errorf("run_tests says all pass = %v, the verdict %v", pass, tt.reward)
					}
				})
			}
		})
	}
}

// checkCoverage checks the coverage of a task's unchanged workspace.
func checkCoverage(t *testing.T, task *env.Task, cov *env.CoverageReport) {
	t.Helper()
	if cov == nil {
		t.Fatal("coverage gave no report")
	}
	for _, name := range task.Tests() {
		want := !slices.Contains(task.FailToPass, name)
		if cov.Passed[name] != want {
			t.Errorf("coverage: %s passed = %v, want %v", name, cov.Passed[name], want)
		}
	}
	for _, name := range task.FailToPass {
		if len(cov.Tests[name]) == 0 {
			t.Errorf("coverage: failing test %s covers no block of %d", name, len(cov.Blocks))
		}
	}
}

type playList []env.Action

func (p playList) Act(_ context.Context, o env.Observation) (env.Action, error) {
	if o.Step < len(p) {
		return p[o.Step], nil
	}
	return env.Action{Tool: env.ToolSubmit}, nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
