package run

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/frognano/frog/cuda"
	"github.com/frognano/frog/env"
	"github.com/frognano/frog/policy/neural"
)

// Explanation is what a run's network makes of its input features
// (neural.Explain), weighed over the decisions its last trajectories
// recorded: what frog report lists, so that a user sees whether the
// network rediscovered fault localisation and what it added.
type Explanation struct {
	// Checkpoint is the file the weights came from and Version its policy
	// version.
	Checkpoint string `json:"checkpoint"`
	Version    int64  `json:"version"`
	// Decisions is how many recorded decisions Effect and Flips are
	// averaged over.
	Decisions int             `json:"decisions"`
	Weights   []neural.Weight `json:"weights"`
}

// Explain weighs the features of the network in run directory dir's last
// checkpoint over at most max decisions of the built-in policy, the latest
// its trajectories/ shards hold. A run without a neural checkpoint (an LLM
// run) or without recorded decisions is an error; the caller says so or
// leaves the panel out.
func Explain(dir string, max int) (Explanation, error) {
	ck, err := Load(dir)
	if err != nil {
		return Explanation{}, err
	}
	lr, err := neural.FromCheckpoint(cuda.NewCPU(), ck.Learner)
	if err != nil {
		return Explanation{}, fmt.Errorf("%s: %w", ck.File, err)
	}
	defer lr.Close()
	p := lr.Current()
	decs, err := Decisions(filepath.Join(dir, "trajectories"), neural.Kind, max)
	if err != nil {
		return Explanation{}, err
	}
	if len(decs) == 0 {
		return Explanation{}, fmt.Errorf("%s: no recorded decisions of the built-in policy", filepath.Join(dir, "trajectories"))
	}
	return Explanation{Checkpoint: ck.File, Version: ck.Version, Decisions: len(decs),
		Weights: neural.Explain(p.Dims, p.Params, lr.Initial(), decs)}, nil
}

// Decisions reads the decisions of kind that the trajectory shards in dir
// recorded, at most max, the latest first (the last shards, read from their
// last lines). It holds one line at a time and decodes only the actions'
// decisions. Lines that do not parse (a torn last line of a killed run) are
// skipped.
func Decisions(dir, kind string, max int) ([]*env.Decision, error) {
	names, err := filepath.Glob(filepath.Join(dir, "shard-*.jsonl"))
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	var out []*env.Decision
	for i := len(names) - 1; i >= 0 && len(out) < max; i-- {
		if out, err = shardDecisions(names[i], kind, max, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// shardDecisions appends to out the decisions of kind in the shard file
// name, its last lines first, until out holds max.
func shardDecisions(name, kind string, max int, out []*env.Decision) ([]*env.Decision, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// The offsets where lines start, then the lines read back from the end.
	starts := []int64{0}
	buf := make([]byte, 1<<20)
	var off int64
	for {
		n, err := f.Read(buf)
		for j := 0; j < n; {
			k := bytes.IndexByte(buf[j:n], '\n')
			if k < 0 {
				break
			}
			j += k + 1
			starts = append(starts, off+int64(j))
		}
		off += int64(n)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	starts = append(starts, off)
	var line []byte
	for j := len(starts) - 2; j >= 0 && len(out) < max; j-- {
		line = slices.Grow(line[:0], int(starts[j+1]-starts[j]))[:starts[j+1]-starts[j]]
		if _, err := f.ReadAt(line, starts[j]); err != nil {
			return nil, err
		}
		var rec struct {
			Steps []struct {
				Action struct {
					Decision *env.Decision `json:"decision"`
				} `json:"action"`
			} `json:"steps"`
		}
		if json.Unmarshal(bytes.TrimSpace(line), &rec) != nil {
			continue
		}
		for _, st := range rec.Steps {
			if d := st.Action.Decision; d != nil && d.Kind == kind && len(out) < max {
				out = append(out, d)
			}
		}
	}
	return out, nil
}
