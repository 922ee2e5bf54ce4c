package taskenv

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"

	"github.com/rs/zerolog"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/gotask"
	policysim "github.com/frognano/frog/policy/sim"
	"github.com/frognano/frog/run"
	"github.com/frognano/frog/synth/source"
)

// Options are how real tasks are laid out and judged (frog's
// --workspaces, --local, --no-outcome-cache, --no-try-server); a command's
// config.json records them.
type Options struct {
	Workspaces string   `json:"workspaces"`
	Locals     []string `json:"locals,omitempty"`
	NoCache    bool     `json:"no_outcome_cache"`
	NoServe    bool     `json:"no_try_server,omitempty"`
	// RestoreList is gotask.HarnessConfig.RestoreList (--restore-stmt).
	RestoreList int `json:"restore_stmt,omitempty"`
}

// SandboxOptions choose and shape the sandbox backend (frog's --sandbox,
// --image, --pool, --reuse, --unsafe-process-sandbox); a command's
// config.json records them. This package only hands them to an Opener:
// the command line wires the backends.
type SandboxOptions struct {
	Kind  string `json:"kind"`
	Image string `json:"image,omitempty"`
	Pool  int    `json:"pool"`
	// Reuse is docker.Config.Reuse; 0 keeps its default.
	Reuse int `json:"reuse,omitempty"`
	// Unsafe lets process sandboxes run their commands uncontained where
	// they cannot be contained (process.ErrUncontained).
	Unsafe bool `json:"unsafe_process_sandbox,omitempty"`
}

// Sandboxes are what the sandboxes of an Env are opened with: the
// backend, the run's name (containers are labelled with it), how many may
// be open at once, and the workspaces that lay out the tasks (Open sets
// them).
type Sandboxes struct {
	SandboxOptions
	Run         string
	Concurrency int
	Workspaces  *gotask.Workspaces
}

// Opener opens the sandboxes s names and returns the provider and what
// must be called to release it. It is the caller's, which wires the
// backends; Open calls it once, from the caller's goroutine, with the
// caller's ctx.
type Opener func(ctx context.Context, s Sandboxes) (env.Provider, func(), error)

// Env is what plays real tasks: their workspaces, the harness that runs
// their tests and judges them, and the quarantine that checks each before
// it is served. One Env serves every episode of a run, concurrently.
type Env struct {
	Workspaces *gotask.Workspaces
	Harness    *gotask.Harness
	Quarantine *gotask.Quarantine
	// HarnessConfig is Harness's configuration, for a harness of its own
	// (a later run's).
	HarnessConfig gotask.HarnessConfig
}

// Open opens the sandboxes s names through open, laying out real tasks
// from o.Workspaces. The func releases the sandboxes.
func Open(ctx context.Context, o Options, s Sandboxes, open Opener, log zerolog.Logger) (*Env, env.Provider, func(), error) {
	ws, err := gotask.NewWorkspaces(o.Workspaces, log)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("--workspaces %s: %w", o.Workspaces, err)
	}
	for _, dir := range o.Locals {
		m, err := source.Local(dir)
		if err != nil {
			return nil, nil, nil, run.Usagef("--local %s: %v", dir, err)
		}
		ws.AddLocal(m)
	}
	s.Workspaces = ws
	prov, release, err := open(ctx, s)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("sandbox %s: %w", s.Kind, err)
	}
	// The verdict key sits beside the workspaces root, not in it: sandboxes
	// see the root (its templates and binary cache), never the key.
	key, err := gotask.LoadVerdictKey(filepath.Join(filepath.Dir(ws.Root()), "verdict.key"))
	if err != nil {
		release()
		return nil, nil, nil, err
	}
	hcfg := gotask.HarnessConfig{NoCache: o.NoCache, NoServe: o.NoServe, RestoreList: o.RestoreList, BinCache: filepath.Join(ws.Root(), "bin"), VerdictKey: key}
	h := gotask.NewHarness(ws, hcfg)
	return &Env{Workspaces: ws, Harness: h, Quarantine: gotask.NewQuarantine(ws, h, prov, s.Run, log), HarnessConfig: hcfg}, prov, release, nil
}

// OracleFix is what frog sim's simulated agent is told of a real task: the
// files of its gold fix (a named simulation; no real policy sees them).
func (e *Env) OracleFix(ctx context.Context, t *env.Task) (policysim.Fix, error) {
	fixed, err := e.Workspaces.Fixed(ctx, t)
	if err != nil {
		return policysim.Fix{}, err
	}
	f := policysim.Fix{Difficulty: t.Difficulty}
	for _, p := range slices.Sorted(maps.Keys(fixed)) {
		f.Files = append(f.Files, policysim.FileContent{Path: p, Content: string(fixed[p])})
	}
	return f, nil
}

// Report is what a run of real tasks adds to its summary.
type Report struct {
	Quarantined []gotask.Quarantined `json:"quarantined"`
	Harness     gotask.HarnessStats  `json:"harness"`
}

// Report is e's quarantine and harness so far; nil for a nil Env (a run
// of simulated tasks).
func (e *Env) Report() *Report {
	if e == nil {
		return nil
	}
	return &Report{Quarantined: e.Quarantine.Quarantined(), Harness: e.Harness.Stats()}
}
