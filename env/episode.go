package env

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Agent chooses the next action of one episode. Act is called from the
// episode's goroutine, one call at a time; it blocks until the action is
// chosen or ctx is cancelled. An agent that cannot reach its model wraps
// ErrInfra.
type Agent interface {
	Act(ctx context.Context, obs Observation) (Action, error)
}

// RunOptions bounds one episode.
type RunOptions struct {
	// MaxSteps is the most actions the agent may take; the tests decide the
	// reward after a submit or after the last step. Default 16.
	MaxSteps int
	// MaxObservation caps the bytes of output the agent is shown per step.
	// Default 8 KiB.
	MaxObservation int
	// Episode and Attempt are copied into every Observation.
	Episode uint64
	Attempt int
}

func (o RunOptions) withDefaults() RunOptions {
	if o.MaxSteps <= 0 {
		o.MaxSteps = 16
	}
	if o.MaxObservation <= 0 {
		o.MaxObservation = 8 << 10
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

// Episode is the step loop of one episode as a state machine: Run drives it
// with a blocking Agent; the actor runtime drives it from messages when the
// sandbox never blocks. Observation, Apply, Apply, …, Finish. An Episode is
// used by one goroutine at a time.
type Episode struct {
	task *Task
	opts RunOptions
	traj Trajectory
	last *StepResult
	over bool
}

// NewEpisode starts an episode of task.
func NewEpisode(task *Task, opts RunOptions) *Episode {
	opts = opts.withDefaults()
	return &Episode{task: task, opts: opts, traj: Trajectory{
		Task: task.ID, Episode: opts.Episode, Attempt: opts.Attempt, Steps: make([]Step, 0, min(opts.MaxSteps, 4)),
	}}
}

// Observation is what the agent sees before its next action; ok is false
// when the episode is over (submitted, or out of steps) and Finish is next.
func (e *Episode) Observation() (obs Observation, ok bool) {
	if e.over || len(e.traj.Steps) >= e.opts.MaxSteps {
		return Observation{}, false
	}
	return Observation{Episode: e.opts.Episode, Attempt: e.opts.Attempt, Step: len(e.traj.Steps), Task: e.task, Last: e.last}, true
}

// Apply performs the agent's action in sb and records it. It returns an
// error only when the episode must end: an infrastructure fault, or ctx
// cancelled.
func (e *Episode) Apply(ctx context.Context, sb Sandbox, act Action) error {
	step := len(e.traj.Steps)
	if act.Tool == ToolSubmit {
		e.traj.Steps = append(e.traj.Steps, Step{Action: act})
		e.traj.Submitted, e.over = true, true
		return nil
	}
	res, err := execute(ctx, sb, e.task, act, e.opts.MaxObservation)
	if err != nil {
		return fmt.Errorf("episode %d step %d: %s: %w", e.opts.Episode, step, act.Tool, err)
	}
	e.traj.Steps = append(e.traj.Steps, Step{Action: act, Result: res})
	e.last = &e.traj.Steps[len(e.traj.Steps)-1].Result
	return nil
}

// Finish runs the deciding tests and returns the trajectory with its reward.
func (e *Episode) Finish(ctx context.Context, sb Sandbox) (Trajectory, error) {
	e.over = true
	passed, err := Evaluate(ctx, sb, e.task)
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
// become the result's output.
func execute(ctx context.Context, sb Sandbox, task *Task, act Action, maxOut int) (StepResult, error) {
	switch act.Tool {
	case ToolView:
		data, err := sb.ReadFile(ctx, act.Path)
		if err != nil {
			return agentError(ctx, err)
		}
		return StepResult{Output: capString(data, maxOut)}, nil
	case ToolSearch:
		res, err := sb.Exec(ctx, ExecOptions{Cmd: []string{"grep", "-rn", "--", act.Query, "."}, MaxOutput: maxOut})
		if err != nil {
			return agentError(ctx, err)
		}
		return StepResult{Output: capString(res.Stdout, maxOut), ExitCode: res.ExitCode, TimedOut: res.TimedOut}, nil
	case ToolEdit:
		return edit(ctx, sb, act, maxOut)
	case ToolRunTests:
		res, err := sb.Exec(ctx, ExecOptions{Cmd: task.TestCmd, MaxOutput: maxOut})
		if err != nil {
			return agentError(ctx, err)
		}
		out := append(res.Stdout[:len(res.Stdout):len(res.Stdout)], res.Stderr...)
		return StepResult{Output: capString(out, maxOut), ExitCode: res.ExitCode, TimedOut: res.TimedOut}, nil
	default:
		return StepResult{Output: fmt.Sprintf("error: unknown tool %s", act.Tool), ExitCode: 2}, nil
	}
}

func edit(ctx context.Context, sb Sandbox, act Action, maxOut int) (StepResult, error) {
	content := act.New
	if act.Old != "" {
		data, err := sb.ReadFile(ctx, act.Path)
		if err != nil {
			return agentError(ctx, err)
		}
		old := string(data)
		switch n := strings.Count(old, act.Old); n {
		case 0:
			return StepResult{Output: "error: old text not found in " + act.Path, ExitCode: 1}, nil
		case 1:
			content = strings.Replace(old, act.Old, act.New, 1)
		default:
			return StepResult{Output: fmt.Sprintf("error: old text occurs %d times in %s; give more context", n, act.Path), ExitCode: 1}, nil
		}
	}
	if err := sb.WriteFile(ctx, act.Path, []byte(content)); err != nil {
		return agentError(ctx, err)
	}
	return StepResult{Output: "edited " + act.Path}, nil
}

// agentError returns err as an episode-ending error when it is an
// infrastructure fault or a cancellation, and otherwise as the step's output.
func agentError(ctx context.Context, err error) (StepResult, error) {
	if errors.Is(err, ErrInfra) || ctx.Err() != nil {
		return StepResult{}, err
	}
	return StepResult{Output: "error: " + err.Error(), ExitCode: 1}, nil
}

func capString(b []byte, n int) string {
	if len(b) > n {
		b = b[:n]
	}
	return string(b)
}
