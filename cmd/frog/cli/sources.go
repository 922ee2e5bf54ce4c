package cli

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/frognano/frog/synth/source"
)

// workDir returns dir, or when it is empty a new temporary directory; the
// func removes what workDir created.
func workDir(dir, prefix string) (string, func(), error) {
	if dir != "" {
		return dir, func() {}, nil
	}
	tmp, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", nil, fmt.Errorf("work dir: %w", err)
	}
	return tmp, func() { os.RemoveAll(tmp) }, nil
}

// checkSources refuses an empty --source: a usage error, not a source
// that fails to open.
func checkSources(specs []string) error {
	for _, s := range specs {
		if strings.TrimSpace(s) == "" {
			return usagef("--source %q: want a module directory, path@version or git+URL[@ref]", s)
		}
	}
	return nil
}

type skippedSource struct {
	Source string `json:"source"`
	Error  string `json:"error"`
}

// openSources opens every spec (see source.Open) under work. A source that
// cannot be opened is logged and returned in skipped; ctx's end is
// ErrInterrupted.
func openSources(ctx context.Context, specs []string, work string, log zerolog.Logger) (mods []source.Module, skipped []skippedSource, err error) {
	for _, spec := range specs {
		m, err := source.Open(ctx, spec, work)
		if ctx.Err() != nil {
			return nil, nil, ErrInterrupted
		}
		if err != nil {
			log.Warn().Err(err).Str("source", spec).Msg("source skipped")
			skipped = append(skipped, skippedSource{spec, err.Error()})
			continue
		}
		log.Debug().Str("module", m.String()).Str("dir", m.Dir).Msg("source ready")
		mods = append(mods, m)
	}
	return mods, skipped, nil
}

// openSynthesizer opens specs under work and a synthesizer over them that
// validates in the sandboxes sb names, within cfg (its Provider is set
// here). With sb.Workspaces set, the modules are registered there, so that
// the tasks it makes can be laid out. The func closes the synthesizer's sandboxes, then the backend.
func openSynthesizer(ctx context.Context, specs []string, work string, sb sandboxSpec, cfg source.Config, log zerolog.Logger) (*source.Synthesizer, []skippedSource, func(), error) {
	mods, skipped, err := openSources(ctx, specs, work, log)
	if err != nil {
		return nil, nil, nil, err
	}
	if ws := sb.Workspaces; ws != nil {
		// Tasks made here are laid out from these very copies.
		for _, m := range mods {
			ws.AddLocal(m)
		}
		sb.Workspaces = nil // validation sandboxes copy modules themselves
	}
	sb.Validation = true
	if len(mods) == 0 {
		return nil, skipped, nil, fmt.Errorf("no usable source among %d", len(specs))
	}
	prov, release, err := openSandboxes(ctx, sb, log)
	if err != nil {
		return nil, skipped, nil, fmt.Errorf("sandboxes: %w", err)
	}
	cfg.Provider = prov
	s, err := source.New(mods, cfg, log)
	if err != nil {
		release()
		return nil, skipped, nil, err
	}
	return s, skipped, func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if err := s.Close(ctx); err != nil {
			log.Warn().Err(err).Msg("close validation sandboxes")
		}
		release()
	}, nil
}
