package env

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"
)

// Agent chooses the next action of one episode. Act is called from the
// episode's goroutine, one call at a time; it blocks until the action is
// chosen or ctx is cancelled. An agent that cannot reach its model wraps
// ErrInfra.
type Agent interface {
	Act(ctx context.Context, obs Observation) (Action, error)
}

// StepsForTries is the step limit of an episode that may try tries
// candidates: one step a try, and 12 for the rest of a repair (view,
// run_tests, coverage, candidates, edits, submit). Every command that
// takes --tries and no --max-steps uses it.
func StepsForTries(tries int) int { return tries + 12 }

// RunOptions bounds one episode.
type RunOptions struct {
	// MaxSteps is the most actions the agent may take; the tests decide the
	// reward after a submit or after the last step. Default 16.
	MaxSteps int
	// MaxTries is the most candidates the episode may try (0: no limit
	// beyond MaxSteps); a try past it is refused, as the agent's mistake.
	MaxTries int
	// MaxObservation caps the bytes of each text the agent is shown per
	// step (output, stdout, stderr), cut in the middle. Default 16 KiB.
	MaxObservation int
	// Harness runs the test-aware tools (run_tests with per-test verdicts,
	// coverage, candidates, try, apply) and the verdict. Without one,
	// run_tests runs the task's test command, the verdict is its exit code,
	// and the other tools answer that they are not available.
	Harness Harness
	// Episode and Attempt are copied into every Observation.
	Episode uint64
	Attempt int
}

func (o RunOptions) withDefaults() RunOptions {
	if o.MaxSteps <= 0 {
		o.MaxSteps = 16
	}
	if o.MaxObservation <= 0 {
		o.MaxObservation = 16 << 10
	}
	return o
}

// Run plays one episode of task in sb with agent and returns its trajectory.
// It does not close sb: the caller owns it.
//
// The returned error is nil when the episode ended (whatever the reward); it
// wraps ErrInfra when the sandbox or the agent's infrastructure failed, and
// wraps ctx.Err() when ctx was cancelled. The partial trajectory is returned
// with any error. Errors of the agent's own making (a path outside the
// workspace, an edit whose old text is not in the file) are shown to the
// agent as the step's output and do not end the episode.
func Run(ctx context.Context, sb Sandbox, agent Agent, task *Task, opts RunOptions) (Trajectory, error) {
	ep := NewEpisode(task, opts)
	for {
		obs, ok := ep.Observation()
		if !ok {
			break
		}
		if err := ctx.Err(); err != nil {
			return ep.traj, fmt.Errorf("episode %d step %d: %w", ep.opts.Episode, obs.Step, err)
		}
		act, err := agent.Act(ctx, obs)
		if err != nil {
			return ep.traj, fmt.Errorf("episode %d step %d: act: %w", ep.opts.Episode, obs.Step, err)
		}
		if err := ep.Apply(ctx, sb, act); err != nil {
			return ep.traj, err
		}
	}
	return ep.Finish(ctx, sb)
}

// minSteps is the room a trajectory starts with: the shortest repair
// (view, edit, submit). Longer episodes grow it as they go.
const minSteps = 3

// Episode is the step loop of one episode as a state machine: Run drives it
// with a blocking Agent; the actor runtime drives it from messages when the
// sandbox never blocks. Observation, Apply, Apply, …, Finish. An Episode is
// used by one goroutine at a time.
type Episode struct {
	task *Task
	view TaskView
	opts RunOptions
	traj Trajectory
	last *StepResult
	over bool
	ws   Workspace
	// list is the last candidates list and listed the workspace state it
	// was made for.
	list   []Candidate
	listed string
	tries  int
}

// NewEpisode starts an episode of task.
func NewEpisode(task *Task, opts RunOptions) *Episode {
	e := new(Episode)
	e.Reset(task, opts)
	return e
}

// Reset makes e, whatever it held, the start of an episode of task, as
// NewEpisode(task, opts) returns it: a driver that runs many episodes one
// after another reuses one Episode rather than allocate one each. The
// trajectories e returned before keep their steps; what e's Workspace and
// the Task of its observations point to is e's new episode from now on.
func (e *Episode) Reset(task *Task, opts RunOptions) {
	opts = opts.withDefaults()
	*e = Episode{task: task, view: task.View(), opts: opts, ws: Workspace{Task: task}, traj: Trajectory{
		Task: task.ID, Episode: opts.Episode, Attempt: opts.Attempt, Steps: make([]Step, 0, min(opts.MaxSteps, minSteps)),
	}}
}

// Observation is what the agent sees before its next action; ok is false
// when the episode is over (submitted, or out of steps) and Finish is next.
func (e *Episode) Observation() (obs Observation, ok bool) {
	if e.over || len(e.traj.Steps) >= e.opts.MaxSteps {
		return Observation{}, false
	}
	return Observation{
		Episode: e.opts.Episode, Attempt: e.opts.Attempt, Step: len(e.traj.Steps), MaxSteps: e.opts.MaxSteps, MaxTries: e.opts.MaxTries,
		Task: &e.view, Last: e.last, History: e.traj.Steps,
	}, true
}

// Apply performs the agent's action in sb and records it. It returns an
// error only when the episode must end: an infrastructure fault, or ctx
// cancelled.
func (e *Episode) Apply(ctx context.Context, sb Sandbox, act Action) error {
	step := len(e.traj.Steps)
	// A mistake is answered as one whatever tool it names: a malformed
	// call that happens to name submit does not end the episode.
	if act.Tool == ToolSubmit && act.Mistake() == "" {
		e.traj.Steps = append(e.traj.Steps, Step{Action: act})
		e.traj.Submitted, e.over = true, true
		return nil
	}
	start := time.Now()
	res, err := e.execute(ctx, sb, act)
	if err != nil {
		return fmt.Errorf("episode %d step %d: %s: %w", e.opts.Episode, step, act.Tool, err)
	}
	res.Duration = time.Since(start)
	e.traj.Executions += res.Executions
	e.traj.Steps = append(e.traj.Steps, Step{Action: act, Result: res})
	e.last = &e.traj.Steps[len(e.traj.Steps)-1].Result
	return nil
}

// Finish runs the deciding tests and returns the trajectory with its reward.
func (e *Episode) Finish(ctx context.Context, sb Sandbox) (Trajectory, error) {
	e.over = true
	var passed bool
	var err error
	if h := e.opts.Harness; h != nil {
		var v Verdict
		var cost Cost
		v, cost, err = h.Verdict(ctx, sb, &e.ws)
		e.traj.Executions += cost.Executions
		passed = v.Pass && v.Suspected == ""
		e.traj.RewardHackSuspected = v.Suspected
	} else {
		passed, err = Evaluate(ctx, sb, e.task)
		e.traj.Executions++
	}
	if err != nil {
		return e.traj, fmt.Errorf("episode %d: evaluate: %w", e.opts.Episode, err)
	}
	if passed {
		e.traj.Reward = 1
	}
	return e.traj, nil
}

// Trajectory is what the episode has recorded so far.
func (e *Episode) Trajectory() Trajectory { return e.traj }

// Workspace is the episode's record of what it changed.
func (e *Episode) Workspace() *Workspace { return &e.ws }

// Evaluate runs the task's deciding tests in sb and reports whether they
// pass. A sandbox fault is an error; failing tests are not.
func Evaluate(ctx context.Context, sb Sandbox, task *Task) (bool, error) {
	res, err := sb.Exec(ctx, ExecOptions{Cmd: task.TestCmd})
	if err != nil {
		return false, err
	}
	return res.ExitCode == 0 && !res.TimedOut, nil
}

// execute performs one non-submit action. Only errors that end the episode
// (infrastructure faults, cancellation) are returned; the agent's mistakes
// become the result's Error and Output.
func (e *Episode) execute(ctx context.Context, sb Sandbox, act Action) (StepResult, error) {
	maxOut := e.opts.MaxObservation
	h := e.opts.Harness
	if m := act.Mistake(); m != "" {
		return mistake(m), nil
	}
	switch act.Tool {
	case ToolView:
		return e.viewFile(ctx, sb, act)
	case ToolSearch:
		if act.Query() == "" {
			return mistake("search needs a query"), nil
		}
		res, err := sb.Exec(ctx, ExecOptions{Cmd: []string{"grep", "-rn", "--", act.Query(), "."}, MaxOutput: 4 * maxOut})
		if err != nil {
			return agentError(ctx, err)
		}
		out := CutMiddle(string(res.Stdout), maxOut)
		if res.ExitCode == 1 && len(res.Stdout) == 0 {
			out = "no match"
		}
		return StepResult{Output: out, ExitCode: res.ExitCode,
			Detail: &StepDetail{Stderr: CutMiddle(string(res.Stderr), maxOut), TimedOut: res.TimedOut}}, nil
	case ToolEdit:
		return e.edit(ctx, sb, act)
	case ToolRevert:
		return e.revert(ctx, sb)
	case ToolRunTests:
		if h == nil {
			res, err := sb.Exec(ctx, ExecOptions{Cmd: e.task.TestCmd, MaxOutput: 4 * maxOut})
			if err != nil {
				return agentError(ctx, err)
			}
			return StepResult{ExitCode: res.ExitCode, Executions: 1, Detail: &StepDetail{Stdout: CutMiddle(string(res.Stdout), maxOut),
				Stderr: CutMiddle(string(res.Stderr), maxOut), TimedOut: res.TimedOut}}, nil
		}
		rep, cost, err := h.RunTests(ctx, sb, &e.ws, act.Tests())
		if err != nil {
			return agentError(ctx, err)
		}
		rep.BuildOutput = CutMiddle(rep.BuildOutput, maxOut)
		return StepResult{Output: summarize(&rep), Detail: &StepDetail{Tests: &rep}, Executions: cost.Executions, Cached: cost.Cached}, nil
	case ToolCoverage:
		if h == nil {
			return unavailable(act.Tool), nil
		}
		rep, cost, err := h.Coverage(ctx, sb, &e.ws, act.Tests())
		if err != nil {
			return agentError(ctx, err)
		}
		return StepResult{Output: fmt.Sprintf("coverage of %d tests over %d blocks", len(rep.Tests), len(rep.Blocks)),
			Detail: &StepDetail{Coverage: &rep}, Executions: cost.Executions, Cached: cost.Cached}, nil
	case ToolCandidates:
		if h == nil {
			return unavailable(act.Tool), nil
		}
		if len(act.Lines()) == 0 {
			return mistake("candidates needs lines to look at"), nil
		}
		list, err := h.Candidates(ctx, sb, &e.ws, act.Lines())
		if err != nil {
			return agentError(ctx, err)
		}
		e.list, e.listed = list, e.ws.Hash()
		return StepResult{Output: fmt.Sprintf("%d candidates at %d lines", len(list), len(act.Lines())), Detail: &StepDetail{Candidates: list}}, nil
	case ToolTry:
		return e.try(ctx, sb, act)
	case ToolApply:
		return e.apply(ctx, sb, act)
	default:
		return mistake(fmt.Sprintf("unknown tool %s", act.Tool)), nil
	}
}

func (e *Episode) viewFile(ctx context.Context, sb Sandbox, act Action) (StepResult, error) {
	data, err := sb.ReadFile(ctx, act.Path)
	if err != nil {
		return agentError(ctx, err)
	}
	text := string(data)
	if lo, hi := act.StartLine(), act.EndLine(); lo > 0 || hi > 0 {
		lines := strings.SplitAfter(text, "\n")
		if lines[len(lines)-1] == "" {
			lines = lines[:len(lines)-1]
		}
		lo = max(lo, 1)
		if hi <= 0 || hi > len(lines) {
			hi = len(lines)
		}
		if lo > hi {
			return mistake(fmt.Sprintf("lines %d-%d: %s has %d lines", act.StartLine(), act.EndLine(), act.Path, len(lines))), nil
		}
		text = strings.Join(lines[lo-1:hi], "")
	}
	return StepResult{Output: CutMiddle(text, e.opts.MaxObservation)}, nil
}

func (e *Episode) edit(ctx context.Context, sb Sandbox, act Action) (StepResult, error) {
	if act.Path == "" {
		return mistake("edit needs a path"), nil
	}
	was, err := e.read(ctx, sb, act.Path)
	if err != nil {
		if act.Old != "" || errors.Is(err, ErrInfra) || ctx.Err() != nil {
			return agentError(ctx, err)
		}
		was = nil // a new file, or one the sandbox cannot read: written whole
	}
	content := act.New
	if act.Old != "" {
		if was == nil {
			return mistake("no such file: " + act.Path), nil
		}
		old := string(was)
		switch n := strings.Count(old, act.Old); n {
		case 0:
			return mistake("old text not found in " + act.Path), nil
		case 1:
			content = strings.Replace(old, act.Old, act.New, 1)
		default:
			return mistake(fmt.Sprintf("old text occurs %d times in %s; give more context", n, act.Path)), nil
		}
	}
	if err := e.write(ctx, sb, act.Path, was, []byte(content)); err != nil {
		return agentError(ctx, err)
	}
	return StepResult{Output: "edited " + act.Path}, nil
}

// read returns a workspace file's content, nil when it does not exist.
func (e *Episode) read(ctx context.Context, sb Sandbox, path string) ([]byte, error) {
	if data, ok := e.ws.current(path); ok {
		return data, nil
	}
	data, err := sb.ReadFile(ctx, path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return data, err
}

// write changes a file and records the change. The workspace keeps data:
// callers pass a slice of their own and never change it after.
func (e *Episode) write(ctx context.Context, sb Sandbox, path string, was, data []byte) error {
	if err := sb.WriteFile(ctx, path, data); err != nil {
		return err
	}
	e.ws.record(path, was, data)
	return nil
}

// revert puts back every file the episode changed. A file it created is
// left empty when the sandbox cannot remove files.
func (e *Episode) revert(ctx context.Context, sb Sandbox) (StepResult, error) {
	n := 0
	for _, f := range e.ws.Files() {
		orig, _ := e.ws.original(f)
		if orig == nil {
			if err := remove(ctx, sb, f); err != nil {
				return agentError(ctx, err)
			}
		} else if err := sb.WriteFile(ctx, f, orig); err != nil {
			return agentError(ctx, err)
		}
		n++
	}
	e.ws.reverted()
	return StepResult{Output: fmt.Sprintf("reverted %d files", n)}, nil
}

// Remover is an optional capability of a Sandbox: Remove deletes a file of
// the workspace. Without it, revert runs rm.
type Remover interface {
	Remove(ctx context.Context, path string) error
}

func remove(ctx context.Context, sb Sandbox, path string) error {
	if r, ok := sb.(Remover); ok {
		return r.Remove(ctx, path)
	}
	res, err := sb.Exec(ctx, ExecOptions{Cmd: []string{"rm", "-f", "--", path}})
	if err != nil {
		return err
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("rm %s: %s", path, strings.TrimSpace(string(res.Stderr)))
	}
	return nil
}

// candidates returns the candidates ids name from the last list, or the
// agent's mistake.
func (e *Episode) candidates(ids []int) (string, bool) {
	switch {
	case e.list == nil:
		return "no candidates listed: call candidates first", false
	case e.listed != e.ws.Hash():
		return "the candidates are stale: the workspace changed since they were listed; list them again", false
	case len(ids) == 0:
		return "name the candidates to use by their IDs", false
	}
	for _, id := range ids {
		if id < 0 || id >= len(e.list) {
			return fmt.Sprintf("no candidate %d (the list has %d)", id, len(e.list)), false
		}
	}
	return "", true
}

func (e *Episode) try(ctx context.Context, sb Sandbox, act Action) (StepResult, error) {
	h := e.opts.Harness
	if h == nil {
		return unavailable(act.Tool), nil
	}
	ids := act.CandidateIDs()
	if msg, ok := e.candidates(ids); !ok {
		return mistake(msg), nil
	}
	if e.opts.MaxTries > 0 && e.tries+len(ids) > e.opts.MaxTries {
		return mistake(fmt.Sprintf("out of tries: %d of %d used", e.tries, e.opts.MaxTries)), nil
	}
	res, cost, err := h.Try(ctx, sb, &e.ws, e.list, ids)
	if err != nil {
		return agentError(ctx, err)
	}
	e.tries += len(ids)
	e.traj.Tries += len(ids)
	var b strings.Builder
	for _, r := range res {
		switch {
		case !r.Built:
			fmt.Fprintf(&b, "candidate %d: does not build\n", r.Candidate)
		case r.AllPass:
			fmt.Fprintf(&b, "candidate %d: every test passes\n", r.Candidate)
		default:
			fmt.Fprintf(&b, "candidate %d: fixes %d, breaks %d, %d failing\n", r.Candidate, len(r.Fixed), len(r.Broken), len(r.Failing))
		}
	}
	return StepResult{Output: b.String(), Detail: &StepDetail{Tries: res}, Executions: cost.Executions, Cached: cost.Cached}, nil
}

func (e *Episode) apply(ctx context.Context, sb Sandbox, act Action) (StepResult, error) {
	if e.opts.Harness == nil {
		return unavailable(act.Tool), nil
	}
	ids := act.CandidateIDs()
	if msg, ok := e.candidates(ids); !ok {
		return mistake(msg), nil
	}
	if len(ids) != 1 {
		return mistake("apply takes one candidate"), nil
	}
	c := e.list[ids[0]]
	was, err := e.read(ctx, sb, c.File)
	if err != nil {
		return agentError(ctx, err)
	}
	data, err := Splice(was, c.Edits)
	if err != nil {
		return mistake(fmt.Sprintf("candidate %d does not apply: %v", c.ID, err)), nil
	}
	if err := e.write(ctx, sb, c.File, was, data); err != nil {
		return agentError(ctx, err)
	}
	return StepResult{Output: fmt.Sprintf("applied candidate %d to %s: %s", c.ID, c.File, c.Desc)}, nil
}

// Splice applies edits (byte-range replacements of src, in any order, not
// overlapping) and returns the result.
func Splice(src []byte, edits []Edit) ([]byte, error) {
	es := append([]Edit(nil), edits...)
	for i := 1; i < len(es); i++ { // insertion sort: lists are short
		for j := i; j > 0 && es[j].Offset < es[j-1].Offset; j-- {
			es[j], es[j-1] = es[j-1], es[j]
		}
	}
	out := make([]byte, 0, len(src)+16)
	at := 0
	for _, ed := range es {
		end := ed.Offset + len(ed.Old)
		if ed.Offset < at || end > len(src) || string(src[ed.Offset:end]) != ed.Old {
			return nil, fmt.Errorf("edit at byte %d: %q is not there", ed.Offset, ed.Old)
		}
		out = append(out, src[at:ed.Offset]...)
		out = append(out, ed.New...)
		at = end
	}
	return append(out, src[at:]...), nil
}

// summarize is the one-line output of a test report.
func summarize(r *TestReport) string {
	if !r.Built {
		return "the tests do not build:\n" + r.BuildOutput
	}
	s := fmt.Sprintf("%d passed, %d failed", r.Passed, r.Failed)
	if f := r.Failing(); len(f) > 0 {
		s += ": " + strings.Join(f, " ")
	}
	if r.TimedOut {
		s += " (timed out)"
	}
	return s
}

func mistake(msg string) StepResult {
	return StepResult{Output: "error: " + msg, Error: msg, ExitCode: 1}
}

func unavailable(t Tool) StepResult {
	return mistake(fmt.Sprintf("%s is not available here: this episode has no test harness", t))
}

// agentError returns err as an episode-ending error when it is an
// infrastructure fault or a cancellation, and otherwise as the step's output.
func agentError(ctx context.Context, err error) (StepResult, error) {
	if errors.Is(err, ErrInfra) || ctx.Err() != nil {
		return StepResult{}, err
	}
	return mistake(err.Error()), nil
}
