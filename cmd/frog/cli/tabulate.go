package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/spf13/cobra"

	"github.com/frognano/frog/actors"
	"github.com/frognano/frog/env/replay"
	"github.com/frognano/frog/policy/neural"
	"github.com/frognano/frog/policy/repair"
	"github.com/frognano/frog/run"
	"github.com/frognano/frog/run/taskenv"
)

// tabulateOptions are the flags of `frog tabulate`.
type tabulateOptions struct {
	Tasks       string
	Out         string
	Limit       int
	Sample      int
	Concurrency int
	Sandbox     sandboxOptions
	TaskOpts    taskOptions
	JSON        bool
}

func newTabulateCmd(g *globals) *cobra.Command {
	o := &tabulateOptions{}
	c := &cobra.Command{
		Use:   "tabulate",
		Short: "Record every candidate's real verdict on a task store, for replays",
		Long: `tabulate makes a replay table of a task store: for each task that passes the task
check, what an episode of frog's built-in repair policy observes at the start
(the deciding tests' report, their coverage, the candidate list at the lines
its protocol asks for) and every listed candidate's real verdict, found by the
ceiling's exhaustive search on the policy's own lines in real sandboxes. The
table is JSON lines (a header with the format version, the frog version, the
store's SHA-256 and the harness settings; a line a task; an end record with
the counts), written whole or not at all (a temporary file, renamed).

Tasks that fail the task check, or whose search did not end, are left out and
counted by reason. frog eval --env replay --table FILE and frog train --env
replay --table FILE then play the built-in policy against the table: the same
observations, candidates and tries, each try's verdict looked up, not run, and
named as a replay wherever it is reported (docs/replay.md).`,
		Example: `  frog tabulate --tasks tasks/heldout.jsonl --out runs/heldout.table.jsonl
  frog eval --env replay --table runs/heldout.table.jsonl --policy prior`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return runTabulate(c.Context(), g, o) },
	}
	f := c.Flags()
	f.StringVar(&o.Tasks, "tasks", "", "task store (.jsonl) written by frog synth (required)")
	f.StringVar(&o.Out, "out", "", "the table to write (required; replaced whole when the run ends)")
	f.IntVar(&o.Limit, "limit", 0, "tabulate only the first N tasks of the store (0: all)")
	f.IntVar(&o.Sample, "sample", 0, "tabulate a seeded random sample of N tasks of the store (0: all)")
	f.IntVar(&o.Concurrency, "concurrency", playConcurrency(), "searches running at once (each holds a sandbox); the tasks' checks run at most 2 per core")
	o.Sandbox.flags(f, "process")
	o.TaskOpts.flags(f)
	f.BoolVar(&o.JSON, "json", false, "print the summary as one JSON object")
	c.PreRunE = func(*cobra.Command, []string) error { return o.validate() }
	return c
}

func (o *tabulateOptions) validate() error {
	switch {
	case o.Tasks == "":
		return usagef("--tasks: a task store is required")
	case o.Out == "":
		return usagef("--out: the table's file is required")
	case o.Limit < 0 || o.Sample < 0:
		return usagef("--limit and --sample: want >= 0")
	}
	if err := firstErr(inRange("--concurrency", o.Concurrency, 1, actors.MaxConcurrency), o.Sandbox.checkCounts()); err != nil {
		return err
	}
	return checkSandbox(o.Sandbox.Kind, "docker", "process", "auto")
}

// tableProtocol is the protocol a table is made for: the built-in
// policy's, as frog train and frog eval play it (partial fixes not kept).
func tableProtocol() repair.Config {
	cfg := neural.DefaultConfig()
	p := cfg.Protocol
	p.Keep = !cfg.NoKeep
	return p.WithDefaults()
}

// tabulateSummary is what `frog tabulate` prints.
type tabulateSummary struct {
	Table   string         `json:"table"`
	Tasks   int            `json:"tasks"`
	LeftOut map[string]int `json:"left_out"`
	Seconds float64        `json:"elapsed_seconds"`
}

func runTabulate(ctx context.Context, g *globals, o *tabulateOptions) error {
	log, err := g.logger()
	if err != nil {
		return err
	}
	start := time.Now()
	data, err := os.ReadFile(o.Tasks)
	if err != nil {
		return usagef("--tasks: %v", err)
	}
	sum := sha256.Sum256(data)
	recs, err := taskenv.Load("--tasks", o.Tasks, o.Limit, o.Sample, log)
	if err != nil {
		return err
	}
	name := "tabulate-" + time.Now().UTC().Format("20060102-150405")
	tenv, prov, release, err := openTaskEnv(ctx, o.TaskOpts, sandboxSpec{sandboxOptions: o.Sandbox, Run: name, Concurrency: o.Concurrency}, log)
	if err != nil {
		return err
	}
	defer release()
	tasks, _, err := tenv.Check(ctx, recs, o.Concurrency, log)
	if err != nil {
		return err
	}
	if len(tasks) == 0 {
		return taskenv.NoTaskHoldsUp("--tasks", o.Tasks, len(recs), tenv.Quarantine.Quarantined())
	}
	cfg := actors.DefaultConfig()
	cfg.Run, cfg.Concurrency = name, o.Concurrency
	header := replay.Header{Version: version(), Store: o.Tasks, StoreHash: hex.EncodeToString(sum[:]),
		Settings: replay.Settings{Sandbox: o.Sandbox.Kind, NoCache: o.TaskOpts.NoCache}}
	table, err := tenv.Tabulate(ctx, prov, tasks, tenv.Quarantine.Quarantined(), taskenv.TabulateOptions{Protocol: tableProtocol(), Run: cfg, Header: header}, log)
	if err != nil {
		if ctx.Err() != nil {
			return run.Interrupted("tabulating %s: no table written", o.Tasks)
		}
		return err
	}
	var buf bytes.Buffer
	if err := table.Encode(&buf); err != nil {
		return err
	}
	if err := run.WriteFileAtomic(o.Out, buf.Bytes()); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	s := tabulateSummary{Table: o.Out, Tasks: len(table.Records), LeftOut: table.LeftOut, Seconds: time.Since(start).Seconds()}
	if o.JSON {
		return json.NewEncoder(g.stdout).Encode(s)
	}
	fmt.Fprintf(g.stdout, "%d tasks tabulated to %s in %.0f s; %d left out\n", s.Tasks, s.Table, s.Seconds, table.LeftOutTotal())
	reasons := make([]string, 0, len(s.LeftOut))
	for r := range s.LeftOut {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	for _, r := range reasons {
		fmt.Fprintf(g.stdout, "  %d  %s\n", s.LeftOut[r], r)
	}
	return nil
}
