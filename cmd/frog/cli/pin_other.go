//go:build !linux

package cli

import (
	"errors"
	"os/exec"
)

func usableCPUs() ([]int, error) {
	return nil, errors.New("pinning processes to CPUs needs Linux")
}

func startOn(c *exec.Cmd, cpus []int) error {
	if len(cpus) > 0 {
		return errors.New("pinning processes to CPUs needs Linux")
	}
	return c.Start()
}
