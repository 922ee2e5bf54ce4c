package docker

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// pool keeps up to target started containers of one image, with ready
// agents, that no episode has used. It owns one filler goroutine (and the
// creations it starts), which exits when the provider closes.
type pool struct {
	p      *Provider
	image  string
	target int
	wake   chan struct{}

	mu       sync.Mutex
	idle     []*Sandbox
	creating int
	// returning counts the containers out with episodes that will come
	// back to the pool, reset, when their episodes end (Config.Reuse): the
	// filler makes new ones only for the rest of the target.
	returning int
	failures  int // consecutive

	created, failed, warmHits, coldStarts, discarded, reused atomic.Int64
	seq                                                      atomic.Int64
}

// PoolStats describes one image's warm pool.
type PoolStats struct {
	Image    string `json:"image"`
	Target   int    `json:"target"`
	Idle     int    `json:"idle"`
	Creating int    `json:"creating"`
	// Created and Failed count the pool's container starts; WarmHits the
	// opens it served, ColdStarts those it could not; Discarded the idle
	// containers found dead and removed.
	Created    int64 `json:"created"`
	Failed     int64 `json:"failed"`
	WarmHits   int64 `json:"warm_hits"`
	ColdStarts int64 `json:"cold_starts"`
	Discarded  int64 `json:"discarded"`
	// Reused counts the containers reset and put back after an episode
	// (Config.Reuse).
	Reused int64 `json:"reused"`
}

// PoolStats reports every warm pool of the provider.
func (p *Provider) PoolStats() []PoolStats {
	p.mu.Lock()
	pools := make([]*pool, 0, len(p.pools))
	for _, pl := range p.pools {
		pools = append(pools, pl)
	}
	p.mu.Unlock()
	out := make([]PoolStats, 0, len(pools))
	for _, pl := range pools {
		pl.mu.Lock()
		st := PoolStats{Image: pl.image, Target: pl.target, Idle: len(pl.idle), Creating: pl.creating}
		pl.mu.Unlock()
		st.Created, st.Failed = pl.created.Load(), pl.failed.Load()
		st.WarmHits, st.ColdStarts, st.Discarded = pl.warmHits.Load(), pl.coldStarts.Load(), pl.discarded.Load()
		st.Reused = pl.reused.Load()
		out = append(out, st)
	}
	return out
}

// pool returns the warm pool of img, starting it if needed; nil once the
// provider is closed.
func (p *Provider) pool(img string) *pool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	if pl := p.pools[img]; pl != nil {
		return pl
	}
	pl := &pool{p: p, image: img, target: p.cfg.PoolSize, wake: make(chan struct{}, 1)}
	p.pools[img] = pl
	p.wg.Add(1)
	go pl.run()
	pl.kick()
	return pl
}

func (pl *pool) kick() {
	select {
	case pl.wake <- struct{}{}:
	default:
	}
}

// take returns a fresh idle container, or nil. Containers that died while
// idle are removed and skipped.
func (pl *pool) take() *Sandbox {
	defer pl.kick()
	for {
		pl.mu.Lock()
		if len(pl.idle) == 0 {
			pl.mu.Unlock()
			return nil
		}
		s := pl.idle[0]
		pl.idle = pl.idle[1:]
		// Counted before the filler looks: it makes no container for one
		// that will come back.
		pl.lendLocked(s)
		pl.mu.Unlock()
		select {
		case <-s.conn.dead:
			if s.lent != nil {
				s.lent = nil
				pl.unlend() // the deferred kick makes up for it
			}
			pl.discarded.Add(1)
			s.closed.Store(true)
			pl.p.remove(context.Background(), s.id)
			continue
		default:
		}
		pl.warmHits.Add(1)
		return s
	}
}

// wants says whether the pool has room for another idle container.
func (pl *pool) wants() bool {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	return len(pl.idle) < pl.target
}

// lend counts s as out with an episode, to come back when it ends, if
// Config.Reuse lets it serve another one.
func (pl *pool) lend(s *Sandbox) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	pl.lendLocked(s)
}

func (pl *pool) lendLocked(s *Sandbox) {
	if s.uses < pl.p.cfg.Reuse {
		pl.returning++
		s.lent = pl
	}
}

// back undoes lend when s's episode ends, whether s comes back or not,
// and has the filler make up for one that did not.
func (pl *pool) back() {
	pl.unlend()
	pl.kick()
}

func (pl *pool) unlend() {
	pl.mu.Lock()
	pl.returning--
	pl.mu.Unlock()
}

// put adds a reset container to the idle ones, unless the provider is
// closing or the pool is full; it says whether it did.
func (pl *pool) put(s *Sandbox) bool {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	select {
	case <-pl.p.done:
		return false
	default:
	}
	if len(pl.idle) >= pl.target {
		return false
	}
	pl.idle = append(pl.idle, s)
	pl.reused.Add(1)
	return true
}

// drain hands back the idle containers (for the provider's Close).
func (pl *pool) drain() []*Sandbox {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	idle := pl.idle
	pl.idle = nil
	return idle
}

// run is the filler: on every kick it starts creations until idle plus
// creating reaches the target, PoolParallel at a time.
func (pl *pool) run() {
	defer pl.p.wg.Done()
	var wg sync.WaitGroup
	defer wg.Wait()
	sem := make(chan struct{}, pl.p.cfg.PoolParallel)
	for {
		select {
		case <-pl.p.done:
			return
		case <-pl.wake:
		}
		for {
			pl.mu.Lock()
			if pl.target-len(pl.idle)-pl.creating-pl.returning <= 0 {
				pl.mu.Unlock()
				break
			}
			pl.creating++
			pl.mu.Unlock()
			select {
			case sem <- struct{}{}:
			case <-pl.p.done:
				pl.mu.Lock()
				pl.creating--
				pl.mu.Unlock()
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				pl.fill()
			}()
		}
	}
}

// fill creates one container for the pool; after a failure it waits (longer
// after each consecutive one, up to 10 s) before asking for another.
func (pl *pool) fill() {
	name := fmt.Sprintf("frog-%s-pool-%d-%s", sanitize(pl.p.cfg.Run), pl.seq.Add(1), randHex(3))
	s, err := pl.p.create(pl.p.life, pl.image, pl.p.cfg.Run, "pool", "0", name)
	pl.mu.Lock()
	pl.creating--
	if err != nil {
		pl.failures++
		n := pl.failures
		pl.mu.Unlock()
		pl.failed.Add(1)
		select {
		case <-pl.p.done:
			return
		default:
		}
		pl.p.log.Warn().Err(err).Str("image", pl.image).Msg("warm pool start failed")
		t := time.NewTimer(min(100*time.Millisecond<<min(n, 7), 10*time.Second))
		defer t.Stop()
		select {
		case <-t.C:
		case <-pl.p.done:
			return
		}
		pl.kick()
		return
	}
	pl.failures = 0
	select {
	case <-pl.p.done:
		pl.mu.Unlock()
		s.closed.Store(true)
		s.conn.close()
		pl.p.remove(context.Background(), s.id)
		return
	default:
	}
	pl.idle = append(pl.idle, s)
	pl.mu.Unlock()
	pl.created.Add(1)
	pl.kick()
}
