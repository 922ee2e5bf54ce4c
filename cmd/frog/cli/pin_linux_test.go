package cli

import (
	"bytes"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// --pin gives the trainer the first CPU alone and splits the others among
// the one process or the workers, sharing them in turn when short.
func TestPinPlan(t *testing.T) {
	for _, tc := range []struct {
		cpus    []int
		n       int
		trainer []int
		workers [][]int
	}{
		{nil, 2, nil, [][]int{nil, nil}},
		{[]int{0, 1}, 0, []int{1}, [][]int{}},
		{[]int{0, 1}, 1, []int{0}, [][]int{{1}}},
		{[]int{0, 1}, 3, []int{0}, [][]int{{1}, {1}, {1}}},
		{[]int{2, 3, 4, 5, 6}, 2, []int{2}, [][]int{{3, 4}, {5, 6}}},
		{[]int{0, 1, 2}, 3, []int{0}, [][]int{{1}, {2}, {1}}},
	} {
		trainer, workers := pinPlan(tc.cpus, tc.n)
		if !slices.Equal(trainer, tc.trainer) || !slices.EqualFunc(workers, tc.workers, slices.Equal) {
			t.Errorf("pinPlan(%v, %d) = %v, %v; want %v, %v", tc.cpus, tc.n, trainer, workers, tc.trainer, tc.workers)
		}
	}
}

// A child started on a CPU runs on that CPU alone, and the parent's own
// CPUs are as they were.
func TestStartOnPinsTheChild(t *testing.T) {
	before, err := usableCPUs()
	if err != nil {
		t.Fatal(err)
	}
	cpu := before[len(before)-1]
	var out bytes.Buffer
	c := exec.Command("grep", "Cpus_allowed_list", "/proc/self/status")
	c.Stdout = &out
	if err := startOn(c, []int{cpu}); err != nil {
		t.Fatal(err)
	}
	if err := c.Wait(); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.TrimSpace(strings.TrimPrefix(out.String(), "Cpus_allowed_list:")), fmt.Sprint(cpu); got != want {
		t.Errorf("the child may run on %q, want %q", got, want)
	}
	after, err := usableCPUs()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(before, after) {
		t.Errorf("this process's CPUs went from %v to %v", before, after)
	}
}
