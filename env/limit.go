package env

import (
	"context"
	"sync"
)

// Limit wraps p so that at most n of its sandboxes are open at once; Open
// waits for a free slot or for ctx. Closing a sandbox frees its slot. n <= 0
// means no limit.
func Limit(p Provider, n int) Provider {
	if n <= 0 {
		return p
	}
	return &limited{p: p, slots: make(chan struct{}, n)}
}

type limited struct {
	p     Provider
	slots chan struct{}
}

func (l *limited) Open(ctx context.Context, opts OpenOptions) (Sandbox, error) {
	select {
	case l.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	sb, err := l.p.Open(ctx, opts)
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &limitedSandbox{Sandbox: sb, release: func() { <-l.slots }}, nil
}

// Stats forwards to the wrapped provider when it keeps statistics.
func (l *limited) Stats() SandboxStats {
	if s, ok := l.p.(ProviderStats); ok {
		return s.Stats()
	}
	return SandboxStats{}
}

type limitedSandbox struct {
	Sandbox
	once    sync.Once
	release func()
}

func (s *limitedSandbox) Close(ctx context.Context) error {
	err := s.Sandbox.Close(ctx)
	s.once.Do(s.release)
	return err
}

// HostPath forwards the wrapped sandbox's HostPaths capability (none: the
// sandbox sees no host file), so that a limit does not hide what a
// harness shares among sandboxes.
func (s *limitedSandbox) HostPath(p string) (string, bool) {
	if hp, ok := s.Sandbox.(HostPaths); ok {
		return hp.HostPath(p)
	}
	return "", false
}

// Reset forwards the wrapped sandbox's Resetter capability (ErrNoReset
// where it has none).
func (s *limitedSandbox) Reset(ctx context.Context) error {
	if r, ok := s.Sandbox.(Resetter); ok {
		return r.Reset(ctx)
	}
	return ErrNoReset
}

// Remove forwards the wrapped sandbox's Remover capability, or runs rm.
func (s *limitedSandbox) Remove(ctx context.Context, path string) error {
	return remove(ctx, s.Sandbox, path)
}
