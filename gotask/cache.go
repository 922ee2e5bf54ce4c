package gotask

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sync"
	"time"

	"github.com/frognano/frog/env"
)

// outcomes is the harness's outcome cache: a bounded map from call keys to
// their outcomes, dropping the least recently used. Safe for concurrent use.
type outcomes struct {
	mu    sync.Mutex
	max   int
	order *list.List // front: most recent
	m     map[string]*list.Element
}

type entry struct {
	key string
	val any
}

func newOutcomes(max int) *outcomes {
	return &outcomes{max: max, order: list.New(), m: map[string]*list.Element{}}
}

func (o *outcomes) get(k string) (any, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	e, ok := o.m[k]
	if !ok {
		return nil, false
	}
	o.order.MoveToFront(e)
	return e.Value.(*entry).val, true
}

func (o *outcomes) put(k string, v any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if e, ok := o.m[k]; ok {
		e.Value.(*entry).val = v
		o.order.MoveToFront(e)
		return
	}
	o.m[k] = o.order.PushFront(&entry{k, v})
	for o.order.Len() > o.max {
		last := o.order.Back()
		o.order.Remove(last)
		delete(o.m, last.Value.(*entry).key)
	}
}

// keyLocks are mutexes by key, made on demand and dropped when free.
type keyLocks struct {
	mu sync.Mutex
	m  map[string]*keyLock
}

type keyLock struct {
	mu   sync.Mutex
	refs int
}

func (k *keyLocks) lock(key string) (unlock func()) {
	k.mu.Lock()
	if k.m == nil {
		k.m = map[string]*keyLock{}
	}
	l := k.m[key]
	if l == nil {
		l = &keyLock{}
		k.m[key] = l
	}
	l.refs++
	k.mu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		k.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(k.m, key)
		}
		k.mu.Unlock()
	}
}

// cached answers key from the cache, or computes it with f and stores it.
func cached[T any](h *Harness, k outcomeKey, f func() (T, int, error)) (T, env.Cost, error) {
	h.st.calls.Add(1)
	if !h.cfg.NoCache {
		if v, ok := h.cache.get(k.hash); ok {
			h.st.hits.Add(1)
			return v.(T), env.Cost{Cached: true}, nil
		}
		unlock := h.computing.lock(k.hash)
		defer unlock()
		if v, ok := h.cache.get(k.hash); ok { // computed while this call waited
			h.st.hits.Add(1)
			h.st.waited.Add(1)
			return v.(T), env.Cost{Cached: true}, nil
		}
	}
	start := time.Now()
	v, n, err := f()
	h.st.spent(k.kind, time.Since(start))
	h.st.execs.Add(int64(n))
	if err == nil && !h.cfg.NoCache {
		h.cache.put(k.hash, v)
	}
	return v, env.Cost{Executions: n}, err
}

// outcomeKey names one outcome in the cache: the kind of call (run,
// cover, cand, try, verdict) and the hash of the call and its state.
type outcomeKey struct{ kind, hash string }

// okey is the key of a call of kind with parts (task, state, arguments).
func okey(kind string, parts ...string) outcomeKey {
	return outcomeKey{kind, key(append([]string{kind}, parts...)...)}
}

func key(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// templateHashes is what a Workspaces says of a template's content
// (Workspaces checks it against what it recorded when it made it).
type templateHashes interface {
	TemplateHash(ctx context.Context, t *env.Task) (string, error)
}

// templateKey names task t's template by its content in the keys of what
// the binary cache keeps of the task (its coverage binary, schemata,
// candidate lists): a later run whose template was made again, or
// differs, finds none of what an earlier template's tasks left. It is
// asked once per task and harness; ok is false where the template could
// not be hashed (share nothing then). Workspaces that do not hash their
// templates give "".
func (h *Harness) templateKey(ctx context.Context, t *env.Task) (string, bool) {
	th, ok := h.ws.(templateHashes)
	if !ok {
		return "", true
	}
	if v, ok := h.tmplKeys.Load(t.ID); ok {
		return v.(string), true
	}
	k, err := th.TemplateHash(ctx, t)
	if err != nil {
		return "", false
	}
	h.tmplKeys.Store(t.ID, k)
	return k, true
}
