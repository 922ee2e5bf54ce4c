package run

import (
	"errors"
	"fmt"
)

// UsageError is a bad flag, argument or value: the caller's input, not a
// fault of the machine. The command line exits with code 2 for it.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Usagef is a UsageError with a formatted message.
func Usagef(format string, args ...any) error {
	return &UsageError{Err: fmt.Errorf(format, args...)}
}

// ErrInterrupted is returned when a signal stopped the job; what it had done
// was recorded and reported first. The command line exits with code 130
// for it.
var ErrInterrupted = errors.New("interrupted")

// Interrupted is ErrInterrupted with what the signal cut short, for a job
// stopped before it had anything to report.
func Interrupted(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInterrupted}, args...)...)
}
