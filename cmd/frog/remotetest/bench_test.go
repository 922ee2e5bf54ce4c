package remotetest

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"
	"time"
)

// frog bench workers plays the same episodes in one process and on a
// worker, and reports both, with the worker's link carrying fewer messages
// than episodes (batches) and bytes both ways; pinned (with 2 CPUs or
// more) it says on which CPUs.
func TestBenchWorkers(t *testing.T) {
	args := []string{"bench", "workers", "--episodes", "3000", "--concurrency", "64", "--workers", "1", "--repeats", "1", "--json"}
	pin := runtime.NumCPU() >= 2
	if pin {
		args = append(args, "--pin")
	}
	p := startFrog(t, args...)
	if code := p.wait(t, 3*time.Minute); code != 0 {
		t.Fatalf("frog bench workers exited %d; stderr:\n%s", code, p.stderr.String())
	}
	var rep struct {
		Pinned []int `json:"pinned_cpus"`
		Setups []struct {
			Workers           int     `json:"workers"`
			EpisodesPerSecond float64 `json:"episodes_per_second"`
			TrainerCPU        float64 `json:"trainer_cpu_us_per_episode"`
			WorkersCPU        float64 `json:"workers_cpu_us_per_episode"`
			MsgsOut           float64 `json:"messages_out_per_episode"`
			MsgsIn            float64 `json:"messages_in_per_episode"`
			BytesOut          float64 `json:"bytes_out_per_episode"`
			BytesIn           float64 `json:"bytes_in_per_episode"`
		} `json:"setups"`
	}
	if err := json.Unmarshal(p.stdout.Bytes(), &rep); err != nil {
		t.Fatalf("%v in %s", err, p.stdout.String())
	}
	if len(rep.Setups) != 2 || rep.Setups[0].Workers != 0 || rep.Setups[1].Workers != 1 {
		t.Fatalf("setups %+v: want one process and 1 worker", rep.Setups)
	}
	if pin != (len(rep.Pinned) >= 2) {
		t.Errorf("pinned to CPUs %v (--pin: %v)", rep.Pinned, pin)
	}
	one, w := rep.Setups[0], rep.Setups[1]
	if one.EpisodesPerSecond <= 0 || one.TrainerCPU <= 0 || one.MsgsOut != 0 {
		t.Errorf("one process: %+v", one)
	}
	if w.EpisodesPerSecond <= 0 || w.TrainerCPU <= 0 || w.WorkersCPU <= 0 {
		t.Errorf("1 worker: %+v: want a rate and both sides' CPU", w)
	}
	if w.MsgsOut <= 0 || w.MsgsOut >= 1 || w.MsgsIn <= 0 || w.MsgsIn >= 1 || w.BytesOut <= 0 || w.BytesIn <= 0 {
		t.Errorf("1 worker's link: %+v: want under one message an episode each way (batches), and bytes", w)
	}
}

// Bad flags are usage errors (exit 2) that name the flag.
func TestBenchWorkersUsage(t *testing.T) {
	for _, tc := range []struct{ args []string }{
		{[]string{"--workers", "0"}}, {[]string{"--episodes", "0"}}, {[]string{"--workers", "3", "--concurrency", "2"}},
	} {
		p := startFrog(t, append([]string{"bench", "workers"}, tc.args...)...)
		if code := p.wait(t, time.Minute); code != 2 || !strings.Contains(p.stderr.String(), tc.args[0]+" "+tc.args[1]) {
			t.Errorf("frog bench workers %v exited %d, want 2 and the flag named; stderr:\n%s", tc.args, code, p.stderr.String())
		}
	}
}
