package envtest_test

import (
	"testing"

	"github.com/frognano/frog/env/envtest"
	"github.com/frognano/frog/env/sim"
)

func TestSim(t *testing.T) {
	p, err := sim.New(sim.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	envtest.Run(t, p, envtest.Capabilities{Files: true})
}
