package actors

// recentTasks is the ids of the tasks a pool of slots (a worker, or this
// process) ran last, up to a bound: where an episode's task already has
// its workspace, builds and verdicts cached. The scheduler alone uses it.
type recentTasks struct {
	has  map[string]struct{}
	ring []string // the ids in the order they came; next is the oldest
	next int
}

// recentTasksKept is how many task ids a pool remembers. A worker's
// caches hold more; past this many, the oldest is the least likely to be
// warm.
const recentTasksKept = 1024

func (t *recentTasks) contains(id string) bool {
	_, ok := t.has[id]
	return ok
}

// add remembers id, forgetting the oldest id once the bound is reached.
func (t *recentTasks) add(id string) {
	if t.contains(id) {
		return
	}
	if t.has == nil {
		t.has = make(map[string]struct{})
	}
	if len(t.ring) < recentTasksKept {
		t.ring = append(t.ring, id)
	} else {
		delete(t.has, t.ring[t.next])
		t.ring[t.next] = id
		t.next = (t.next + 1) % recentTasksKept
	}
	t.has[id] = struct{}{}
}

// pick chooses where an episode of task runs: a worker, or nil for this
// process. A pool with a free slot that ran the task recently comes
// first (its caches are warm: a real task new to a pool costs seconds of
// builds); among equals, the one with the most free slots, this process
// winning ties. It returns nil when no worker has a free slot.
func (r *remoteState) pick(localFree int, task string) *workerRef {
	var best *workerRef
	bestFree, bestWarm := 0, false
	for _, w := range r.workers {
		free := w.slots - w.running
		if free <= 0 {
			continue
		}
		warm := w.tasks.contains(task)
		if best == nil || warm && !bestWarm || warm == bestWarm && (free > bestFree || free == bestFree && w.name < best.name) {
			best, bestFree, bestWarm = w, free, warm
		}
	}
	if best == nil || localFree <= 0 {
		return best
	}
	localWarm := r.localTasks.contains(task)
	if localWarm && !bestWarm || localWarm == bestWarm && localFree >= bestFree {
		return nil
	}
	return best
}
