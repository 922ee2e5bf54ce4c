package gotask

import (
	"context"
	"encoding/json"
	"errors"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"slices"
	"time"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/gotask/gotest"
)

// trySchema is a schema binary of one candidate list, built in a sandbox:
// its metadata lives beside it there, so any episode's harness call finds it.
type trySchema struct {
	key string
	bin string
	dir string
	// Bad are the candidate IDs the schema could not hold.
	Bad map[int]bool `json:"bad"`
	// Serve says the binary has frog's serving TestMain (serve.go).
	Serve bool `json:"serve,omitempty"`
}

func (s *trySchema) holds(id int) bool { return !s.Bad[id] }

// share copies a schema binary built in sb to the host cache, binary first,
// each under a temporary name and renamed, so that a reader finds a whole
// binary or none. Failing to share only costs a later sandbox a build.
func (h *Harness) share(ctx context.Context, sb env.Sandbox, s *trySchema, hostBin, hostMeta string, meta []byte) {
	bin, err := sb.ReadFile(ctx, s.bin)
	switch {
	case err == nil:
		if !writeShared(h.cfg.BinCache, hostBin, bin, 0o555) {
			return
		}
	case !allBad(s):
		return // no binary to share
	}
	writeShared(h.cfg.BinCache, hostMeta, meta, 0o444)
}

// writeShared writes data to dst in directory dir (made if missing) with
// mode, whole or not at all: a temporary file renamed into place.
func writeShared(dir, dst string, data []byte, mode os.FileMode) bool {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false
	}
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return false
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil || f.Chmod(mode) != nil || f.Close() != nil {
		f.Close()
		return false
	}
	return os.Rename(f.Name(), dst) == nil
}

func allBad(s *trySchema) bool {
	for _, b := range s.Bad {
		if !b {
			return false
		}
	}
	return true
}

// schemaFor builds the schema binary of list in sb, once per sandbox and
// list: every candidate is one mutant (id = candidate ID + 1); candidates
// the schema cannot hold (edits outside a function body, build errors
// attributed to them) are tried by real builds. A schema built already,
// by an earlier try of this episode or, through BinCache, for any sandbox
// of this state, is taken as it is.
func (h *Harness) schemaFor(ctx context.Context, sb env.Sandbox, ws *env.Workspace, list []env.Candidate, lkey string) (*trySchema, error) {
	t := ws.Task
	tk, named := h.templateKey(ctx, t)
	skey := key(t.ID, tk, ws.Hash(), lkey)
	s := &trySchema{key: lkey, bin: ".frog/try-" + skey[:16] + ".test", Bad: map[int]bool{}, dir: t.Dir()}
	at := schemaPlace{
		meta:    ".frog/try-" + skey[:16] + ".json",
		hostBin: filepath.Join(h.cfg.BinCache, skey+".test"), hostMeta: filepath.Join(h.cfg.BinCache, skey+".json"),
	}
	hp, _ := sb.(env.HostPaths)
	at.shared = h.cfg.BinCache != "" && hp != nil && named // a template that cannot be named shares nothing
	if at.shared {
		// One build at a time per schema: concurrent episodes of one task
		// wait for the first and run its binary.
		unlock := h.building.lock(skey)
		defer unlock()
		if data, err := os.ReadFile(at.hostMeta); err == nil && json.Unmarshal(data, s) == nil {
			if p, ok := hp.HostPath(at.hostBin); ok {
				s.bin = p
				return s, nil // built once for every sandbox of this state
			}
		}
	}
	if data, err := sb.ReadFile(ctx, at.meta); err == nil && json.Unmarshal(data, s) == nil {
		return s, nil // built by an earlier try of this episode
	} else if errors.Is(err, env.ErrInfra) || ctx.Err() != nil {
		return nil, err
	}
	if err := h.buildSchema(ctx, sb, ws, list, s); err != nil {
		return nil, err
	}
	return h.saveSchema(ctx, sb, s, at)
}

// schemaPlace is where a schema's description is kept: meta in the
// sandbox, and, when shared, hostMeta and the binary hostBin in BinCache.
type schemaPlace struct {
	meta, hostBin, hostMeta string
	shared                  bool
}

// saveSchema writes s's description where at says, and shares its binary
// when at is shared.
func (h *Harness) saveSchema(ctx context.Context, sb env.Sandbox, s *trySchema, at schemaPlace) (*trySchema, error) {
	data, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	if err := sb.WriteFile(ctx, at.meta, data); err != nil {
		return nil, err
	}
	if at.shared {
		h.share(ctx, sb, s, at.hostBin, at.hostMeta, data)
	}
	return s, nil
}

// buildSchema builds s's binary from the candidates of list, marking in
// s.Bad those it cannot hold: all of them when they lie outside the tests'
// package, those that do not parse, and those the build blames.
func (h *Harness) buildSchema(ctx context.Context, sb env.Sandbox, ws *env.Workspace, list []env.Candidate, s *trySchema) error {
	t := ws.Task
	tmpl, err := h.ws.Template(ctx, t)
	if err != nil {
		return env.Infra(err)
	}
	byDir := map[string]bool{}
	for _, c := range list {
		byDir[path.Dir(c.File)] = true
	}
	if len(byDir) != 1 || !byDir[path.Clean(t.Dir())] {
		// Candidates outside the tests' package: every try is a real build.
		for _, c := range list {
			s.Bad[c.ID] = true
		}
		return nil
	}
	pkg, err := loadPackage(tmpl, ws, t.Dir())
	if err != nil {
		return err
	}
	return h.compileSchema(ctx, sb, t, tmpl, pkg, list, parsedCandidates(pkg, list, s), s)
}

// parsedCandidates are the IDs of the candidates of list whose files parse
// with their edits; the others are marked in s.Bad.
func parsedCandidates(pkg *typedPackage, list []env.Candidate, s *trySchema) map[int]bool {
	live := map[int]bool{}
	for _, c := range list {
		// A candidate that does not parse would only break the build.
		sf := pkg.Files[c.File]
		edited, err := env.Splice(sf.SrcOrNil(), c.Edits)
		if sf == nil || err != nil {
			s.Bad[c.ID] = true
			continue
		}
		if _, err := parser.ParseFile(token.NewFileSet(), c.File, edited, parser.SkipObjectResolution); err != nil {
			s.Bad[c.ID] = true
			continue
		}
		live[c.ID] = true
	}
	return live
}

// compileSchema builds the schema binary of the live candidates of list,
// laid over the template tmpl's package: candidates the schema cannot
// express, or that the compiler's messages are about, leave it (into
// s.Bad) and the rest are built again, five attempts at most; a failure the
// messages do not explain leaves every candidate to real builds.
func (h *Harness) compileSchema(ctx context.Context, sb env.Sandbox, t *env.Task, tmpl string, pkg *typedPackage, list []env.Candidate, live map[int]bool, s *trySchema) error {
	for attempt := 0; ; attempt++ {
		var muts []gotest.Mutant
		for _, c := range list {
			if live[c.ID] {
				muts = append(muts, gotest.Mutant{ID: c.ID + 1, File: c.File, Edits: slices.Clone(c.Edits)})
			}
		}
		if len(muts) == 0 {
			return nil
		}
		sc, bad := pkg.Build(muts)
		for id := range bad {
			s.Bad[id-1], live[id-1] = true, false
		}
		if len(bad) > 0 {
			continue
		}
		s.Serve = addServeMain(sc, tmpl, t.Dir(), pkg.Name)
		ov, err := gotest.WriteOverlay(ctx, sb, sc)
		if err != nil {
			return err
		}
		h.st.builds.Add(1)
		start := time.Now()
		r, err := h.goCmd(ctx, sb, h.cfg.BuildTimeout, "test", "-c", "-vet=off", "-gcflags=-e", "-ldflags=-s -w", "-o", s.bin, "-overlay", ov, "./"+t.Dir())
		h.st.spent("schema-build", time.Since(start))
		if err != nil {
			return err
		}
		if r.Exit == 0 && !r.TimedOut {
			return nil
		}
		blamed, unexplained := gotest.Attribute(sc, string(r.Out))
		if unexplained || attempt >= 4 {
			for id := range live {
				if live[id] {
					s.Bad[id] = true
				}
			}
			return nil
		}
		for id := range blamed {
			s.Bad[id-1], live[id-1] = true, false
		}
	}
}
