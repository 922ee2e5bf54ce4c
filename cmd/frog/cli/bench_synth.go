package cli

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/frognano/frog/synth/source"
)

func newBenchSynthCmd(g *globals) *cobra.Command {
	var (
		spec, pkg, gremlins, work string
		workers, repeats          int
		asJSON                    bool
	)
	c := &cobra.Command{
		Use:   "synth",
		Short: "Benchmark mutant validation against gremlins on one package",
		Long: `synth measures mutants validated per second by frog's validator and by
gremlins (github.com/go-gremlins/gremlins) on the same package, in the same
run, interleaved, after an untimed warm-up of the build cache. Each frog run
starts from a fresh process sandbox: baseline runs, coverage map, schema
builds, vet, test runs. A mutant counts when its tests ran or it was
compiled and rejected; mutants no test covers count for neither tool.

gremlins is not a dependency of frog: 'make gremlins' installs the pinned
version into bin/.`,
		Example: `  make gremlins && frog bench synth --gremlins bin/gremlins
  frog bench synth --source github.com/google/btree@v1.1.3 --package . --gremlins bin/gremlins --json`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			ctx := c.Context()
			log, err := g.logger()
			if err != nil {
				return err
			}
			// gremlins runs in the module's copy: a relative path must
			// mean what it meant where the user typed it.
			gremlins, err := absCommand(gremlins)
			if err != nil {
				return fmt.Errorf("--gremlins: %w", err)
			}
			work, cleanup, err := workDir(work, "frog-bench-synth-")
			if err != nil {
				return err
			}
			defer cleanup()
			m, err := source.Open(ctx, spec, work)
			if err != nil {
				return err
			}
			prov, release, err := openSandboxes(ctx, sandboxSpec{sandboxOptions: sandboxOptions{Kind: "process"}, Validation: true}, log)
			if err != nil {
				return err
			}
			defer release()
			rep, err := source.BenchGremlins(ctx, source.BenchOptions{
				Module: m, Package: pkg, Gremlins: gremlins, Workers: workers, Repeats: repeats, Provider: prov,
			}, log)
			if err != nil {
				return err
			}
			if asJSON {
				return json.NewEncoder(g.stdout).Encode(rep)
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintf(tw, "tool\trun\tseconds\tmutants\tcaught\tmutants/s\t\n")
			for i := range rep.Frog {
				f, gr := rep.Frog[i], rep.Gremlins[i]
				fmt.Fprintf(tw, "gremlins\t%d\t%.1f\t%d\t%d\t%.2f\t\n", i+1, gr.Seconds, gr.Mutants, gr.Caught, gr.PerSecond)
				fmt.Fprintf(tw, "frog\t%d\t%.1f\t%d\t%d\t%.2f\t\n", i+1, f.Seconds, f.Mutants, f.Caught, f.PerSecond)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			_, err = fmt.Fprintf(g.stdout, "%s %s: frog %.2f mutants/s, gremlins (%d workers) %.2f mutants/s (medians): %.1f×\n",
				rep.Module, rep.Package, rep.FrogMedian, rep.Workers, rep.GremlinsMedian, rep.Ratio)
			return err
		},
	}
	f := c.Flags()
	f.StringVar(&spec, "source", "github.com/emirpasic/gods@v1.18.1", "module (directory, path@version or git+URL[@ref])")
	f.StringVar(&pkg, "package", "./trees/binaryheap", "package directory in the module")
	f.StringVar(&gremlins, "gremlins", "gremlins", "the gremlins binary")
	f.IntVar(&workers, "workers", 2, "gremlins --workers")
	f.IntVar(&repeats, "repeats", 3, "runs of each tool, interleaved")
	f.StringVar(&work, "work-dir", "", "where the module is copied (default: a temporary directory)")
	f.BoolVar(&asJSON, "json", false, "print the report as one JSON object")
	c.PreRunE = func(*cobra.Command, []string) error {
		if workers < 1 || repeats < 1 {
			return usagef("--workers and --repeats: want >= 1")
		}
		return nil
	}
	return c
}

// absCommand returns the absolute path of the program name denotes: looked
// up on PATH when it is a bare name, else relative to the current directory.
func absCommand(name string) (string, error) {
	p, err := exec.LookPath(name)
	if err != nil {
		return "", err
	}
	return filepath.Abs(p)
}
