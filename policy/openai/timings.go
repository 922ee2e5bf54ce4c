package openai

import (
	"slices"
	"sync"
	"time"

	"github.com/frognano/frog/env"
)

// Timings gathers the model calls' latencies and frog's own overhead in
// them (the time not spent waiting for a server, a slot or a backoff) from
// trajectories. Add and Summary may be called from any goroutine.
type Timings struct {
	mu                sync.Mutex
	latency, overhead []time.Duration
}

// Add files every model call of traj.
func (t *Timings) Add(traj *env.Trajectory) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, s := range traj.Steps {
		if turn := s.Action.Turn; turn != nil && !turn.Continues && turn.Server != "" {
			t.latency = append(t.latency, turn.Latency)
			t.overhead = append(t.overhead, turn.Overhead)
		}
	}
}

// TimingStats are percentiles of the calls filed, in milliseconds.
type TimingStats struct {
	Calls         int     `json:"calls"`
	LatencyP50MS  float64 `json:"latency_p50_ms"`
	LatencyP99MS  float64 `json:"latency_p99_ms"`
	OverheadP50MS float64 `json:"overhead_p50_ms"`
	OverheadP99MS float64 `json:"overhead_p99_ms"`
}

// Summary is the percentiles so far.
func (t *Timings) Summary() TimingStats {
	t.mu.Lock()
	defer t.mu.Unlock()
	q := func(d []time.Duration, p float64) float64 {
		if len(d) == 0 {
			return 0
		}
		s := slices.Clone(d)
		slices.Sort(s)
		return float64(s[min(len(s)-1, int(p*float64(len(s))))].Microseconds()) / 1000
	}
	return TimingStats{
		Calls:        len(t.latency),
		LatencyP50MS: q(t.latency, 0.5), LatencyP99MS: q(t.latency, 0.99),
		OverheadP50MS: q(t.overhead, 0.5), OverheadP99MS: q(t.overhead, 0.99),
	}
}
