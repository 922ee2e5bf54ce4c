package remotetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/frognano/frog/actors"
	"github.com/frognano/frog/cmd/frog/cli"
	"github.com/frognano/frog/policy/openai/openaitest"
)

// freeAddr is a loopback address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// frogProc is a frog process of a test (the test binary, named frog).
type frogProc struct {
	cmd    *exec.Cmd
	stdout syncBuffer
	stderr syncBuffer
	done   chan error
}

// syncBuffer is a bytes.Buffer that a test may read while the process
// writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func (b *syncBuffer) Bytes() []byte { return []byte(b.String()) }

// await waits until the process's stderr holds line, at most within.
func (p *frogProc) await(t *testing.T, line string, within time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if strings.Contains(p.stderr.String(), line) {
			return
		}
	}
	t.Fatalf("frog %s did not log %q within %s; stderr:\n%s", strings.Join(p.cmd.Args[1:], " "), line, within, p.stderr.String())
}

func startFrog(t *testing.T, args ...string) *frogProc {
	t.Helper()
	return startFrogIn(t, "", nil, args...)
}

// startFrogIn starts frog in dir with env added to the test's.
func startFrogIn(t *testing.T, dir string, env []string, args ...string) *frogProc {
	t.Helper()
	p := &frogProc{cmd: exec.Command("frog", args...), done: make(chan error, 1)}
	p.cmd.Dir = dir
	if env != nil {
		p.cmd.Env = append(os.Environ(), env...)
	}
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

// wait waits for the process to exit, at most within; it returns its exit
// code.
func (p *frogProc) wait(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case err := <-p.done:
		p.done <- err
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(within):
		_ = p.cmd.Process.Signal(syscall.SIGQUIT)
		time.Sleep(2 * time.Second)
		t.Fatalf("frog %s still runs after %s; stderr:\n%s", strings.Join(p.cmd.Args[1:], " "), within, p.stderr.String())
	}
	return -1
}

// Two workers play a run; a third, of another build, is refused with an
// error that names both builds; one of the two is interrupted mid-run and
// leaves: its episodes are played again on the other, none is lost or
// cancelled, and each link's traffic is counted.
func TestWorkersPlayTheRun(t *testing.T) {
	addr := freeAddr(t)
	trainer := startFrog(t, "sim", "--listen", addr, "--local-slots", "0", "--await-workers", "2", "--episodes", "4000",
		"--concurrency", "64", "--time-scale", "0.05", "--json", "--no-run-dir")
	old := startFrog(t, "worker", "--join", addr, "--slots", "8", "--name", "old", "--build", "0.0.1-old")
	if code := old.wait(t, time.Minute); code != 1 || !strings.Contains(old.stderr.String(), "0.0.1-old") || !strings.Contains(old.stderr.String(), cliVersion(t)) {
		t.Errorf("a worker of another build exited %d; want 1 and an error naming both builds:\n%s", code, old.stderr.String())
	}
	stays := startFrog(t, "worker", "--join", addr, "--slots", "32", "--name", "stays", "--json")
	leaves := startFrog(t, "worker", "--join", addr, "--slots", "32", "--name", "leaves", "--json")
	stays.await(t, "joined the trainer", time.Minute)
	leaves.await(t, "joined the trainer", time.Minute)
	time.Sleep(time.Second)
	if err := leaves.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := leaves.wait(t, 30*time.Second); code != 0 && code != 130 {
		t.Errorf("the interrupted worker exited %d; stderr:\n%s", code, leaves.stderr.String())
	}
	rep := trainerReport(t, trainer)
	if code := stays.wait(t, 30*time.Second); code != 0 {
		t.Errorf("the worker that stayed exited %d; stderr:\n%s", code, stays.stderr.String())
	}
	var ws actors.WorkerSummary
	if err := json.Unmarshal(stays.stdout.Bytes(), &ws); err != nil || ws.PolicyPulls < 2 || ws.Ended != "the trainer said: the run is over" {
		t.Errorf("worker summary %+v (%v): want a policy pull per version it saw, and the run's end", ws, err)
	}
	e, rs := rep.Episodes, rep.Scheduler.Remote
	if !e.Accounted || e.Admitted != 4000 || e.Completed != 4000 {
		t.Errorf("episodes %+v: want 4000 admitted and completed", e)
	}
	if rs == nil || rs.Joined != 2 || rs.Refused != 1 || rs.Lost != 1 || rs.Local != 0 {
		t.Fatalf("remote %+v: want 2 joined, 1 refused, 1 lost, nothing run by the trainer", rs)
	}
	for _, w := range rs.Workers {
		if w.Episodes == 0 || w.BytesOut == 0 || w.BytesIn == 0 || (w.Name == "leaves") != strings.HasPrefix(w.Lost, "left") {
			t.Errorf("worker %+v: want episodes, bytes both ways, and only the interrupted one gone", w)
		}
	}
}

// trainerReport waits for a frog sim --json trainer to exit 0 and reads
// its summary.
func trainerReport(t *testing.T, trainer *frogProc) trainerSummary {
	t.Helper()
	if code := trainer.wait(t, 3*time.Minute); code != 0 {
		t.Fatalf("trainer exited %d; stderr:\n%s", code, trainer.stderr.String())
	}
	var rep trainerSummary
	if err := json.Unmarshal(trainer.stdout.Bytes(), &rep); err != nil {
		t.Fatalf("trainer's summary: %v\n%s", err, trainer.stdout.String())
	}
	return rep
}

// frog train on real tasks, every episode on two worker processes with
// process sandboxes and workspaces of their own: the run's accounting
// holds, both workers played, their trajectories reached the learner.
func TestTrainWithWorkers(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test on a module")
	}
	trainWithWorkers(t, "process")
}

// The same with Docker sandboxes; then the trainer of a second run killed
// mid-run: its worker ends its episodes, exits 1, and leaves no container.
func TestTrainWithDockerWorkers(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test on a module")
	}
	if err := exec.Command("docker", "info").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no Docker daemon answers (docker info: %v); Docker tests never skip in CI", err)
		}
		t.Skipf("no Docker daemon answers: %v", err)
	}
	dir, env, tiny := trainWithWorkers(t, "docker")
	addr := freeAddr(t)
	run := fmt.Sprintf("killed-%d", os.Getpid())
	trainer := startFrogIn(t, dir, env, "train", "--tasks", "tasks.jsonl", "--local", tiny, "--workspaces", "ws", "--heldout", "",
		"--episodes", "400", "--group-size", "2", "--sandbox", "docker", "--device", "cpu", "--concurrency", "2", "--name", run,
		"--listen", addr, "--local-slots", "0", "--await-workers", "1")
	worker := startFrogIn(t, dir, env, "worker", "--join", addr, "--join-timeout", "10m", "--slots", "2", "--workspaces", "ws-w1")
	worker.await(t, "joined the trainer", 2*time.Minute)
	time.Sleep(3 * time.Second)
	if err := trainer.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if code := worker.wait(t, 2*time.Minute); code != 1 {
		t.Errorf("worker exited %d, want 1; stderr:\n%s", code, worker.stderr.String())
	}
	// The worker closed its own sandboxes; the killed trainer's (its warm
	// pool: it checks tasks and evaluates in sandboxes of its own) are
	// what frog gc reaps.
	containers := func(filter ...string) string {
		args := []string{"ps", "-a", "--format", "{{.ID}} pid={{.Label \"frog.pid\"}} episode={{.Label \"frog.episode\"}} {{.Status}}"}
		for _, f := range filter {
			args = append(args, "--filter", f)
		}
		out, err := exec.Command("docker", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("docker ps: %v\n%s", err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if left := containers("label=frog.run="+run, fmt.Sprintf("label=frog.pid=%d", worker.cmd.Process.Pid)); left != "" {
		t.Errorf("the worker left containers:\n%s", left)
	}
	gc := startFrogIn(t, dir, env, "gc", "--run", run)
	if code := gc.wait(t, time.Minute); code != 0 {
		t.Errorf("frog gc exited %d:\n%s", code, gc.stderr.String())
	}
	if left := containers("label=frog.run=" + run); left != "" {
		t.Errorf("containers of the killed run left after frog gc:\n%s", left)
	}
}

// trainWithWorkers synthesizes three tasks and trains on them with every
// episode on two workers of the sandbox kind; it returns the directory,
// the environment and the tiny module's path, for more runs.
func trainWithWorkers(t *testing.T, kind string) (dir string, env []string, tiny string) {
	dir, env, tiny = tinyTasks(t)
	addr := freeAddr(t)
	trainer := startFrogIn(t, dir, env, "train", "--tasks", "tasks.jsonl", "--local", tiny, "--workspaces", "ws", "--heldout", "tasks.jsonl",
		"--heldout-n", "1", "--baselines", "fl-feedback", "--episodes", "12", "--group-size", "2", "--groups-per-update", "1",
		"--refill-zero-variance=false", "--sandbox", kind, "--device", "cpu", "--concurrency", "4", "--name", "r-"+kind, "--json",
		"--listen", addr, "--local-slots", "0", "--await-workers", "2")
	// The trainer checks its tasks and evaluates before it listens: over
	// the workers' default minute of asking on a loaded machine, so they
	// ask for as long as the trainer is given.
	for _, name := range []string{"w1", "w2"} {
		startFrogIn(t, dir, env, "worker", "--join", addr, "--join-timeout", "10m", "--slots", "2", "--name", name, "--workspaces", "ws-"+name)
	}
	if code := trainer.wait(t, 10*time.Minute); code != 0 {
		t.Fatalf("trainer exited %d; stderr:\n%s", code, trainer.stderr.String())
	}
	var rep trainerSummary
	if err := json.Unmarshal(trainer.stdout.Bytes(), &rep); err != nil {
		t.Fatalf("trainer's summary: %v\n%s", err, trainer.stdout.String())
	}
	e, rs := rep.Episodes, rep.Scheduler.Remote
	if !e.Accounted || e.Admitted != 12 || e.Completed != 12 {
		t.Errorf("episodes %+v: want 12 admitted and completed", e)
	}
	if rs == nil || rs.Joined != 2 || rs.Local != 0 {
		t.Fatalf("remote %+v: want 2 workers, no episode in the trainer", rs)
	}
	for _, w := range rs.Workers {
		if w.Done == 0 {
			t.Errorf("worker %s played nothing", w.Name)
		}
	}
	if rep.Learner.Updates == 0 || rep.Learner.Results != 12 {
		t.Errorf("learner %+v: want the 12 results filed and updates made", rep.Learner)
	}
	return dir, env, tiny
}

// tinyTasks synthesizes three tasks from the tiny module into
// tasks.jsonl of a fresh directory; it returns the directory, the
// environment frog runs with there and the module's path.
func tinyTasks(t *testing.T) (dir string, env []string, tiny string) {
	tiny, caches := tinyAndCaches(t)
	dir = t.TempDir()
	env = append(caches, "GOPROXY=off", "GOTOOLCHAIN=local")
	synth := startFrogIn(t, dir, env, "synth", "--source", tiny, "--n", "3", "--out", "tasks.jsonl", "--min-timeout", "5s", "--log-level", "warn")
	if code := synth.wait(t, 5*time.Minute); code != 0 {
		t.Fatalf("frog synth exited %d:\n%s\n%s", code, synth.stderr.String(), synth.stdout.String())
	}
	return dir, env, tiny
}

// An LLM policy plays on a worker: the worker calls the model server
// itself, and the trainer exports every trajectory it sends back, model
// turns included.
func TestTrainLLMWithWorkers(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test on a module")
	}
	dir, env, tiny := tinyTasks(t)
	srv := openaitest.New(func(openaitest.Request) openaitest.Reply {
		return openaitest.Reply{ToolCalls: []openaitest.ToolCall{openaitest.Call("submit", "{}")}}
	})
	defer srv.Close()
	addr := freeAddr(t)
	trainer := startFrogIn(t, dir, env, "train", "--policy", "openai", "--base-url", srv.BaseURL(), "--model", "test-model", "--tasks", "tasks.jsonl",
		"--local", tiny, "--workspaces", "ws", "--episodes", "8", "--group-size", "2", "--groups-per-update", "2", "--concurrency", "4",
		"--sandbox", "process", "--max-turns", "4", "--run-dir", "run", "--json", "--log-level", "warn",
		"--listen", addr, "--local-slots", "0", "--await-workers", "1")
	worker := startFrogIn(t, dir, env, "worker", "--join", addr, "--join-timeout", "10m", "--slots", "4", "--name", "w1", "--workspaces", "ws-w1")
	if code := trainer.wait(t, 5*time.Minute); code != 0 {
		t.Fatalf("trainer exited %d; stderr:\n%s\nworker:\n%s", code, trainer.stderr.String(), worker.stderr.String())
	}
	var rep struct {
		trainerSummary
		Exported int64 `json:"exported"`
	}
	if err := json.Unmarshal(trainer.stdout.Bytes(), &rep); err != nil {
		t.Fatalf("trainer's summary: %v\n%s", err, trainer.stdout.String())
	}
	e, rs := rep.Episodes, rep.Scheduler.Remote
	if !e.Accounted || e.Admitted != 8 || e.Completed != 8 || rep.Exported != 8 {
		t.Errorf("episodes %+v, %d exported: want 8 completed and exported", e, rep.Exported)
	}
	if rs == nil || rs.Joined != 1 || rs.Local != 0 || len(rs.Workers) != 1 || rs.Workers[0].Done != 8 {
		t.Fatalf("remote %+v: want every episode on the worker", rs)
	}
	if n := srv.Requests(); n < 8 {
		t.Errorf("the model server got %d requests, want one an episode at least", n)
	}

	// frog rollout does the same, and writes the export where it runs.
	addr = freeAddr(t)
	roll := startFrogIn(t, dir, env, "rollout", "--base-url", srv.BaseURL(), "--model", "test-model", "--tasks", "tasks.jsonl",
		"--local", tiny, "--workspaces", "ws", "--group-size", "2", "--concurrency", "4", "--sandbox", "process", "--max-turns", "4",
		"--out", "rollout", "--json", "--log-level", "warn", "--listen", addr, "--local-slots", "0", "--await-workers", "1")
	worker = startFrogIn(t, dir, env, "worker", "--join", addr, "--join-timeout", "10m", "--slots", "4", "--name", "w2", "--workspaces", "ws-w2")
	if code := roll.wait(t, 5*time.Minute); code != 0 {
		t.Fatalf("rollout exited %d; stderr:\n%s\nworker:\n%s", code, roll.stderr.String(), worker.stderr.String())
	}
	var rr struct {
		Outcomes actors.EvalCounts `json:"outcomes"`
		Export   struct {
			Records int `json:"records"`
		} `json:"export"`
		Run actors.Summary `json:"run"`
	}
	if err := json.Unmarshal(roll.stdout.Bytes(), &rr); err != nil {
		t.Fatalf("rollout's summary: %v\n%s", err, roll.stdout.String())
	}
	if rs := rr.Run.Scheduler.Remote; rr.Outcomes.Completed == 0 || rr.Export.Records != rr.Outcomes.Completed || rs == nil || rs.Local != 0 ||
		len(rs.Workers) != 1 || rs.Workers[0].Done != int64(rr.Outcomes.Completed) {
		t.Errorf("rollout: %+v completed, %d exported, remote %+v: want every episode played on the worker and exported", rr.Outcomes, rr.Export.Records, rs)
	}
}

// frog eval --listen plays each policy's evaluation, and the ceiling's,
// on a worker that joins each in turn, and measures what one process
// measures.
func TestEvalWithWorkers(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test on a module")
	}
	dir, env, tiny := tinyTasks(t)
	args := []string{"eval", "--policy", "fl-greedy,random", "--tasks", "tasks.jsonl", "--local", tiny, "--sandbox", "process",
		"--concurrency", "2", "--json", "--log-level", "warn"}
	type evalRep struct {
		Policies []actors.EvalReport `json:"policies"`
		Ceiling  *actors.EvalReport  `json:"ceiling"`
	}
	eval := func(p *frogProc) evalRep {
		t.Helper()
		if code := p.wait(t, 5*time.Minute); code != 0 {
			t.Fatalf("frog eval exited %d; stderr:\n%s", code, p.stderr.String())
		}
		var r evalRep
		if err := json.Unmarshal(p.stdout.Bytes(), &r); err != nil || len(r.Policies) != 2 || r.Ceiling == nil {
			t.Fatalf("eval report %v: %s", err, p.stdout.String())
		}
		return r
	}
	local := eval(startFrogIn(t, dir, env, append(args, "--workspaces", "ws")...))
	addr := freeAddr(t)
	trainer := startFrogIn(t, dir, env, append(args, "--workspaces", "ws", "--listen", addr, "--local-slots", "0", "--await-workers", "1")...)
	worker := startFrogIn(t, dir, env, "worker", "--join", addr, "--join-timeout", "10m", "--slots", "2", "--name", "w1", "--workspaces", "ws-w1", "--json")
	remote := eval(trainer)
	if code := worker.wait(t, time.Minute); code != 0 {
		t.Fatalf("worker exited %d; stderr:\n%s", code, worker.stderr.String())
	}
	var ws actors.WorkerSummary
	if err := json.Unmarshal(worker.stdout.Bytes(), &ws); err != nil || ws.Joins != 3 || ws.Completed == 0 || ws.Ended != "the trainer said: the run is over" {
		t.Errorf("worker summary %+v (%v): want 3 joins (two policies and the ceiling), episodes and the last run's end", ws, err)
	}
	for i, r := range append(remote.Policies, *remote.Ceiling) {
		l := append(local.Policies, *local.Ceiling)[i]
		rs := r.Summary.Scheduler.Remote
		if rs == nil || rs.Local != 0 || len(rs.Workers) != 1 || rs.Workers[0].Done != int64(r.Outcomes.Completed) {
			t.Errorf("%s: remote %+v: want every episode on the worker", r.Policy, rs)
		}
		if r.Solved.K != l.Solved.K || r.Solved.N != l.Solved.N || r.Outcomes != l.Outcomes {
			t.Errorf("%s: %d of %d solved (%+v) on the worker, %d of %d (%+v) in one process", r.Policy, r.Solved.K, r.Solved.N, r.Outcomes,
				l.Solved.K, l.Solved.N, l.Outcomes)
		}
	}
}

// A worker killed with SIGKILL mid-run: the trainer notices, re-admits its
// episodes on the other worker, and the run's accounting holds with no
// episode failed or cancelled.
func TestWorkerKilledLosesNothing(t *testing.T) {
	addr := freeAddr(t)
	trainer := startFrog(t, "sim", "--listen", addr, "--local-slots", "0", "--await-workers", "2", "--episodes", "4000",
		"--concurrency", "64", "--time-scale", "0.05", "--json", "--no-run-dir")
	killed := startFrog(t, "worker", "--join", addr, "--slots", "32", "--name", "killed")
	stays := startFrog(t, "worker", "--join", addr, "--slots", "32", "--name", "stays")
	killed.await(t, "joined the trainer", time.Minute)
	stays.await(t, "joined the trainer", time.Minute)
	time.Sleep(time.Second)
	if err := killed.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	rep := trainerReport(t, trainer)
	if code := stays.wait(t, 30*time.Second); code != 0 {
		t.Errorf("the worker that stayed exited %d; stderr:\n%s", code, stays.stderr.String())
	}
	e, rs := rep.Episodes, rep.Scheduler.Remote
	if !e.Accounted || e.Admitted != 4000 || e.Completed != 4000 {
		t.Errorf("episodes %+v: want 4000 admitted and completed", e)
	}
	if rs == nil || rs.Joined != 2 || rs.Lost != 1 || rs.Readmitted == 0 {
		t.Fatalf("remote %+v: want 2 joined, 1 lost, its episodes re-admitted", rs)
	}
	for _, w := range rs.Workers {
		if w.Name == "killed" && w.Lost == "" || w.Name == "stays" && w.Lost != "" {
			t.Errorf("worker %s: lost %q", w.Name, w.Lost)
		}
	}
}

// A partition: a worker paused (SIGSTOP) past the trainer's deadline is
// counted as lost and its episodes are re-admitted; continued (SIGCONT),
// it hears that it was dropped, cancels what it ran, joins again and gets
// work. The run's accounting holds.
func TestPausedWorkerRejoins(t *testing.T) {
	addr := freeAddr(t)
	trainer := startFrog(t, "sim", "--listen", addr, "--local-slots", "0", "--await-workers", "2", "--episodes", "8000",
		"--concurrency", "64", "--time-scale", "0.05", "--json", "--no-run-dir")
	paused := startFrog(t, "worker", "--join", addr, "--slots", "32", "--name", "paused", "--json")
	other := startFrog(t, "worker", "--join", addr, "--slots", "32", "--name", "other")
	paused.await(t, "joined the trainer", time.Minute)
	other.await(t, "joined the trainer", time.Minute)
	time.Sleep(time.Second)
	if err := paused.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	trainer.await(t, "worker lost", time.Minute)
	if err := paused.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	paused.await(t, "joining the trainer again", time.Minute)
	rep := trainerReport(t, trainer)
	if code := paused.wait(t, 30*time.Second); code != 0 {
		t.Errorf("the paused worker exited %d; stderr:\n%s", code, paused.stderr.String())
	}
	var ws actors.WorkerSummary
	if err := json.Unmarshal(paused.stdout.Bytes(), &ws); err != nil || ws.Joins != 2 {
		t.Errorf("paused worker's summary %+v (%v): want 2 joins", ws, err)
	}
	e, rs := rep.Episodes, rep.Scheduler.Remote
	if !e.Accounted || e.Admitted != 8000 || e.Completed != 8000 {
		t.Errorf("episodes %+v: want 8000 admitted and completed", e)
	}
	if rs == nil || rs.Joined != 3 || rs.Lost != 1 || rs.Readmitted == 0 {
		t.Fatalf("remote %+v: want 3 joins (one a rejoin), 1 lost, its episodes re-admitted", rs)
	}
	if last := rs.Workers[len(rs.Workers)-1]; last.Name != "paused" || last.Episodes == 0 {
		t.Errorf("the rejoined worker %+v got no work", last)
	}
}

// The trainer killed with SIGKILL: its worker cancels its episodes and
// exits 1 within a bound, saying why.
func TestTrainerKilledEndsItsWorkers(t *testing.T) {
	addr := freeAddr(t)
	trainer := startFrog(t, "sim", "--listen", addr, "--local-slots", "0", "--await-workers", "1", "--episodes", "0", "--duration", "10m",
		"--concurrency", "32", "--time-scale", "0.05", "--json", "--no-run-dir")
	worker := startFrog(t, "worker", "--join", addr, "--slots", "32", "--json")
	worker.await(t, "joined the trainer", time.Minute)
	time.Sleep(time.Second)
	if err := trainer.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if code := worker.wait(t, 30*time.Second); code != 1 {
		t.Fatalf("worker exited %d, want 1; stderr:\n%s", code, worker.stderr.String())
	}
	var sum struct {
		Episodes  int64  `json:"episodes"`
		Cancelled int64  `json:"cancelled"`
		Ended     string `json:"ended"`
	}
	if err := json.Unmarshal(worker.stdout.Bytes(), &sum); err != nil {
		t.Fatalf("worker's summary: %v\n%s", err, worker.stdout.String())
	}
	if sum.Episodes == 0 || !strings.Contains(sum.Ended, "trainer") {
		t.Errorf("worker summary %+v: want episodes played and an end that names the trainer", sum)
	}
	if !strings.Contains(worker.stderr.String(), "trainer was lost") {
		t.Errorf("the worker's error does not say the trainer was lost:\n%s", worker.stderr.String())
	}
}

// frog worker and --listen refuse bad flags, and what they cannot serve
// yet, with a usage error.
func TestWorkerUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"worker"}, "--join"},
		{[]string{"worker", "--join", "127.0.0.1:1", "--slots", "0"}, "--slots 0"},
		{[]string{"sim", "--listen", "127.0.0.1:0", "--sandbox", "process"}, "simulated sandboxes only"},
		{[]string{"sim", "--local-slots", "3"}, "need --listen"},
		{[]string{"sim", "--listen", "127.0.0.1:0", "--local-slots", "5000", "--concurrency", "10"}, "--local-slots 5000"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out, errb bytes.Buffer
			err := cli.Run(context.Background(), tc.args, &out, &errb)
			var u *cli.UsageError
			if !errors.As(err, &u) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("frog %v: %v (%s), want a usage error with %q", tc.args, err, errb.String(), tc.want)
			}
		})
	}
}

// Bad addresses end a worker with a clear error, exit 1, and no hang: a
// port where nothing listens, and a port that is not frog's.
func TestWorkerBadJoin(t *testing.T) {
	notFrog, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer notFrog.Close()
	go func() {
		for {
			c, err := notFrog.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("HTTP/1.0 400 Bad Request\r\n\r\n"))
			c.Close()
		}
	}()
	for name, addr := range map[string]string{"nothing": freeAddr(t), "not frog": notFrog.Addr().String()} {
		t.Run(name, func(t *testing.T) {
			w := startFrog(t, "worker", "--join", addr, "--join-timeout", "3s")
			if code := w.wait(t, time.Minute); code != 1 || !strings.Contains(w.stderr.String(), "no trainer answered at "+addr+" within 3s") {
				t.Errorf("exit %d, want 1 and the reason; stderr:\n%s", code, w.stderr.String())
			}
		})
	}
}

// trainerSummary is what a trainer's --json summary says of its run.
type trainerSummary struct {
	actors.Summary
}

// cliVersion is frog's version, as a worker claims it at join.
func cliVersion(t *testing.T) string {
	t.Helper()
	var out, errb bytes.Buffer
	if err := cli.Run(context.Background(), []string{"version"}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	return strings.TrimPrefix(strings.TrimSpace(out.String()), "frog ")
}
