package run

import (
	"fmt"

	"github.com/frognano/frog/cuda"
	"github.com/frognano/frog/policy/neural"
)

// Policy is the neural policy the checkpoint's learner held, computed on
// the CPU: its network and weights at the checkpoint's version, sampling
// (set Greedy to take the best option instead). It holds no learner: the
// one built from the checkpoint is closed before Policy returns.
func (l Loaded) Policy() (*neural.Policy, error) {
	lr, err := neural.FromCheckpoint(cuda.NewCPU(), l.Learner)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", l.File, err)
	}
	defer lr.Close()
	p := *lr.Current()
	return &p, nil
}

// Start is where the checkpoint's network started, neural.StartPrior or
// neural.StartScratch, as its learner's config records it (every learner
// checkpoint frog wrote holds the config's prior, under its checksum).
func (l Loaded) Start() (string, error) {
	cfg, err := neural.CheckpointConfig(l.Learner)
	if err != nil {
		return "", fmt.Errorf("%s: %w", l.File, err)
	}
	return cfg.Start(), nil
}
