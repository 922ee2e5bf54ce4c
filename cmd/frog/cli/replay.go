package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/frognano/frog/actors"
	"github.com/frognano/frog/env/replay"
	"github.com/frognano/frog/policy"
	"github.com/frognano/frog/policy/baseline"
	"github.com/frognano/frog/policy/neural"
	"github.com/frognano/frog/policy/repair"
	"github.com/frognano/frog/run/taskenv"
	"github.com/frognano/frog/synth"
)

// The environments --env names: real sandboxes, or a replay of a table.
const (
	envReal   = "real"
	envReplay = "replay"
)

// replayName is how a policy played against a table is named in every
// report: a replayed verdict is not a real one.
func replayName(name string) string { return name + " (replay)" }

// openReplay reads the table at path (--table) and makes its replay.
func openReplay(path string) (*replay.Env, error) {
	t, err := readTable("--table", path)
	if err != nil {
		return nil, err
	}
	return replay.New(t)
}

// replayTasks are the table's tasks, labelled for a report, the first
// limit of them (0: all).
func replayTasks(t *replay.Table, limit int) []actors.EvalTask { return taskenv.TableTasks(t, limit) }

// policyProtocol is the repair protocol pol plays, its defaults filled
// in, or false for a policy that plays none (a language model).
func policyProtocol(pol policy.Policy) (repair.Config, bool) {
	switch p := pol.(type) {
	case *neural.Policy:
		c := p.Protocol
		c.Keep = !p.NoKeep
		return c.WithDefaults(), true
	case *baseline.Policy:
		return p.Protocol().WithDefaults(), true
	}
	return repair.Config{}, false
}

// checkReplayable says why pol, named name, cannot be replayed against t:
// it plays another protocol than the one t was made for, so it would ask
// for what the table does not hold.
func checkReplayable(t *replay.Table, name string, pol policy.Policy) error {
	p, ok := policyProtocol(pol)
	if !ok {
		return fmt.Errorf("%s: not the built-in repair policy: a replay table holds that policy's observations only", name)
	}
	var want repair.Config
	if err := json.Unmarshal(t.Header.Settings.Protocol, &want); err != nil {
		return fmt.Errorf("the table's protocol: %w", err)
	}
	if want.WithDefaults() != p {
		why := ""
		if p.Keep {
			why = " (it keeps partial fixes and lists again: states the table never reached)"
		}
		return fmt.Errorf("%s plays protocol %+v, and the table was made for %+v%s: it is not replayable there", name, p, want.WithDefaults(), why)
	}
	return nil
}

// validateReplay checks the flags of --env: a replay needs --table and
// takes its tasks from it.
func (o *evalOptions) validateReplay(c *cobra.Command) error {
	switch o.Env {
	case envReal:
		if o.Table != "" {
			return usagef("--table: only with --env replay")
		}
		return nil
	case envReplay:
	default:
		return usagef("--env %q: want real or replay", o.Env)
	}
	switch {
	case o.Table == "":
		return usagef("--env replay: --table is required (frog tabulate makes one)")
	case o.Tasks != "":
		return usagef("--env replay: --tasks: the table holds its tasks")
	case o.Sample != 0:
		return usagef("--env replay: --sample is not supported; --limit is")
	case c.Flags().Changed("ceiling") && o.Ceiling:
		return usagef("--env replay: --ceiling: the ceiling's search is not replayable (it lists candidates at every line and keeps partial fixes)")
	}
	o.Ceiling = false
	return nil
}

// runEvalReplay is frog eval --env replay: each policy played against the
// table, named a replay.
func runEvalReplay(ctx context.Context, g *globals, o *evalOptions, log zerolog.Logger) error {
	rp, err := openReplay(o.Table)
	if err != nil {
		return err
	}
	t := rp.Table()
	for _, name := range strings.Split(o.Policy, ",") {
		pol, _ := evalPolicy(name, o.Seed)
		if err := checkReplayable(t, name, pol); err != nil {
			return &UsageError{Err: fmt.Errorf("--policy: %w", err)}
		}
	}
	tasks := replayTasks(t, o.Limit)
	cfg := actors.DefaultConfig()
	cfg.Run = "eval-replay-" + time.Now().UTC().Format("20060102-150405")
	// A replay has no passing faults: a call the table cannot answer fails
	// the same way again, so it is not retried.
	cfg.Concurrency, cfg.MaxSteps, cfg.MaxTries, cfg.MaxAttempts = o.Concurrency, o.MaxSteps, o.Tries, 1
	ecfg := actors.EvalConfig{Run: cfg, Tasks: tasks, Samples: o.Samples}
	deps := actors.Deps{Provider: rp, Harness: rp, Log: log.With().Str("env", envReplay).Logger()}
	rep := evalReport{Config: *o, Version: version()}
	log.Info().Str("table", o.Table).Msg("replaying: verdicts looked up, not run")
	rep.Policies, err = o.evaluatePolicies(ctx, ecfg, deps, replayName, log)
	if err != nil {
		return err
	}
	rep.Pairs = comparePolicies(rep.Policies)
	r := rp.Report(o.Table)
	rep.Replay = &r
	if err := rep.print(g.stdout, o.JSON); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return ErrInterrupted
	}
	if len(r.NotReplayable) > 0 {
		return errors.New("some episodes asked what the table does not hold (not replayable, not scored): see the report's replay.not_replayable")
	}
	return nil
}

// trainReplay are frog train's flags of a replay (--env, --table,
// --heldout-table); config.json records them.
type trainReplay struct {
	Env          string `json:"env,omitempty"`
	Table        string `json:"table,omitempty"`
	HeldoutTable string `json:"heldout_table,omitempty"`
}

func (r *trainReplay) flags(f *pflag.FlagSet) {
	f.StringVar(&r.Env, "env", envReal, "real (sandboxes judged by the tasks' tests) or replay (every verdict looked up in --table, made by frog tabulate; named a replay in the metrics and the summary)")
	f.StringVar(&r.Table, "table", "", "with --env replay: the replay table whose tasks the run trains on")
	f.StringVar(&r.HeldoutTable, "heldout-table", "", "with --env replay: the replay table of the held-out tasks (none: no held-out curve)")
}

// validateReplay checks frog train's flags of --env.
func (o *trainOptions) validateReplay(c *cobra.Command) error {
	r := &o.Replay
	if r.Env == "" {
		r.Env = envReal // a run made before --env
	}
	switch r.Env {
	case envReal:
		if r.Table != "" || r.HeldoutTable != "" {
			return usagef("--table and --heldout-table: only with --env replay")
		}
		return nil
	case envReplay:
	default:
		return usagef("--env %q: want real or replay", r.Env)
	}
	if o.Resume != "" {
		return nil // the run's config.json says
	}
	switch {
	case r.Table == "":
		return usagef("--env replay: --table is required (frog tabulate makes one)")
	case o.Tasks != "" || len(o.Sources) > 0:
		return usagef("--env replay: --tasks and --source: the table holds the tasks")
	case c.Flags().Changed("heldout"):
		return usagef("--env replay: --heldout: give the held-out tasks as a table, --heldout-table")
	case o.keep:
		return usagef("--env replay: --keep: a policy that keeps partial fixes reaches states no table holds (not replayable)")
	case o.Policy != "neural":
		return usagef("--env replay: --policy %s: a table holds the built-in policy's observations only", o.Policy)
	}
	// Read now, so that a bad table is refused before the run directory
	// is made; openReplay reads them again.
	if _, err := readTable("--table", r.Table); err != nil {
		return err
	}
	if r.HeldoutTable != "" {
		if _, err := readTable("--heldout-table", r.HeldoutTable); err != nil {
			return err
		}
	}
	o.Heldout = ""
	o.Run.MaxAttempts = 1 // a call the table cannot answer fails alike again
	return nil
}

// openReplay opens the tables of a training replay: the replay of both,
// the source of the training table's tasks (those the curriculum holds,
// held, served last) and the held-out tasks.
func (o *trainOptions) openReplay(held []string, log zerolog.Logger) (*replay.Env, synth.Source, []actors.EvalTask, error) {
	train, err := readTable("--table", o.Replay.Table)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := checkTrainReplayable(train, o.Learner); err != nil {
		return nil, nil, nil, &UsageError{Err: fmt.Errorf("--table %s: %w", o.Replay.Table, err)}
	}
	all := &replay.Table{Header: train.Header, Records: slices.Clone(train.Records)}
	var heldout []actors.EvalTask
	if o.Replay.HeldoutTable != "" {
		h, err := readTable("--heldout-table", o.Replay.HeldoutTable)
		if err != nil {
			return nil, nil, nil, err
		}
		if !bytes.Equal(h.Header.Settings.Protocol, train.Header.Settings.Protocol) {
			return nil, nil, nil, usagef("--heldout-table %s: made for another protocol than --table's", o.Replay.HeldoutTable)
		}
		heldout = replayTasks(h, o.HeldoutN)
		in := map[string]bool{}
		for _, r := range train.Records {
			in[r.Task.ID] = true
		}
		for _, r := range h.Records[:len(heldout)] {
			if in[r.Task.ID] {
				return nil, nil, nil, usagef("--heldout-table: task %s is in --table too: held-out tasks are never trained on", r.Task.ID)
			}
			all.Records = append(all.Records, r)
		}
	} else {
		log.Warn().Msg("no held-out table (--heldout-table): the run reports no held-out curve")
	}
	rp, err := replay.New(all)
	if err != nil {
		return nil, nil, nil, &UsageError{Err: fmt.Errorf("--table: %w", err)}
	}
	src, err := taskenv.TableSource(train, o.Seed)
	if err != nil {
		return nil, nil, nil, &UsageError{Err: fmt.Errorf("--table %s: %w", o.Replay.Table, err)}
	}
	if len(held) > 0 {
		src.MarkServed(held)
	}
	log.Info().Str("table", o.Replay.Table).Int("tasks", src.Len()).Int("heldout", len(heldout)).Msg("replaying: every verdict looked up in the tables, none run")
	return rp, src, heldout, nil
}

// readTable reads the replay table at path, named by flag in errors.
func readTable(flag, path string) (*replay.Table, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, usagef("%s: %v", flag, err)
	}
	defer f.Close()
	t, err := replay.Decode(f, path)
	if err != nil {
		return nil, usagef("%s: %v", flag, err)
	}
	if len(t.Records) == 0 {
		return nil, usagef("%s %s: no task to replay (%d left out when it was made)", flag, path, t.LeftOutTotal())
	}
	return t, nil
}

// checkTrainReplayable says why the policy cfg trains cannot be replayed
// against t.
func checkTrainReplayable(t *replay.Table, cfg neural.Config) error {
	return checkReplayable(t, "the trained policy", &neural.Policy{Protocol: cfg.Protocol, NoKeep: cfg.NoKeep})
}
