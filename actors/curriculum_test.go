package actors

import (
	"context"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/frognano/frog/curriculum"
	"github.com/frognano/frog/env"
	envsim "github.com/frognano/frog/env/sim"
	policysim "github.com/frognano/frog/policy/sim"
	"github.com/frognano/frog/synth"
	synthsim "github.com/frognano/frog/synth/sim"
)

// binnedSource tells the simulated agent's oracle the true difficulty of
// every task a binned source makes, asked for a difficulty or a bin.
type binnedSource struct {
	src    *synthsim.Binned
	oracle *policysim.Oracle
}

func (s binnedSource) tell(tasks []env.Task, err error) ([]env.Task, error) {
	for i := range tasks {
		f := policysim.SimFix(&tasks[i])
		f.Difficulty, _ = s.src.Truth(tasks[i].ID)
		s.oracle.Add(tasks[i].ID, f)
	}
	return tasks, err
}

func (s binnedSource) Tasks(ctx context.Context, n int, d float64) ([]env.Task, error) {
	return s.tell(s.src.Tasks(ctx, n, d))
}

func (s binnedSource) TasksFor(ctx context.Context, n int, k synth.Knobs) ([]env.Task, error) {
	return s.tell(s.src.TasksFor(ctx, n, k))
}

// binnedRun runs the actors on the binned simulated source under strategy
// and returns the summary, the final skill and the curriculum's records.
func binnedRun(t *testing.T, strategy string, episodes int64, seed uint64) (Summary, float64, []CurriculumRecord) {
	t.Helper()
	cfg := envsim.DefaultConfig()
	cfg.Seed = seed
	prov, err := envsim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rc := curriculum.DefaultReplayConfig()
	rc.Strategy, rc.Seed = strategy, seed
	cur, err := curriculum.NewReplay(rc)
	if err != nil {
		t.Fatal(err)
	}
	oracle := policysim.NewOracle()
	l := policysim.NewLearner(0, 0.004, seed, oracle)
	src := synthsim.NewBinned(seed, 0.5, 0.5)
	var mu sync.Mutex
	var recs []CurriculumRecord
	deps := Deps{Provider: prov, Learner: l, Source: binnedSource{src, oracle}, Curriculum: cur,
		Log: zerolog.Nop(), OnCurriculum: func(r CurriculumRecord) {
			mu.Lock()
			recs = append(recs, r)
			mu.Unlock()
		}}
	sum, err := Run(context.Background(), testConfig(episodes, 64), deps)
	if err != nil {
		t.Fatal(err)
	}
	checkAccounting(t, sum, episodes)
	mu.Lock()
	defer mu.Unlock()
	return sum, l.Skill(), recs
}

// TestFrontierThroughTheActors runs the frontier curriculum through
// actors.Run on the binned simulation: tasks are replayed, hopeless ones
// retired, synthesis requests steered and answered by the steerable source,
// its yield counted per bin, the state recorded at each version; and the
// simulated agent learns faster than under uniform replay of the same
// synthesizer's mix.
func TestFrontierThroughTheActors(t *testing.T) {
	sum, skill, recs := binnedRun(t, curriculum.StrategyFrontier, 16000, 11)
	f := sum.Curriculum.Frontier
	if f == nil {
		t.Fatal("no frontier stats in the summary")
	}
	t.Logf("frontier: skill %.3f, replayed %d fresh %d, retired %d (total %d, returned %d), steered %d/%d, fresh pass rate %.3f, zero-signal %.3f",
		skill, f.Replayed, f.Fresh, f.Retired, f.RetiredTotal, f.Returned, f.Steered, f.Requests, f.FreshPassRate, sum.Learner.ZeroSignalShare)
	if f.Replayed == 0 || f.Fresh == 0 || f.RetiredTotal == 0 || f.Steered == 0 {
		t.Errorf("frontier stats %+v: want replays, fresh tasks, retirements and steered requests", f)
	}
	if sum.Synth.Steered == 0 || len(sum.Synth.Yield) < 2 {
		t.Errorf("synth stats %+v: want steered requests and yield in several bins", sum.Synth)
	}
	if f.SteeredTasks == 0 || f.SteeredMatched == 0 || f.SteeredMatched > f.SteeredTasks {
		t.Errorf("frontier stats: %d of %d tasks of steered requests in the bin asked for", f.SteeredMatched, f.SteeredTasks)
	}
	if len(recs) == 0 || recs[len(recs)-1].Frontier == nil || recs[0].Kind != "curriculum" {
		t.Fatalf("curriculum records: %d, want one per version", len(recs))
	}
	if recs[len(recs)-1].Version < sum.Learner.Version-1 {
		t.Errorf("last curriculum record at version %d, learner at %d", recs[len(recs)-1].Version, sum.Learner.Version)
	}
	usum, uskill, _ := binnedRun(t, curriculum.StrategyUniform, 16000, 11)
	t.Logf("uniform: skill %.3f, zero-signal %.3f", uskill, usum.Learner.ZeroSignalShare)
	if !(skill > 1.5*uskill) {
		t.Errorf("skill after frontier %.3f, after uniform %.3f: want frontier well ahead", skill, uskill)
	}
	if !(sum.Learner.ZeroSignalShare < usum.Learner.ZeroSignalShare) {
		t.Errorf("zero-signal share frontier %.3f, uniform %.3f", sum.Learner.ZeroSignalShare, usum.Learner.ZeroSignalShare)
	}
}

// TestRefillZeroVariance drops every group whose rewards are all equal and
// plans another in its place: every update's groups have signal, the
// dropped share is counted, and the run neither stalls nor loses an
// episode, even on tasks most of which nobody can solve.
func TestRefillZeroVariance(t *testing.T) {
	for _, refill := range []bool{false, true} {
		deps, _, _ := simDeps(t, simSetup{seed: 4, curriculum: &curriculum.Fixed{D: 2}})
		var mu sync.Mutex
		var zeroInUpdates int
		var judged GroupsJudged // summed over the updates' records
		deps.OnUpdate = func(r UpdateRecord) {
			mu.Lock()
			zeroInUpdates += r.ZeroSignalGroups
			judged.Groups += r.Judged.Groups
			judged.ZeroSignal += r.Judged.ZeroSignal
			judged.Refilled += r.Judged.Refilled
			mu.Unlock()
		}
		cfg := testConfig(4000, 64)
		cfg.RefillZeroVariance = refill
		sum, err := runWithin(t, 3*time.Minute, context.Background(), cfg, deps)
		if err != nil {
			t.Fatal(err)
		}
		checkAccounting(t, sum, 4000)
		l := sum.Learner
		t.Logf("refill %v: updates %d, groups %d, zero-signal %d (%.3f), refilled %d, zero-signal groups in updates %d",
			refill, l.Updates, l.Groups, l.ZeroSignalGroups, l.ZeroSignalShare, l.RefilledGroups, zeroInUpdates)
		if l.ZeroSignalShare < 0.2 {
			t.Fatalf("refill %v: zero-signal share %.3f: the test needs many such groups", refill, l.ZeroSignalShare)
		}
		switch {
		// A group can also lose its signal when its stale members are
		// dropped at the update, too late to refill: each such group
		// took at least one stale drop.
		case refill && (zeroInUpdates != 0 || l.RefilledGroups < l.ZeroSignalGroups-l.StaleDropped):
			t.Errorf("refill: %d zero-signal groups reached updates, %d of %d refilled (%d stale trajectories dropped)", zeroInUpdates, l.RefilledGroups, l.ZeroSignalGroups, l.StaleDropped)
		case !refill && (zeroInUpdates == 0 || l.RefilledGroups != 0):
			t.Errorf("no refill: %d zero-signal groups in updates, %d refilled", zeroInUpdates, l.RefilledGroups)
		}
		// The updates' records count the groups judged between them, the
		// dropped ones included: what metrics.jsonl's share is made of.
		// Only groups judged after the last update are left out.
		share := float64(judged.ZeroSignal) / float64(judged.Groups)
		if judged.Groups > l.Groups || judged.Groups < l.Groups*9/10 || judged.Refilled > l.RefilledGroups ||
			math.Abs(share-l.ZeroSignalShare) > 0.05 || refill != (judged.Refilled > 0) {
			t.Errorf("refill %v: the updates' records judged %+v (share %.3f); the run %d groups, %d zero-signal (%.3f), %d refilled",
				refill, judged, share, l.Groups, l.ZeroSignalGroups, l.ZeroSignalShare, l.RefilledGroups)
		}
	}
}
