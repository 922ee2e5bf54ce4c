package neural

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/frognano/frog/cuda"
	"github.com/frognano/frog/policy"
	"github.com/frognano/frog/policy/repair"
)

// checkpointFormat names the layout of a learner checkpoint.
const checkpointFormat = "frog-neural-learner/1"

var _ policy.Checkpointer = (*Learner)(nil)

// checkpoint is a learner's state as saved: the network's shape, the
// config, Adam's step and moments, the weights, and a checksum over all
// of it so that a corrupted file is refused rather than trained on.
type checkpoint struct {
	Format  string `json:"format"`
	Config  Config `json:"config"`
	Step    int    `json:"adam_step"`
	Updates int64  `json:"updates"`
	Params  string `json:"params"`
	M       string `json:"adam_m"`
	V       string `json:"adam_v"`
	Sum     string `json:"sha256"`
}

// Checkpoint returns everything the learner needs to continue.
func (l *Learner) Checkpoint() ([]byte, error) {
	P := l.params.Len()
	p, m, v := make([]float32, P), make([]float32, P), make([]float32, P)
	if err := errors.Join(l.b.ReadFloat32(p, l.params), l.b.ReadFloat32(m, l.m), l.b.ReadFloat32(v, l.v)); err != nil {
		return nil, fmt.Errorf("neural: checkpoint: %w", err)
	}
	c := checkpoint{Format: checkpointFormat, Config: l.cfg, Step: l.step, Updates: l.updates,
		Params: encode(p), M: encode(m), V: encode(v)}
	c.Sum = c.checksum()
	return json.Marshal(c)
}

// Restore puts the learner back in a checkpoint's state. A checkpoint of
// another format or network shape, or one whose checksum does not match, is
// refused with an error that says which; the learner is then unchanged.
func (l *Learner) Restore(data []byte) error {
	var c checkpoint
	if err := json.Unmarshal(data, &c); err != nil {
		return fmt.Errorf("neural: checkpoint does not parse (corrupted?): %w", err)
	}
	if c.Format != checkpointFormat {
		return fmt.Errorf("neural: checkpoint format %q: want %q", c.Format, checkpointFormat)
	}
	if c.Sum != c.checksum() {
		return errors.New("neural: checkpoint checksum does not match: the file is corrupted")
	}
	if c.Config.Dims != l.cfg.Dims {
		return fmt.Errorf("neural: checkpoint of a network %+v, this one is %+v", c.Config.Dims, l.cfg.Dims)
	}
	P := l.cfg.Dims.Params()
	p, err1 := decode(c.Params, P)
	m, err2 := decode(c.M, P)
	v, err3 := decode(c.V, P)
	if err := errors.Join(err1, err2, err3); err != nil {
		return fmt.Errorf("neural: checkpoint: %w", err)
	}
	if err := errors.Join(l.b.WriteFloat32(l.m, m), l.b.WriteFloat32(l.v, v)); err != nil {
		return fmt.Errorf("neural: restore: %w", err)
	}
	if err := l.setParams(p); err != nil {
		return err
	}
	l.step, l.updates = c.Step, c.Updates
	return nil
}

// CheckpointConfig is the config a learner checkpoint records — the
// network's shape and start (Config.Start) among it — read without making
// a learner. A checkpoint of another format, or one whose checksum does not
// match, is refused as Restore refuses it.
func CheckpointConfig(data []byte) (Config, error) {
	var c checkpoint
	if err := json.Unmarshal(data, &c); err != nil {
		return Config{}, fmt.Errorf("neural: checkpoint does not parse (corrupted?): %w", err)
	}
	if c.Format != checkpointFormat {
		return Config{}, fmt.Errorf("neural: checkpoint format %q: want %q", c.Format, checkpointFormat)
	}
	if c.Sum != c.checksum() {
		return Config{}, errors.New("neural: checkpoint checksum does not match: the file is corrupted")
	}
	return c.Config, nil
}

func (c checkpoint) checksum() string {
	c.Sum = ""
	data, _ := json.Marshal(c)
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:])
}

func encode(v []float32) string {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return base64.StdEncoding.EncodeToString(b)
}

func decode(s string, n int) ([]float32, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, err
	}
	if len(b) != 4*n {
		return nil, fmt.Errorf("%d values, want %d", len(b)/4, n)
	}
	out := make([]float32, n)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out, nil
}

// FromCheckpoint makes a learner on b in the state a checkpoint saved,
// with the network and config the checkpoint records.
func FromCheckpoint(b cuda.Backend, data []byte) (*Learner, error) {
	var c checkpoint
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("neural: checkpoint does not parse (corrupted?): %w", err)
	}
	if c.Format != checkpointFormat {
		return nil, fmt.Errorf("neural: checkpoint format %q: want %q", c.Format, checkpointFormat)
	}
	if !repair.Readable(c.Config.Dims.F) {
		return nil, fmt.Errorf("neural: checkpoint of a network over %d features, and this frog computes %d (or reads the first %d): it was trained by another version of frog's features", c.Config.Dims.F, repair.Dim, repair.PrefixDim)
	}
	l, err := NewLearner(b, c.Config)
	if err != nil {
		return nil, fmt.Errorf("neural: checkpoint's config: %w", err)
	}
	if err := l.Restore(data); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}
