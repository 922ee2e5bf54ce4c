package cli

import (
	"errors"
	"fmt"

	"github.com/frognano/frog/actors"
)

// runFlags names the flag of each actors.Config field that commands set
// from one.
var runFlags = map[string]string{
	"Episodes": "--episodes", "Duration": "--duration", "Concurrency": "--concurrency",
	"GroupSize": "--group-size", "GroupsPerUpdate": "--groups-per-update", "MaxStaleness": "--max-staleness",
	"MaxSteps": "--max-steps", "MaxTries": "--tries", "MaxBatch": "--max-batch", "MaxWait": "--max-wait",
	"InferenceWorkers": "--inference-workers", "SynthWorkers": "--synth-workers", "TaskRefill": "--task-refill",
	"MaxUpdateFailures": "--max-update-failures", "CheckpointEvery": "--checkpoint-every", "TryCost": "--try-cost",
}

// validateRun checks the run's actors.Config, and says what is wrong in
// terms of the command's flags: a usage error.
func validateRun(c actors.Config) error {
	err := c.Validate()
	var ce *actors.ConfigError
	if err == nil || !errors.As(err, &ce) {
		return err
	}
	switch ce.Field {
	case "MaxAttempts":
		return usagef("--max-retries %d: want 0 to %d", c.MaxAttempts-1, actors.MaxRetries)
	case "Episodes":
		if c.Episodes == 0 {
			return usagef("--episodes 0 needs a --duration, or the run would never end")
		}
	}
	if flag, ok := runFlags[ce.Field]; ok {
		return usagef("%s %v: want %s", flag, ce.Value, ce.Want)
	}
	return &UsageError{Err: fmt.Errorf("%w", err)}
}
