package gotask

import (
	"container/list"
	"sync"
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
