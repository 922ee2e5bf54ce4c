package cli

import (
	"math"
	"testing"
)

func TestCostOfNewTask(t *testing.T) {
	// 4 tasks checked, 2 of them played in groups of 8: the played tasks
	// pay half the check.
	rep := benchTriesReport{
		Check: checkBench{Tasks: 4, CPUSeconds: 8, CoverBuilds: 3, RealBuilds: 2, GoTests: 1, LaterCPU: 1},
		Episodes: []episodePass{
			{Pass: "first", Episodes: 16, CPUSeconds: 6, Builds: 2, RealBuilds: 1, CoverBuilds: 0, GoTests: 1},
			{Pass: "second", Episodes: 16, CPUSeconds: 0.5},
			{Pass: "later-run", Episodes: 16, CPUSeconds: 1},
		},
	}
	c := costOfNewTask(rep, 2)
	near := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if c.Group != 8 {
		t.Errorf("group = %d, want 8", c.Group)
	}
	near("builds", c.Builds, (0.5*6+4)/2)
	near("cpu_seconds", c.CPUSeconds, (0.5*8+6)/2)
	near("ceiling", c.CeilingPerSecond, float64(c.Cores*8)/5)
	near("known episode", c.KnownEpisodeCPU, 2.0/16)
	near("known ceiling", c.KnownCeilingPerSec, float64(c.Cores)*8)
	if z := costOfNewTask(benchTriesReport{}, 0); z.CPUSeconds != 0 || z.CeilingPerSecond != 0 {
		t.Errorf("no passes: %+v, want zero costs", z)
	}
}
