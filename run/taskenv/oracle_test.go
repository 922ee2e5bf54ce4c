package taskenv

import (
	"context"
	"testing"

	"github.com/rs/zerolog"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/gotask"
	policysim "github.com/frognano/frog/policy/sim"
	"github.com/frognano/frog/synth"
)

// compounding is a steerable source that makes compound tasks, as the
// live synthesizer of frog sim --tasks synth does.
type compounding struct{}

func (compounding) Tasks(context.Context, int, float64) ([]env.Task, error) {
	return []env.Task{{ID: "plain"}}, nil
}

func (compounding) TasksFor(context.Context, int, synth.Knobs) ([]env.Task, error) {
	return []env.Task{{ID: "steered"}}, nil
}

func (compounding) Compound(_ context.Context, _ int, base env.Task) ([]env.Task, error) {
	return []env.Task{{ID: base.ID + "+1"}}, nil
}

// frog sim --tasks synth --compound 0.2 asks for compound tasks through
// the oracle's wrapper (and, over a store, the quarantine's): both must
// keep the synthesizer a synth.Compounder, or the synthesizer actor falls
// back to ordinary requests without a word. The compound tasks they serve
// reach the oracle.
func TestSimSourcesKeepCompounding(t *testing.T) {
	oracle := policysim.NewOracle()
	q := gotask.NewQuarantine(nil, nil, nil, "test", zerolog.Nop())
	for name, src := range map[string]synth.Source{
		"oracle":            OracleSource(compounding{}, oracle, SimFix),
		"oracle+quarantine": OracleSource(q.Source(compounding{}), oracle, SimFix),
	} {
		t.Run(name, func(t *testing.T) {
			c, ok := src.(synth.Compounder)
			if !ok {
				t.Fatalf("%T is not a synth.Compounder: compound requests would be ordinary ones", src)
			}
			if _, ok := src.(synth.Steerable); !ok {
				t.Errorf("%T is not a synth.Steerable", src)
			}
			got, err := c.Compound(context.Background(), 1, env.Task{ID: name})
			if err != nil || len(got) != 1 {
				t.Fatalf("Compound = %v, %v; want one task", got, err)
			}
			if _, ok := oracle.Lookup(got[0].ID); !ok {
				t.Errorf("the oracle was not told the fix of compound task %s", got[0].ID)
			}
		})
	}
}
