package cli

import (
	"errors"
	"io"
	"strings"

	"github.com/frognano/frog/run"
)

// checkRunName refuses a run name that is not one plain path element: the
// name becomes runs/<name> and a container label, and "../x" or "a/b" would
// put the run elsewhere.
func checkRunName(name string) error {
	if name == "" {
		return nil // the command picks one
	}
	if len(name) > 64 || name[0] == '.' || name[0] == '-' ||
		strings.Trim(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != "" {
		return usagef("--name %q: want 1 to 64 letters, digits, '.', '_' or '-', not starting with '.' or '-' (use --run-dir to choose the directory)", name)
	}
	return nil
}

// createRunDir makes a new run's directory (run.Create); a directory that
// holds a finished run is a usage error.
func createRunDir(path string, config any) (*run.Dir, error) {
	d, err := run.Create(path, config)
	if errors.Is(err, run.ErrFinished) {
		return nil, usagef("%v; pick another --name or --run-dir", err)
	}
	return d, err
}

// finish ends a command that ran a run: it writes the summary into the run
// directory (when there is one), prints it, and returns the run's error, or
// ErrInterrupted when a signal cut the run short.
func finish(w io.Writer, dir *run.Dir, rep interface{ print(io.Writer, bool) error }, asJSON, interrupted bool, runErr error) error {
	if dir != nil {
		if err := dir.WriteSummary(rep); err != nil {
			runErr = errors.Join(runErr, err)
		}
	}
	if err := rep.print(w, asJSON); err != nil {
		return err
	}
	if runErr != nil {
		return runErr
	}
	if interrupted {
		return ErrInterrupted
	}
	return nil
}
