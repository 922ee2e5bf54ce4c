package gotask

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/frognano/frog/env"
)

// TryBench is what BenchTries measured: the same candidates of the same
// tasks tried through a schema binary (its tries served by one process, and
// a process each) and by a real build each.
type TryBench struct {
	Tasks      int `json:"tasks"`
	Candidates int `json:"candidates"`
	// Schema, Alone and Real are the paths: the schema's tries served by
	// one process of an episode's sandbox (as episodes try them), the
	// schema's tries a process each, a real build each; Ratio is Schema's
	// tries per second over Real's.
	Schema TryPath `json:"schema"`
	Alone  TryPath `json:"schema_process_each"`
	Real   TryPath `json:"real_build"`
	Ratio  float64 `json:"ratio"`
	// Agree counts the candidates the schema and the real build judged
	// alike (every test passing or not); AgreeServed those whose served
	// try failed the same tests as the try in a process of its own.
	Agree       int `json:"agree"`
	AgreeServed int `json:"agree_served"`
	// Disagree names the candidates served and alone disagreed on
	// ("task#id: served [...] alone [...]"), the first 20.
	Disagree []string `json:"disagree_served,omitempty"`
}

// TryPath is one way of trying candidates.
type TryPath struct {
	Tries         int     `json:"tries"`
	Seconds       float64 `json:"seconds"`
	TriesPerSec   float64 `json:"tries_per_second"`
	BuildSeconds  float64 `json:"build_seconds,omitempty"`
	RunMillisP50  float64 `json:"run_ms_p50"`
	AllPassTrials int     `json:"all_pass"`
}

// BenchTries tries up to perTask candidates of each task both ways, in
// fresh sandboxes of prov (one per task and path), with no outcome cache,
// alternating which path goes first. Candidates are those at the lines
// the FAIL_TO_PASS tests run.
func BenchTries(ctx context.Context, prov env.Provider, ws env.Workspaces, tasks []*env.Task, perTask int) (TryBench, error) {
	schema := NewHarness(ws, HarnessConfig{NoCache: true})
	alone := NewHarness(ws, HarnessConfig{NoCache: true, NoServe: true})
	real := NewHarness(ws, HarnessConfig{NoCache: true, NoSchema: true})
	var b TryBench
	var sRuns, aRuns, rRuns []time.Duration
	for i, t := range tasks {
		list, err := benchCandidates(ctx, prov, schema, t)
		if err != nil {
			return b, err
		}
		if len(list) == 0 {
			continue
		}
		ids := make([]int, min(perTask, len(list)))
		for j := range ids {
			ids[j] = j
		}
		b.Tasks++
		b.Candidates += len(ids)
		var sres, ares, rres []env.TryResult
		paths := []func() error{
			func() (err error) {
				sres, err = timeTries(ctx, prov, schema, t, list, ids, &b.Schema, &sRuns)
				return err
			},
			func() (err error) {
				ares, err = timeTries(ctx, prov, alone, t, list, ids, &b.Alone, &aRuns)
				return err
			},
			func() (err error) {
				rres, err = timeTries(ctx, prov, real, t, list, ids, &b.Real, &rRuns)
				return err
			},
		}
		if i%2 == 1 {
			slices.Reverse(paths)
		}
		for _, p := range paths {
			if err := p(); err != nil {
				return b, err
			}
		}
		for j := range sres {
			if sres[j].AllPass == rres[j].AllPass {
				b.Agree++
			}
			if slices.Equal(sres[j].Failing, ares[j].Failing) && sres[j].Built == ares[j].Built {
				b.AgreeServed++
			} else if len(b.Disagree) < 20 {
				b.Disagree = append(b.Disagree, fmt.Sprintf("%s#%d (%s): served %v, alone %v", t.ID, ids[j], list[ids[j]].Desc, sres[j].Failing, ares[j].Failing))
			}
		}
	}
	for _, p := range []*TryPath{&b.Schema, &b.Alone, &b.Real} {
		if p.Seconds > 0 {
			p.TriesPerSec = float64(p.Tries) / p.Seconds
		}
	}
	b.Schema.RunMillisP50, b.Alone.RunMillisP50, b.Real.RunMillisP50 = p50ms(sRuns), p50ms(aRuns), p50ms(rRuns)
	if b.Real.TriesPerSec > 0 {
		b.Ratio = b.Schema.TriesPerSec / b.Real.TriesPerSec
	}
	return b, nil
}

// benchCandidates lists a task's candidates at the lines its failing tests
// run, in a sandbox of its own.
func benchCandidates(ctx context.Context, prov env.Provider, h *Harness, t *env.Task) ([]env.Candidate, error) {
	sb, err := prov.Open(ctx, env.OpenOptions{Run: "bench-tries", Task: t})
	if err != nil {
		return nil, err
	}
	defer sb.Close(context.WithoutCancel(ctx))
	ws := env.NewWorkspace(t)
	cov, _, err := h.Coverage(ctx, sb, ws, t.FailToPass)
	if err != nil {
		return nil, fmt.Errorf("task %s: coverage: %w", t.ID, err)
	}
	seen := map[env.Line]bool{}
	var lines []env.Line
	for _, test := range t.FailToPass {
		for _, i := range cov.Tests[test] {
			b := cov.Blocks[i]
			for l := b.Start; l <= b.End; l++ {
				if line := (env.Line{File: b.File, Line: l}); !seen[line] {
					seen[line] = true
					lines = append(lines, line)
				}
			}
		}
	}
	return h.Candidates(ctx, sb, ws, lines)
}

// timeTries tries ids one at a time in a fresh sandbox and adds the time
// to p: the whole of it (a schema's build included) and each try's.
func timeTries(ctx context.Context, prov env.Provider, h *Harness, t *env.Task, list []env.Candidate, ids []int, p *TryPath, runs *[]time.Duration) ([]env.TryResult, error) {
	sb, err := prov.Open(ctx, env.OpenOptions{Run: "bench-tries", Task: t})
	if err != nil {
		return nil, err
	}
	defer sb.Close(context.WithoutCancel(ctx))
	ws := env.NewWorkspace(t)
	if _, _, err := h.RunTests(ctx, sb, ws, nil); err != nil { // the baseline report a try compares with
		return nil, err
	}
	builds0 := h.st.builds.Load()
	start := time.Now()
	var out []env.TryResult
	var build time.Duration
	for _, id := range ids {
		t0 := time.Now()
		res, _, err := h.Try(ctx, sb, ws, list, []int{id})
		if err != nil {
			return nil, fmt.Errorf("task %s: try %d: %w", t.ID, id, err)
		}
		d := time.Since(t0)
		if h.st.builds.Load() > builds0 && build == 0 {
			build = d // the first try of a schema pays for its build
		} else {
			*runs = append(*runs, d)
		}
		out = append(out, res...)
		if res[0].AllPass {
			p.AllPassTrials++
		}
	}
	p.Tries += len(ids)
	p.Seconds += time.Since(start).Seconds()
	p.BuildSeconds += build.Seconds()
	return out, nil
}

func p50ms(ds []time.Duration) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return float64(s[len(s)/2].Microseconds()) / 1000
}
