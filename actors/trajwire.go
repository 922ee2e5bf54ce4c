package actors

import (
	"encoding/json"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/frognano/frog/actors/wire"
	"github.com/frognano/frog/env"
)

// marshalTrajectory encodes a trajectory as a wire.Trajectory message, as
// a worker sends it (EpisodeDone.trajectory). The rare, free-form parts of
// a step (a language-model turn, a command's streams and the tools'
// reports) travel as their trajectory JSON; everything an episode of the
// built-in policy carries at every step is binary.
func marshalTrajectory(t *env.Trajectory) ([]byte, error) {
	w := &wire.Trajectory{Task: t.Task, Episode: t.Episode, Attempt: int32(t.Attempt), Reward: t.Reward, Submitted: t.Submitted,
		RewardHackSuspected: t.RewardHackSuspected, Executions: int32(t.Executions), Tries: int32(t.Tries),
		Steps: make([]*wire.Step, len(t.Steps))}
	steps := make([]wire.Step, len(t.Steps))
	for i := range t.Steps {
		if err := wireStep(&steps[i], &t.Steps[i]); err != nil {
			return nil, fmt.Errorf("step %d: %w", i, err)
		}
		w.Steps[i] = &steps[i]
	}
	return proto.Marshal(w)
}

func wireStep(w *wire.Step, s *env.Step) error {
	a, r := &s.Action, &s.Result
	*w = wire.Step{Tool: uint32(a.Tool), Path: a.Path, Old: a.Old, New: a.New, Version: a.Version, Logprob: a.LogProb,
		Output: r.Output, Error: r.Error, ExitCode: int64(r.ExitCode), Executions: int64(r.Executions), Cached: r.Cached,
		DurationNs: int64(r.Duration)}
	if d := a.Decision; d != nil {
		w.Decision = &wire.Decision{Kind: d.Kind, Features: d.Features, Dim: int64(d.Dim), Chosen: int64(d.Chosen), Temperature: d.Temperature}
	}
	if x := a.Args; x != nil {
		w.StartLine, w.EndLine, w.Query, w.Tests, w.Mistake = int32(x.StartLine), int32(x.EndLine), x.Query, x.Tests, x.Mistake
		for _, l := range x.Lines {
			w.Lines = append(w.Lines, &wire.Line{File: l.File, Line: int64(l.Line)})
		}
		for _, c := range x.Candidates {
			w.Candidates = append(w.Candidates, int64(c))
		}
	}
	var err error
	if a.Turn != nil {
		if w.Turn, err = json.Marshal(a.Turn); err != nil {
			return fmt.Errorf("turn: %w", err)
		}
	}
	if r.Detail != nil {
		if w.Detail, err = json.Marshal(env.StepResult{Detail: r.Detail}); err != nil {
			return fmt.Errorf("result detail: %w", err)
		}
	}
	return nil
}

// unmarshalTrajectory decodes what marshalTrajectory encoded.
func unmarshalTrajectory(b []byte) (*env.Trajectory, error) {
	w := new(wire.Trajectory)
	if err := proto.Unmarshal(b, w); err != nil {
		return nil, err
	}
	t := &env.Trajectory{Task: w.Task, Episode: w.Episode, Attempt: int(w.Attempt), Reward: w.Reward, Submitted: w.Submitted,
		RewardHackSuspected: w.RewardHackSuspected, Executions: int(w.Executions), Tries: int(w.Tries)}
	if len(w.Steps) > 0 {
		t.Steps = make([]env.Step, len(w.Steps))
	}
	for i, ws := range w.Steps {
		if err := fromWireStep(&t.Steps[i], ws); err != nil {
			return nil, fmt.Errorf("step %d: %w", i, err)
		}
	}
	return t, nil
}

func fromWireStep(s *env.Step, w *wire.Step) error {
	if w.Tool > 255 {
		return fmt.Errorf("tool %d", w.Tool)
	}
	s.Action = env.Action{Tool: env.Tool(w.Tool), Path: w.Path, Old: w.Old, New: w.New, Version: w.Version, LogProb: w.Logprob}
	s.Result = env.StepResult{Output: w.Output, Error: w.Error, ExitCode: int(w.ExitCode), Executions: int(w.Executions),
		Cached: w.Cached, Duration: time.Duration(w.DurationNs)}
	if d := w.Decision; d != nil {
		s.Action.Decision = &env.Decision{Kind: d.Kind, Features: d.Features, Dim: int(d.Dim), Chosen: int(d.Chosen), Temperature: d.Temperature}
	}
	if w.StartLine != 0 || w.EndLine != 0 || w.Query != "" || w.Tests != nil || w.Lines != nil || w.Candidates != nil || w.Mistake != "" {
		x := &env.ActionArgs{StartLine: int(w.StartLine), EndLine: int(w.EndLine), Query: w.Query, Tests: w.Tests, Mistake: w.Mistake}
		if w.Lines != nil {
			x.Lines = make([]env.Line, len(w.Lines))
			for i, l := range w.Lines {
				x.Lines[i] = env.Line{File: l.File, Line: int(l.Line)}
			}
		}
		if w.Candidates != nil {
			x.Candidates = make([]int, len(w.Candidates))
			for i, c := range w.Candidates {
				x.Candidates[i] = int(c)
			}
		}
		s.Action.Args = x
	}
	if len(w.Turn) > 0 {
		s.Action.Turn = new(env.Turn)
		if err := json.Unmarshal(w.Turn, s.Action.Turn); err != nil {
			return fmt.Errorf("turn: %w", err)
		}
	}
	if len(w.Detail) > 0 {
		var r env.StepResult
		if err := json.Unmarshal(w.Detail, &r); err != nil {
			return fmt.Errorf("result detail: %w", err)
		}
		s.Result.Detail = r.Detail
	}
	return nil
}
