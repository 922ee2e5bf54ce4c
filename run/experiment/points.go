package experiment

import (
	"sync"

	"github.com/frognano/frog/policy/neural"
)

// points keeps a run's policy at each point of its curve: the policy the
// learner applied when what the run spent (test executions, or episodes
// in a replay) first passed budget·i/n. The learner's update hook calls
// reach; the run calls rest once it has ended. It is safe for concurrent
// use.
type points struct {
	mu    sync.Mutex
	xs    []int64
	snaps []*neural.Policy
	last  *neural.Policy
	next  int
	snap  func() *neural.Policy
}

// newPoints makes the n+1 points of budget; the first holds snap() now.
// snap returns an immutable snapshot of the learner's current policy.
func newPoints(budget int64, n int, snap func() *neural.Policy) *points {
	p := &points{xs: make([]int64, n+1), snaps: make([]*neural.Policy, n+1), next: 1, snap: snap}
	for i := range p.xs {
		p.xs[i] = budget * int64(i) / int64(n)
	}
	p.snaps[0] = snap()
	p.last = p.snaps[0]
	return p
}

// reach records, at an update made when spent had been spent, every point
// passed since the last update with the policy applied until then, calling
// passed with each one's index; then it takes the update's policy.
func (p *points) reach(spent int64, passed func(i int)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.next < len(p.xs) && p.xs[p.next] < spent {
		p.snaps[p.next] = p.last
		p.next++
		if passed != nil {
			passed(p.next - 1)
		}
	}
	p.last = p.snap()
}

// rest gives the points the run did not reach the learner's final policy,
// and returns the points and their policies.
func (p *points) rest() ([]int64, []*neural.Policy) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for ; p.next < len(p.xs); p.next++ {
		p.snaps[p.next] = p.snap()
	}
	return p.xs, p.snaps
}
