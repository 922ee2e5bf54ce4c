package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/frognano/frog/actors"
	"github.com/frognano/frog/policy/openai"
	"github.com/frognano/frog/run"
	"github.com/frognano/frog/run/taskenv"
)

// `frog train --policy openai`: the curriculum, the task source and the
// actors of frog train, with a language model behind OpenAI-compatible
// servers playing the episodes and an openai.ExportLearner in the learner's
// place: every batch of groups goes, with its advantages, to
// trajectories/ for the external trainer that holds the weights.

func (o *trainOptions) validateLLM() error {
	switch {
	case o.Resume != "":
		return usagef("--resume: a --policy openai run has no checkpoint here (its weights are the trainer's); start a new run")
	case o.Run.GroupSize < 2:
		return usagef("--group-size %d: GRPO compares a task's rollouts within a group; want >= 2", o.Run.GroupSize)
	case !(o.TargetPassRate > 0 && o.TargetPassRate < 1):
		return usagef("--target-pass-rate %v: want in (0, 1)", o.TargetPassRate)
	case o.Tasks != "" && len(o.Sources) > 0:
		return usagef("--tasks and --source: choose one")
	case o.ExportQueue < 1:
		return usagef("--export-queue %d: want >= 1", o.ExportQueue)
	}
	cfg, err := o.LLM.resolve()
	if err != nil {
		return err
	}
	o.Run.MaxSteps, o.Run.MaxTries = cfg.MaxTurns, 0
	if err := validateRun(o.Run); err != nil {
		return err
	}
	if err := checkSandbox(o.Sandbox.Kind, "docker", "process", "auto"); err != nil {
		return err
	}
	if err := checkRunName(o.Name); err != nil {
		return err
	}
	return checkSources(o.Sources)
}

// trainLLMReport is what `frog train --policy openai` prints and writes.
type trainLLMReport struct {
	actors.Summary
	LLM          openai.Stats       `json:"llm"`
	Calls        openai.TimingStats `json:"model_calls"`
	Exported     int64              `json:"exported"`
	StaleDropped int64              `json:"stale_dropped"`
	Tasks        *taskenv.Report    `json:"tasks,omitempty"`
	RunDir       string             `json:"run_dir"`
	Interrupted  bool               `json:"interrupted"`
	Version      string             `json:"frog_version"`
}

func runTrainLLM(ctx context.Context, g *globals, o *trainOptions) error {
	log, err := g.logger()
	if err != nil {
		return err
	}
	remote, err := o.trainRemote(log)
	if err != nil {
		return err
	}
	if o.Name == "" {
		o.Name = "train-" + time.Now().UTC().Format("20060102-150405")
	}
	o.Run.Run = o.Name
	// The model servers batch; frog sends each request as it comes.
	o.Run.MaxBatch, o.Run.InferenceWorkers = 1, o.Run.Concurrency
	o.Run = o.Run.WithDefaults()
	runLog := log // actors.Run adds the run's name itself
	log = log.With().Str("run", o.Name).Logger()
	pol, err := o.LLM.openLLM(ctx)
	if err != nil {
		return err
	}
	defer pol.Close()
	path := o.RunDir
	if path == "" {
		path = filepath.Join("runs", o.Name)
	}
	dir, err := createRunDir(path, struct {
		Version string        `json:"frog_version"`
		Command string        `json:"command"`
		Config  *trainOptions `json:"config"`
	}{version(), "train --policy openai", o})
	if err != nil {
		return err
	}
	defer dir.Close()
	tenv, prov, release, err := openTaskEnv(ctx, o.TaskOpts, sandboxSpec{sandboxOptions: o.Sandbox, Run: o.Name, Concurrency: o.Run.Concurrency}, log)
	if err != nil {
		return err
	}
	defer release()
	src, closeSrc, err := o.openSource(ctx, tenv, nil, log)
	if err != nil {
		return err
	}
	defer closeSrc()
	cur, err := newCurriculum(o.curriculumSpec())
	if err != nil {
		return err
	}
	shards, err := run.NewShards(filepath.Join(path, "trajectories"), 1000)
	if err != nil {
		return err
	}
	sink := newShardSink(shards, o.ExportQueue)
	learner := openai.NewExportLearner(pol, sink, o.Run.MaxStaleness)
	var timings openai.Timings
	deps := actors.Deps{
		Provider: prov, Learner: learner, Source: src, Curriculum: cur, Harness: tenv.Harness, Log: runLog,
		Counters: new(actors.Counters), OnUpdate: dir.OnUpdate(log), OnCurriculum: dir.OnCurriculum(log), Remote: remote,
		OnEpisode: func(r *actors.EpisodeResult) {
			if r.Trajectory != nil {
				timings.Add(r.Trajectory)
			}
		},
	}
	log.Info().Strs("servers", pol.Config().BaseURLs).Str("model", pol.Config().Model).Int64("episodes", o.Run.Episodes).Msg("training with an external trainer")
	bar := startProgress(g, !o.JSON, o.Run.Episodes, deps.Counters)
	sum, runErr := actors.Run(ctx, o.Run, deps)
	bar.stop()
	sink.close()
	if err := shards.Close(); err != nil {
		runErr = errors.Join(runErr, fmt.Errorf("trajectories: %w", err))
	}
	rep := trainLLMReport{Summary: sum, LLM: pol.Stats(), Calls: timings.Summary(), Exported: learner.Exported(), StaleDropped: learner.StaleDropped(),
		Tasks: tenv.Report(), RunDir: path, Interrupted: ctx.Err() != nil, Version: version()}
	return finish(g.stdout, dir, rep, o.JSON, rep.Interrupted, runErr)
}

func (r trainLLMReport) print(w io.Writer, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(w).Encode(r)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	e := r.Episodes
	fmt.Fprintf(tw, "episodes\t%d admitted: %d completed (%d solved, %d reward hacks suspected), %d failed (infrastructure), %d cancelled\n", e.Admitted, e.Completed, e.Solved, e.RewardHackSuspected, e.FailedInfra, e.Cancelled)
	fmt.Fprintf(tw, "export\t%d trajectories in %s (%d dropped as stale)\n", r.Exported, filepath.Join(r.RunDir, "trajectories"), r.StaleDropped)
	fmt.Fprintf(tw, "model calls\t%d (%d mistakes); latency p50 %.1f ms, p99 %.1f ms; frog's overhead p50 %.2f ms\n", r.LLM.Calls, r.LLM.Mistakes, r.Calls.LatencyP50MS, r.Calls.LatencyP99MS, r.Calls.OverheadP50MS)
	fmt.Fprintf(tw, "updates\t%d, zero-signal share %.2f\n", r.Learner.Updates, r.Learner.ZeroSignalShare)
	return tw.Flush()
}

// shardSink is the export's Sink: batches queue (at most queue of them)
// for a writer goroutine that appends them to the shards; Put blocks while
// the queue is full. close drains the queue and waits for the writer.
type shardSink struct {
	ch   chan []openai.Record
	done chan struct{}
}

func newShardSink(s *run.Shards, queue int) *shardSink {
	k := &shardSink{ch: make(chan []openai.Record, queue), done: make(chan struct{})}
	go func() {
		defer close(k.done)
		for recs := range k.ch {
			for _, r := range recs {
				s.Write(r)
			}
		}
	}()
	return k
}

func (k *shardSink) Put(ctx context.Context, recs []openai.Record) error {
	select {
	case k.ch <- recs:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (k *shardSink) close() {
	close(k.ch)
	<-k.done
}
