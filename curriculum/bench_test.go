package curriculum

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/frognano/frog/env"
)

// BenchmarkReplayRequest is the frontier curriculum's work for one
// scheduler request at the scale `frog sim --concurrency 10000` runs it: a
// full buffer of 4,096 tasks in 48 bins, a request of 225 groups (Plan,
// then Admit of the fresh share, which evicts), and the outcomes of 225
// groups of 8. It reports the cost per group served.
func BenchmarkReplayRequest(b *testing.B) {
	cfg := DefaultReplayConfig()
	cfg.Seed = 1
	r, err := NewReplay(cfg)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	next := 0
	fresh := func(n int) []*env.Task {
		out := make([]*env.Task, n)
		for i := range out {
			bin := fmt.Sprintf("fam%d/%d/single/mod%d", next%6, 1+next%2, next%4)
			out[i] = &env.Task{ID: fmt.Sprintf("task-%08d", next), Bin: bin, Difficulty: 4 * rng.NormFloat64()}
			next++
		}
		return out
	}
	group := uint64(0)
	play := func(tasks []*env.Task) {
		for _, t := range tasks {
			group++
			p := rng.Float64()
			for range 8 {
				rew := 0.0
				if rng.Float64() < p {
					rew = 1
				}
				r.Observe(t, rew, group)
			}
		}
	}
	for r.Stats().Frontier.Buffer < cfg.Capacity {
		ts := fresh(256)
		r.Admit(ts)
		play(ts)
	}
	const groups = 225
	b.ResetTimer()
	for range b.N {
		p := r.Plan(groups)
		ts := fresh(p.Fresh)
		r.Admit(ts)
		play(append(p.Replay, ts...))
		r.Advance(int64(group / 64))
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*groups), "ns/group")
}
