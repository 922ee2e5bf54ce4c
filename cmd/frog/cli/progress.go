package cli

import (
	"fmt"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/frognano/frog/actors"
)

// progress draws a bar on stderr while a run goes, from the scheduler's
// counters. It draws nothing unless both stdout and stderr are terminals.
type progress struct {
	done chan struct{}
	wg   sync.WaitGroup
}

// startProgress draws the episodes of a run.
func startProgress(g *globals, want bool, total int64, c *actors.Counters) *progress {
	return startBar(g, want, total, "ep", func() (string, int64) {
		desc := fmt.Sprintf("episodes (%d running, %d infra failed", c.Running.Load(), c.FailedInfra.Load())
		if done := c.Completed.Load(); done > 0 {
			desc += fmt.Sprintf(", %.0f%% solved", 100*float64(c.Solved.Load())/float64(done))
		}
		return desc + ")", c.Recorded()
	})
}

// startBar draws a bar of total items (a spinner when total is 0), asking
// poll for its description and count five times a second.
func startBar(g *globals, want bool, total int64, unit string, poll func() (string, int64)) *progress {
	p := &progress{done: make(chan struct{})}
	if !want || !isTerminal(g.stdout) || !isTerminal(g.stderr) {
		return p
	}
	max := total
	if max == 0 {
		max = -1
	}
	bar := progressbar.NewOptions64(max,
		progressbar.OptionSetWriter(g.stderr),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString(unit),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionFullWidth(),
	)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-p.done:
				_ = bar.Finish()
				return
			case <-t.C:
				desc, n := poll()
				bar.Describe(desc)
				_ = bar.Set64(n)
			}
		}
	}()
	return p
}

func (p *progress) stop() {
	close(p.done)
	p.wg.Wait()
}
