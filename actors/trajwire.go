package actors

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/frognano/frog/env"
)

// A trajectory crosses the wire as actors/wire's Trajectory message
// (EpisodeDone.trajectory). marshalTrajectory and unmarshalTrajectory
// write and read that message's encoding straight from and into
// env.Trajectory, with no generated types in between, so that encoding a
// result allocates little more than its bytes.
// TestTrajectoryWireMatchesTheSchema holds the two encodings to each
// other. The rare, free-form parts of a step (a language-model turn, a
// command's streams and the tools' reports) travel as their trajectory
// JSON.

// The field numbers of frog.proto's Trajectory, Step, Decision and Line.
const (
	trajTask, trajEpisode, trajAttempt, trajSteps, trajReward, trajSubmitted, trajSuspected, trajExecutions, trajTries = 1, 2, 3, 4, 5, 6, 7, 8, 9

	stepTool, stepPath, stepOld, stepNew, stepVersion, stepLogProb, stepDecision = 1, 2, 3, 4, 5, 6, 7
	stepStartLine, stepEndLine, stepQuery, stepTests, stepLines, stepCandidates  = 9, 10, 11, 12, 13, 14
	stepMistake, stepTurn, stepOutput, stepError, stepExitCode, stepExecutions   = 15, 16, 17, 18, 19, 20
	stepCached, stepDuration, stepDetail                                         = 21, 22, 23
	decKind, decFeatures, decDim, decChosen, decTemperature                      = 1, 2, 3, 4, 5
	lineFile, lineLine                                                           = 1, 2
)

// trajEncoder holds the scratch buffers of nested messages.
type trajEncoder struct{ step, sub []byte }

var trajEncoders = sync.Pool{New: func() any { return new(trajEncoder) }}

// marshalTrajectory encodes a trajectory as a wire.Trajectory message.
func marshalTrajectory(t *env.Trajectory) ([]byte, error) {
	e := trajEncoders.Get().(*trajEncoder)
	defer trajEncoders.Put(e)
	b := make([]byte, 0, 64+96*len(t.Steps))
	b = appendString(b, trajTask, t.Task)
	b = appendVarint(b, trajEpisode, t.Episode)
	b = appendVarint(b, trajAttempt, uint64(int64(t.Attempt)))
	for i := range t.Steps {
		var err error
		if e.step, err = e.appendStep(e.step[:0], &t.Steps[i]); err != nil {
			return nil, fmt.Errorf("step %d: %w", i, err)
		}
		b = protowire.AppendTag(b, trajSteps, protowire.BytesType)
		b = protowire.AppendBytes(b, e.step)
	}
	b = appendDouble(b, trajReward, t.Reward)
	b = appendBool(b, trajSubmitted, t.Submitted)
	b = appendString(b, trajSuspected, t.RewardHackSuspected)
	b = appendVarint(b, trajExecutions, uint64(int64(t.Executions)))
	b = appendVarint(b, trajTries, uint64(int64(t.Tries)))
	return b, nil
}

func (e *trajEncoder) appendStep(b []byte, s *env.Step) ([]byte, error) {
	a, r := &s.Action, &s.Result
	b = appendVarint(b, stepTool, uint64(a.Tool))
	b = appendString(b, stepPath, a.Path)
	b = appendString(b, stepOld, a.Old)
	b = appendString(b, stepNew, a.New)
	b = appendVarint(b, stepVersion, uint64(a.Version))
	b = appendDouble(b, stepLogProb, a.LogProb)
	if d := a.Decision; d != nil {
		e.sub = appendString(e.sub[:0], decKind, d.Kind)
		if len(d.Features) > 0 {
			e.sub = protowire.AppendTag(e.sub, decFeatures, protowire.BytesType)
			e.sub = protowire.AppendVarint(e.sub, uint64(4*len(d.Features)))
			for _, f := range d.Features {
				e.sub = protowire.AppendFixed32(e.sub, math.Float32bits(f))
			}
		}
		e.sub = appendVarint(e.sub, decDim, uint64(int64(d.Dim)))
		e.sub = appendVarint(e.sub, decChosen, uint64(int64(d.Chosen)))
		e.sub = appendDouble(e.sub, decTemperature, d.Temperature)
		b = protowire.AppendTag(b, stepDecision, protowire.BytesType)
		b = protowire.AppendBytes(b, e.sub)
	}
	if x := a.Args; x != nil {
		b = appendVarint(b, stepStartLine, uint64(int64(x.StartLine)))
		b = appendVarint(b, stepEndLine, uint64(int64(x.EndLine)))
		b = appendString(b, stepQuery, x.Query)
		for _, t := range x.Tests {
			b = protowire.AppendTag(b, stepTests, protowire.BytesType)
			b = protowire.AppendString(b, t)
		}
		for _, l := range x.Lines {
			e.sub = appendString(e.sub[:0], lineFile, l.File)
			e.sub = appendVarint(e.sub, lineLine, uint64(int64(l.Line)))
			b = protowire.AppendTag(b, stepLines, protowire.BytesType)
			b = protowire.AppendBytes(b, e.sub)
		}
		if len(x.Candidates) > 0 {
			e.sub = e.sub[:0]
			for _, c := range x.Candidates {
				e.sub = protowire.AppendVarint(e.sub, uint64(int64(c)))
			}
			b = protowire.AppendTag(b, stepCandidates, protowire.BytesType)
			b = protowire.AppendBytes(b, e.sub)
		}
		b = appendString(b, stepMistake, x.Mistake)
	}
	if a.Turn != nil {
		j, err := json.Marshal(a.Turn)
		if err != nil {
			return nil, fmt.Errorf("turn: %w", err)
		}
		b = protowire.AppendTag(b, stepTurn, protowire.BytesType)
		b = protowire.AppendBytes(b, j)
	}
	b = appendString(b, stepOutput, r.Output)
	b = appendString(b, stepError, r.Error)
	b = appendVarint(b, stepExitCode, uint64(int64(r.ExitCode)))
	b = appendVarint(b, stepExecutions, uint64(int64(r.Executions)))
	b = appendBool(b, stepCached, r.Cached)
	b = appendVarint(b, stepDuration, uint64(r.Duration))
	if r.Detail != nil {
		j, err := json.Marshal(env.StepResult{Detail: r.Detail})
		if err != nil {
			return nil, fmt.Errorf("result detail: %w", err)
		}
		b = protowire.AppendTag(b, stepDetail, protowire.BytesType)
		b = protowire.AppendBytes(b, j)
	}
	return b, nil
}

// The append helpers leave out a zero value, as proto3 does.

func appendVarint(b []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	return protowire.AppendVarint(protowire.AppendTag(b, num, protowire.VarintType), v)
}

func appendBool(b []byte, num protowire.Number, v bool) []byte {
	if !v {
		return b
	}
	return appendVarint(b, num, 1)
}

func appendDouble(b []byte, num protowire.Number, v float64) []byte {
	bits := math.Float64bits(v)
	if bits == 0 {
		return b
	}
	return protowire.AppendFixed64(protowire.AppendTag(b, num, protowire.Fixed64Type), bits)
}

func appendString(b []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	return protowire.AppendString(protowire.AppendTag(b, num, protowire.BytesType), s)
}

// errBadWire is a trajectory's encoding that does not parse.
var errBadWire = errors.New("malformed trajectory message")

// wireField is one field of a message as read: its number, and its value
// as a varint, a fixed-width number or bytes, by its wire type.
type wireField struct {
	num   protowire.Number
	typ   protowire.Type
	v     uint64
	bytes []byte
}

// eachField calls f with each field of the message in b, in order.
func eachField(b []byte, f func(wireField) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return errBadWire
		}
		b = b[n:]
		fd := wireField{num: num, typ: typ}
		switch typ {
		case protowire.VarintType:
			fd.v, n = protowire.ConsumeVarint(b)
		case protowire.Fixed64Type:
			fd.v, n = protowire.ConsumeFixed64(b)
		case protowire.Fixed32Type:
			var v uint32
			v, n = protowire.ConsumeFixed32(b)
			fd.v = uint64(v)
		case protowire.BytesType:
			fd.bytes, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return errBadWire
		}
		b = b[n:]
		if err := f(fd); err != nil {
			return err
		}
	}
	return nil
}

// unmarshalTrajectory decodes what marshalTrajectory encoded (or any
// encoder of frog.proto's Trajectory). Unknown fields are skipped.
func unmarshalTrajectory(b []byte) (*env.Trajectory, error) {
	t := new(env.Trajectory)
	err := eachField(b, func(f wireField) error {
		switch f.num {
		case trajTask:
			t.Task = string(f.bytes)
		case trajEpisode:
			t.Episode = f.v
		case trajAttempt:
			t.Attempt = int(int32(f.v))
		case trajSteps:
			t.Steps = append(t.Steps, env.Step{})
			if err := readStep(&t.Steps[len(t.Steps)-1], f.bytes); err != nil {
				return fmt.Errorf("step %d: %w", len(t.Steps)-1, err)
			}
		case trajReward:
			t.Reward = math.Float64frombits(f.v)
		case trajSubmitted:
			t.Submitted = f.v != 0
		case trajSuspected:
			t.RewardHackSuspected = string(f.bytes)
		case trajExecutions:
			t.Executions = int(int32(f.v))
		case trajTries:
			t.Tries = int(int32(f.v))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

func readStep(s *env.Step, b []byte) error {
	a, r := &s.Action, &s.Result
	args := func() *env.ActionArgs {
		if a.Args == nil {
			a.Args = new(env.ActionArgs)
		}
		return a.Args
	}
	return eachField(b, func(f wireField) error {
		switch f.num {
		case stepTool:
			if f.v > math.MaxUint8 {
				return fmt.Errorf("tool %d", f.v)
			}
			a.Tool = env.Tool(f.v)
		case stepPath:
			a.Path = string(f.bytes)
		case stepOld:
			a.Old = string(f.bytes)
		case stepNew:
			a.New = string(f.bytes)
		case stepVersion:
			a.Version = int64(f.v)
		case stepLogProb:
			a.LogProb = math.Float64frombits(f.v)
		case stepDecision:
			a.Decision = new(env.Decision)
			return readDecision(a.Decision, f.bytes)
		case stepStartLine:
			args().StartLine = int(int32(f.v))
		case stepEndLine:
			args().EndLine = int(int32(f.v))
		case stepQuery:
			args().Query = string(f.bytes)
		case stepTests:
			x := args()
			x.Tests = append(x.Tests, string(f.bytes))
		case stepLines:
			var l env.Line
			if err := eachField(f.bytes, func(g wireField) error {
				switch g.num {
				case lineFile:
					l.File = string(g.bytes)
				case lineLine:
					l.Line = int(int64(g.v))
				}
				return nil
			}); err != nil {
				return err
			}
			x := args()
			x.Lines = append(x.Lines, l)
		case stepCandidates:
			x := args()
			return readVarints(f, func(v uint64) { x.Candidates = append(x.Candidates, int(int64(v))) })
		case stepMistake:
			args().Mistake = string(f.bytes)
		case stepTurn:
			a.Turn = new(env.Turn)
			if err := json.Unmarshal(f.bytes, a.Turn); err != nil {
				return fmt.Errorf("turn: %w", err)
			}
		case stepOutput:
			r.Output = string(f.bytes)
		case stepError:
			r.Error = string(f.bytes)
		case stepExitCode:
			r.ExitCode = int(int64(f.v))
		case stepExecutions:
			r.Executions = int(int64(f.v))
		case stepCached:
			r.Cached = f.v != 0
		case stepDuration:
			r.Duration = time.Duration(f.v)
		case stepDetail:
			var d env.StepResult
			if err := json.Unmarshal(f.bytes, &d); err != nil {
				return fmt.Errorf("result detail: %w", err)
			}
			r.Detail = d.Detail
		}
		return nil
	})
}

func readDecision(d *env.Decision, b []byte) error {
	return eachField(b, func(f wireField) error {
		switch f.num {
		case decKind:
			d.Kind = string(f.bytes)
		case decFeatures:
			if f.typ == protowire.Fixed32Type {
				d.Features = append(d.Features, math.Float32frombits(uint32(f.v)))
				return nil
			}
			if len(f.bytes)%4 != 0 {
				return errBadWire
			}
			if d.Features == nil {
				d.Features = make([]float32, 0, len(f.bytes)/4)
			}
			for p := f.bytes; len(p) > 0; p = p[4:] {
				v, _ := protowire.ConsumeFixed32(p)
				d.Features = append(d.Features, math.Float32frombits(v))
			}
		case decDim:
			d.Dim = int(int64(f.v))
		case decChosen:
			d.Chosen = int(int64(f.v))
		case decTemperature:
			d.Temperature = math.Float64frombits(f.v)
		}
		return nil
	})
}

// readVarints reads a repeated varint field, packed (bytes) or not.
func readVarints(f wireField, add func(uint64)) error {
	if f.typ == protowire.VarintType {
		add(f.v)
		return nil
	}
	for p := f.bytes; len(p) > 0; {
		v, n := protowire.ConsumeVarint(p)
		if n < 0 {
			return errBadWire
		}
		add(v)
		p = p[n:]
	}
	return nil
}
