package cli

import (
	"context"
	"fmt"
	"os"

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
