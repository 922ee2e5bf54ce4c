package cli

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/frognano/frog/run"
)

// explainDecisions is how many recorded decisions frog report weighs the
// network's features over: enough for a stable order, a second or two of
// CPU.
const explainDecisions = 300

// explain sets s.Weights from the run's last checkpoint and trajectories;
// a run without them (an LLM run, a run killed before its first
// checkpoint) has no weights panel.
func (s *runSeries) explain(dir string) {
	if ex, err := run.Explain(dir, explainDecisions); err == nil {
		s.Weights = &ex
	}
}

// printWeights lists the features the network weighs most.
func (s *runSeries) printWeights(w io.Writer) error {
	ex := s.Weights
	if ex == nil {
		return nil
	}
	fmt.Fprintf(w, "\nwhat the network weighs (policy version %d, over its last %d decisions):\n", ex.Version, ex.Decisions)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "feature\tchoices moved\tbest changed\tlinear weight: start\tnow\t")
	for i, f := range ex.Weights {
		if i == 10 || f.Effect == 0 && f.Wide == 0 && f.Start == 0 {
			break
		}
		fmt.Fprintf(tw, "%s\t%.1f%%\t%.1f%%\t%+.2f\t%+.2f\t\n", f.Feature, 100*f.Effect, 100*f.Flips, f.Start, f.Wide)
	}
	return tw.Flush()
}
