package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/frognano/frog/actors"
	"github.com/frognano/frog/cuda"
	"github.com/frognano/frog/env"
	"github.com/frognano/frog/policy/neural"
	"github.com/frognano/frog/run"
	"github.com/frognano/frog/run/taskenv"
)

// simReplay are frog sim's flags of a replay: the table played instead of
// simulated sandboxes, and the built-in policy that plays it. config.json
// records them; a simulated run leaves them out.
type simReplay struct {
	Env    string `json:"env,omitempty"`
	Table  string `json:"table,omitempty"`
	Tries  int    `json:"tries,omitempty"`
	Start  string `json:"start,omitempty"`
	Device string `json:"device,omitempty"`
}

func (r *simReplay) flags(f *pflag.FlagSet) {
	f.StringVar(&r.Env, "env", "sim", "sim (simulated sandboxes and agent, or --sandbox's) or replay (frog's built-in policy trained by GRPO against --table's recorded verdicts, as frog train --env replay; named a replay in the summary)")
	f.StringVar(&r.Table, "table", "", "with --env replay: the replay table frog tabulate wrote, whose tasks the run plays")
	f.IntVar(&r.Tries, "tries", 5, "with --env replay: most candidates an episode may try (frog train's --tries)")
	f.StringVar(&r.Start, "start", neural.StartPrior, "with --env replay: where the network starts, prior or scratch (frog train's --start)")
	f.StringVar(&r.Device, "device", "auto", "with --env replay: tensor backend of the learner, auto, cpu or cuda")
}

// validateReplay checks the flags of --env and, for a replay, sets what a
// replay plays by: frog train --env replay's defaults where the flag was
// not given.
func (o *simOptions) validateReplay(c *cobra.Command) error {
	r, changed := &o.ReplayEnv, c.Flags().Changed
	switch r.Env {
	case "sim":
		for _, name := range []string{"table", "tries", "start", "device"} {
			if changed(name) {
				return usagef("--%s: only with --env replay", name)
			}
		}
		*r = simReplay{}
		return nil
	case envReplay:
	default:
		return usagef("--env %q: want sim or replay", r.Env)
	}
	for _, name := range []string{"tasks", "sandbox", "time-scale", "fault-rate", "initial-skill", "learning-rate", "max-retries"} {
		if changed(name) {
			return usagef("--env replay: --%s: the simulation's, not a replay's (the table holds the tasks and verdicts, the built-in policy plays them)", name)
		}
	}
	switch {
	case r.Table == "":
		return usagef("--env replay: --table is required (frog tabulate makes one)")
	case r.Device != "auto" && r.Device != "cpu" && r.Device != "cuda":
		return usagef("--device %q: want auto, cpu or cuda", r.Device)
	}
	if _, err := neural.StartConfig(r.Start); err != nil {
		return &UsageError{Err: fmt.Errorf("--start: %w", err)}
	}
	if err := inRange("--tries", r.Tries, 1, actors.MaxSteps-12); err != nil {
		return err
	}
	if !changed("max-steps") {
		o.Run.MaxSteps = env.StepsForTries(r.Tries)
	}
	if !changed("refill-zero-variance") {
		o.Run.RefillZeroVariance = true // as frog train does
	}
	if !changed("concurrency") {
		// Inline episodes: more at once only lengthens the policy's lag.
		o.Run.Concurrency = replayConcurrency
	}
	o.Run.MaxTries, o.Run.MaxAttempts, o.Run.TryCost = r.Tries, 1, defaultTryCost
	if _, err := readTable("--table", r.Table); err != nil {
		return err
	}
	return nil
}

// replayConcurrency is how many replayed episodes frog sim runs at once
// by default: enough for inference batches of a few hundred.
const replayConcurrency = 256

// simLearner is the built-in policy's learner of a replay: frog train's
// network and GRPO from o's start, seeded by o's seed.
func (o *simOptions) simLearner(backend cuda.Backend) (*neural.Learner, error) {
	cfg, err := neural.StartConfig(o.ReplayEnv.Start)
	if err != nil {
		return nil, &UsageError{Err: err}
	}
	cfg.Seed = o.Seed
	return neural.NewLearner(backend, cfg)
}

// runSimReplay is frog sim --env replay: frog train --env replay's policy,
// learner and curriculum against the table at full speed, no run of the
// tasks' tests, no held-out evaluation and no checkpoint: the run's
// throughput and the learner's.
func runSimReplay(ctx context.Context, g *globals, o *simOptions, log zerolog.Logger) error {
	r := &o.ReplayEnv
	if o.Name == "" {
		o.Name = "sim-replay-" + time.Now().UTC().Format("20060102-150405")
	}
	o.Run.Run = o.Name
	runLog := log.With().Str("env", envReplay).Logger()
	log = runLog.With().Str("run", o.Name).Logger()
	rp, err := openReplay(r.Table)
	if err != nil {
		return err
	}
	if err := checkTrainReplayable(rp.Table(), neural.DefaultConfig()); err != nil {
		return &UsageError{Err: fmt.Errorf("--table %s: %w", r.Table, err)}
	}
	src, err := taskenv.TableSource(rp.Table(), o.Seed)
	if err != nil {
		return &UsageError{Err: fmt.Errorf("--table %s: %w", r.Table, err)}
	}
	backend, why, err := cuda.Open(r.Device)
	if err != nil {
		return &UsageError{Err: err}
	}
	defer backend.Close()
	learner, err := o.simLearner(backend)
	if err != nil {
		return err
	}
	defer learner.Close()
	cur, err := newCurriculum(curriculumSpec{Name: o.Curriculum, Difficulty: o.Difficulty, PassRate: o.TargetPassRate, Rate: o.CurriculumRate, Replay: o.ReplayOpts, Seed: o.Seed, GroupsPerUpdate: o.Run.GroupsPerUpdate})
	if err != nil {
		return err
	}
	deps := actors.Deps{Provider: rp, Harness: rp, Learner: learner, Source: src, Curriculum: cur, Log: runLog, Counters: new(actors.Counters)}
	dir, err := o.openSimDir(log)
	if err != nil {
		return err
	}
	if dir != nil {
		defer dir.Close()
		deps.OnUpdate, deps.OnCurriculum = dir.OnUpdate(log), dir.OnCurriculum(log)
	}
	log.Info().Str("table", r.Table).Int("tasks", src.Len()).Str("backend", backend.Name()).Str("why", why).
		Msg("replaying: the built-in policy against recorded verdicts, none run")
	bar := startProgress(g, !o.JSON, o.Run.Episodes, deps.Counters)
	sum, runErr := actors.Run(ctx, o.Run, deps)
	bar.stop()
	report := rp.Report(r.Table)
	rep := simReport{Summary: sum, Replay: &report, Backend: backend.Name(), PeakRSSBytes: peakRSS(), Interrupted: ctx.Err() != nil, Config: *o, Version: version()}
	rep.Config.Name, rep.Config.Run.Run = "", ""
	if runErr == nil && len(report.NotReplayable) > 0 {
		runErr = fmt.Errorf("%d calls asked what the table does not hold (not replayable, their episodes not scored): see the summary's replay.not_replayable", report.Unanswered())
	}
	return finish(g.stdout, dir, rep, o.JSON, rep.Interrupted, runErr)
}

// openSimDir makes the run directory of frog sim, or none with
// --no-run-dir.
func (o *simOptions) openSimDir(log zerolog.Logger) (*run.Dir, error) {
	if o.NoDir {
		return nil, nil
	}
	path := o.RunDir
	if path == "" {
		path = filepath.Join("runs", o.Name)
	}
	dir, err := createRunDir(path, simReport{Config: *o, Version: version()}.configRecord())
	if err != nil {
		return nil, err
	}
	log.Info().Str("dir", path).Msg("run directory")
	return dir, nil
}
