package cli

import (
	"fmt"
	"os/exec"
	"runtime"

	"golang.org/x/sys/unix"
)

// usableCPUs is the CPUs this process may run on, in order.
func usableCPUs() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("the CPUs this process may use: %w", err)
	}
	var cpus []int
	for i := range len(set) * 64 {
		if set.IsSet(i) {
			cpus = append(cpus, i)
		}
	}
	return cpus, nil
}

// startOn starts c confined to cpus (none: where this process may run).
// The child inherits the affinity of the thread that forks it, so the
// calling goroutine holds its thread, narrows it for the fork and widens
// it again; the Go runtime in the child sizes GOMAXPROCS to the set.
func startOn(c *exec.Cmd, cpus []int) error {
	if len(cpus) == 0 {
		return c.Start()
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var old, set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		return fmt.Errorf("the CPUs this thread may use: %w", err)
	}
	for _, cpu := range cpus {
		set.Set(cpu)
	}
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("pin to CPUs %v: %w", cpus, err)
	}
	err := c.Start()
	if rerr := unix.SchedSetaffinity(0, &old); rerr != nil && err == nil {
		err = fmt.Errorf("restore this thread's CPUs: %w", rerr)
	}
	return err
}
