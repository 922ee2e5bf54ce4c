package cli

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/frognano/frog/cuda"
)

func newDeviceCmd(g *globals) *cobra.Command {
	var device string
	var asJSON bool
	c := &cobra.Command{
		Use:   "device",
		Short: "Say which tensor backend --device selects, and why",
		Long: `device opens the learner's tensor backend the way training will: --device cpu
is the CPU backend (gonum); --device cuda is the GPU backend (CUDA driver,
NVRTC and cuBLAS loaded at run time) or an error naming the library or call
that failed; --device auto is the GPU when one opens, else the CPU. It prints
the backend chosen and the reason, then closes it.`,
		Example: "  frog device\n  frog device --device cuda",
		Args:    cobra.NoArgs,
		PreRunE: func(*cobra.Command, []string) error {
			for _, d := range cuda.Devices {
				if device == d {
					return nil
				}
			}
			return usagef("--device %q: want %s", device, strings.Join(cuda.Devices, ", "))
		},
		RunE: func(c *cobra.Command, _ []string) error {
			log, err := g.logger()
			if err != nil {
				return err
			}
			b, why, err := cuda.Open(device)
			if err != nil {
				return err
			}
			defer b.Close()
			log.Info().Str("backend", b.Name()).Str("why", why).Msg("tensor backend")
			if asJSON {
				return json.NewEncoder(g.stdout).Encode(map[string]string{"device": device, "backend": b.Name(), "why": why})
			}
			_, err = fmt.Fprintf(g.stdout, "%s: %s\n", b.Name(), why)
			return err
		},
	}
	c.Flags().StringVar(&device, "device", "auto", "tensor backend: auto, cpu or cuda")
	c.Flags().BoolVar(&asJSON, "json", false, "print the choice as JSON")
	return c
}
