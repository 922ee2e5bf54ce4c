package cli

import (
	"os"
	"syscall"
	"testing"
	"time"
)

// The first signal cancels the job; a second one ends frog at once, unless
// it comes so soon after the first that it is the same request sent twice
// (timeout(1) sends its signal to frog and then to frog's process group).
// Before, a second signal was ignored for a whole second.
func TestWatchSignals(t *testing.T) {
	for _, tc := range []struct {
		name     string
		after    []time.Duration // when each signal after the first comes
		wantExit bool
	}{
		{"one signal", nil, false},
		{"the same request twice", []time.Duration{0, sameRequest / 2}, false},
		{"a second request", []time.Duration{sameRequest}, true},
		{"twice, then a second request", []time.Duration{time.Millisecond, 300 * time.Millisecond}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// watchSignals reads the clock once a signal: the first at
			// start, then at each of after.
			start := time.Unix(1e9, 0)
			times := append([]time.Duration{0}, tc.after...)
			now := func() time.Time {
				d := times[0]
				times = times[1:]
				return start.Add(d)
			}
			sigs := make(chan os.Signal)
			cancelled, exited := make(chan struct{}), make(chan os.Signal, 1)
			done := make(chan struct{})
			go func() {
				defer close(done)
				watchSignals(sigs, func() { close(cancelled) }, now, func(s os.Signal) { exited <- s })
			}()
			sigs <- syscall.SIGTERM
			<-cancelled
			for range tc.after {
				select {
				case sigs <- syscall.SIGINT:
				case <-done:
				}
			}
			close(sigs)
			<-done
			select {
			case s := <-exited:
				if !tc.wantExit {
					t.Errorf("exited at %v; want the job cancelled only", s)
				}
			default:
				if tc.wantExit {
					t.Error("a second request did not end frog")
				}
			}
		})
	}
}
