package actors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/frognano/frog/actors/wire"
	"github.com/frognano/frog/env"
	"github.com/frognano/frog/policy"
)

// Codec turns what a remote worker needs of a run into bytes and back: the
// policy the learner published, and each task. The trainer encodes, the
// worker decodes; both must use the same Codec. Its methods are called from
// the policy server's, the scheduler's and the worker's goroutines and must
// be safe for concurrent use.
type Codec interface {
	// EncodePolicy encodes a policy for a worker's replica: kind names
	// its family, weights its parameters.
	EncodePolicy(p policy.Policy) (kind string, weights []byte, err error)
	// DecodePolicy makes the worker's replica.
	DecodePolicy(kind string, weights []byte) (policy.Policy, error)
	// EncodeTask encodes a task as its record and, for a simulation only,
	// what the simulation's oracle knows of it (empty otherwise).
	EncodeTask(t *env.Task) (record, oracle []byte, err error)
	// DecodeTask makes the worker's copy of a task.
	DecodeTask(record, oracle []byte) (*env.Task, error)
}

// JSONTasks is the task half of a Codec for real tasks: the record as
// JSON (the store's format), no oracle. Embed it in a Codec that adds
// the policy half.
type JSONTasks struct{}

// EncodeTask encodes t's record as JSON.
func (JSONTasks) EncodeTask(t *env.Task) ([]byte, []byte, error) {
	b, err := json.Marshal(t)
	return b, nil, err
}

// DecodeTask decodes a JSON record; an oracle part is refused, since no
// simulation is there to read it.
func (JSONTasks) DecodeTask(record, oracle []byte) (*env.Task, error) {
	if len(oracle) > 0 {
		return nil, errors.New("actors: a simulated task's oracle part reached a codec for real tasks")
	}
	t := new(env.Task)
	if err := json.Unmarshal(record, t); err != nil {
		return nil, fmt.Errorf("actors: task record: %w", err)
	}
	return t, nil
}

// wireOutcome and outcomeKind convert an outcome's kind to its wire form
// and back.
func wireOutcome(k OutcomeKind) wire.Outcome {
	switch k {
	case Completed:
		return wire.Outcome_OUTCOME_COMPLETED
	case FailedInfra:
		return wire.Outcome_OUTCOME_FAILED_INFRA
	case Cancelled:
		return wire.Outcome_OUTCOME_CANCELLED
	}
	return wire.Outcome_OUTCOME_UNSPECIFIED
}

func outcomeKind(o wire.Outcome) (OutcomeKind, bool) {
	switch o {
	case wire.Outcome_OUTCOME_COMPLETED:
		return Completed, true
	case wire.Outcome_OUTCOME_FAILED_INFRA:
		return FailedInfra, true
	case wire.Outcome_OUTCOME_CANCELLED:
		return Cancelled, true
	}
	return 0, false
}

// wireError and fromWireError carry an error as its kind and message: the
// trainer acts on the kind (errors.Is with env.ErrInfra and
// context.Canceled hold on the far side), the message is for people.
func wireError(err error) (wire.ErrorKind, string) {
	switch {
	case err == nil:
		return wire.ErrorKind_ERROR_NONE, ""
	case errors.Is(err, context.Canceled):
		return wire.ErrorKind_ERROR_CANCELLED, wireText(err.Error())
	case errors.Is(err, env.ErrInfra):
		return wire.ErrorKind_ERROR_INFRA, wireText(err.Error())
	}
	return wire.ErrorKind_ERROR_OTHER, wireText(err.Error())
}

// wireText makes a message fit a protobuf string, which must be UTF-8:
// an error may quote a command's output, which need not be. Invalid
// bytes become U+FFFD, as in a trajectory's JSON; a message that did not
// fit would make the whole batch it travels in fail to encode.
func wireText(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }

// remoteError is an error that came from a worker: its message, and the
// kind it had there.
type remoteError struct {
	msg  string
	kind error // env.ErrInfra, context.Canceled or nil
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.kind }

func fromWireError(k wire.ErrorKind, msg string) error {
	switch k {
	case wire.ErrorKind_ERROR_NONE:
		return nil
	case wire.ErrorKind_ERROR_INFRA:
		return &remoteError{msg: msg, kind: env.ErrInfra}
	case wire.ErrorKind_ERROR_CANCELLED:
		return &remoteError{msg: msg, kind: context.Canceled}
	}
	return &remoteError{msg: msg}
}

// episodeDone is what a worker sends when one of its episodes ends.
func episodeDone(r *EpisodeResult, placement uint64) (*wire.EpisodeDone, error) {
	kind, msg := wireError(r.Err)
	d := &wire.EpisodeDone{Episode: r.Episode, Placement: placement, Outcome: wireOutcome(r.Kind), Attempts: int32(r.Attempts), ErrorKind: kind, Error: msg}
	if r.Trajectory != nil {
		b, err := marshalTrajectory(r.Trajectory)
		if err != nil {
			return nil, fmt.Errorf("episode %d: encode trajectory: %w", r.Episode, err)
		}
		d.Trajectory = b
	}
	return d, nil
}

// episodeResult is the trainer's EpisodeResult for a worker's EpisodeDone
// of the episode spec.
func episodeResult(spec *episodeSpec, d *wire.EpisodeDone) *EpisodeResult {
	r := &EpisodeResult{Episode: spec.id, Group: spec.group, GroupSize: spec.groupSize, Task: spec.task,
		Attempts: int(d.Attempts), Err: fromWireError(d.ErrorKind, d.Error)}
	kind, ok := outcomeKind(d.Outcome)
	if !ok {
		r.Kind, r.Err = FailedInfra, env.Infra(fmt.Errorf("episode %d: a worker sent outcome %v", spec.id, d.Outcome))
		return r
	}
	r.Kind = kind
	if kind == Completed {
		t, err := unmarshalTrajectory(d.Trajectory)
		if err != nil {
			r.Kind, r.Err = FailedInfra, env.Infra(fmt.Errorf("episode %d: a worker's trajectory: %w", spec.id, err))
			return r
		}
		r.Trajectory = t
	}
	return r
}
