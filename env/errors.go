package env

import "errors"

// ErrInfra is the category of every infrastructure fault. Sandboxes, providers
// and agents wrap it (with Infra) around errors that are not the agent's doing.
var ErrInfra = errors.New("infrastructure fault")

// ErrClosed is returned by a Sandbox used after Close. It wraps ErrInfra.
var ErrClosed = Infra(errors.New("sandbox closed"))

// Infra marks err as an infrastructure fault: errors.Is(Infra(err), ErrInfra)
// holds and errors.Unwrap gives err back. Infra(nil) is nil.
func Infra(err error) error {
	if err == nil || errors.Is(err, ErrInfra) {
		return err
	}
	return &infraError{err: err}
}

type infraError struct{ err error }

func (e *infraError) Error() string        { return e.err.Error() }
func (e *infraError) Unwrap() error        { return e.err }
func (e *infraError) Is(target error) bool { return target == ErrInfra }
