package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gonum.org/v1/plot/plotter"

	"github.com/frognano/frog/actors"
	"github.com/frognano/frog/policy"
	"github.com/frognano/frog/run"
)

// TestReportDrawsEachUpdateOnce: metrics of a run resumed by an older
// frog hold the updates after its checkpoint twice; the report draws the
// later copy, once.
func TestReportDrawsEachUpdateOnce(t *testing.T) {
	run := t.TempDir()
	var b bytes.Buffer
	for i, u := range []int{1, 2, 3, 4, 5, 4, 5, 6} {
		fmt.Fprintf(&b, `{"kind":"update","update":%d,"train_pass_rate":%v}`+"\n", u, float64(i)/10)
	}
	fmt.Fprintf(&b, `{"kind":"eval","at_update":4,"solved":{"rate":0.1}}`+"\n"+`{"kind":"eval","at_update":4,"solved":{"rate":0.2}}`+"\n")
	os.WriteFile(filepath.Join(run, "metrics.jsonl"), b.Bytes(), 0o644)
	s, err := readRun(run)
	if err != nil {
		t.Fatal(err)
	}
	var got [][2]float64
	for _, p := range s.Train {
		got = append(got, [2]float64{p.X, p.Y})
	}
	want := [][2]float64{{1, 0}, {2, 0.1}, {3, 0.2}, {4, 0.5}, {5, 0.6}, {6, 0.7}}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("training curve (-got +want):\n%s", diff)
	}
	if len(s.Heldout) != 1 || s.Heldout[0].Solved.Rate != 0.2 {
		t.Errorf("held-out evaluations %+v; want the later one at update 4", s.Heldout)
	}
}

// TestReportShowsDroppedGroupsAndRanks: the signal panel draws the share
// of the groups judged between updates that had no signal (dropped and
// refilled ones included, where the batch's own share is 0), and the
// summary prints within 1, 3 and 10 tries, the MRR and the last
// evaluation per family, for the trained policy and the baselines, and
// the last evaluation against the first and each baseline, task by task.
func TestReportShowsDroppedGroupsAndRanks(t *testing.T) {
	dir := t.TempDir()
	var b bytes.Buffer
	for u := int64(1); u <= 2; u++ {
		e := run.UpdateEvent(actors.UpdateRecord{Update: u, UpdateStats: policy.UpdateStats{Groups: 4},
			Judged: actors.GroupsJudged{Groups: 6, ZeroSignal: 2, Refilled: 2}})
		line, _ := json.Marshal(e)
		b.Write(append(line, '\n'))
	}
	ev := func(kind, name string, update int64, ranks ...int) {
		r := evalOf(name, ranks...)
		line, _ := json.Marshal(run.Event{Kind: kind, Policy: name, AtUpdate: update, Solved: &r.Solved, AtTries: r.AtTries, MRR: &r.MRR, ByFamily: r.ByFamily,
			FirstSolves: r.FirstSolves})
		b.Write(append(line, '\n'))
	}
	ev("eval", "neural", 0, 0, 0, 3, 1)
	ev("eval", "neural", 2, 1, 1, 2, 0)
	ev("baseline", "fl-greedy", 0, 4, 0, 0, 1)
	os.WriteFile(filepath.Join(dir, "metrics.jsonl"), b.Bytes(), 0o644)
	s, err := readRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(s.ZeroShare, plotter.XYs{{X: 1, Y: 1.0 / 3}, {X: 2, Y: 1.0 / 3}}); diff != "" {
		t.Errorf("zero-signal panel (-got +want):\n%s", diff)
	}
	if len(s.Refilled) != 2 || s.Judged != (actors.GroupsJudged{Groups: 12, ZeroSignal: 4, Refilled: 4}) {
		t.Errorf("refilled %v, judged %+v; want 2 points, 12 groups of which 4 dropped", s.Refilled, s.Judged)
	}
	if _, err := s.plots(); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := s.print(&out); err != nil {
		t.Fatal(err)
	}
	for _, re := range []string{
		`(?m)^groups without signal +33\.3% of 12 judged +33\.3% dropped and refilled`,
		`(?m)^ +held-out, update 0 +update 2 +baseline fl-greedy *$`,
		`(?m)^solved +50\.0% \[[0-9.]+, [0-9.]+\] \(2/4\) +75\.0% .*\(3/4\) +50\.0% .*\(2/4\) *$`,
		`(?m)^within 1 try +25\.0% .*\(1/4\) +50\.0% .*\(2/4\) +25\.0% .*\(1/4\) *$`,
		`(?m)^within 3 tries +50\.0% .*\(2/4\) +75\.0% .*\(3/4\) +25\.0% .*\(1/4\) *$`,
		`(?m)^within 10 tries +50\.0% `,
		`(?m)^MRR of the first fix +0\.333 \[[0-9.]+, [0-9.]+\] +0\.625 \[[0-9.]+, [0-9.]+\] +0\.312 `,
		`(?m)^by family, update 2 +solved +within 1 +within 3 +within 10 +MRR`,
		`(?m)^ +stmt +3/4 +2/4 +3/4 +3/4 +0\.625 `,
		// Ranks 1,1,2,0 against 0,0,3,1: within 1 try only the last
		// solves tasks 1 and 2, only the first task 4; within 3 both
		// solve task 3. Against the baseline (4,0,0,1) within 3 tries the
		// last alone solves three tasks and the baseline alone one.
		`(?m)^update 2 vs update 0 +1 try +4 +0 +2 +1 +1 *$`,
		`(?m)^update 2 vs update 0 +3 tries +4 +1 +2 +1 +1 *$`,
		`(?m)^update 2 vs baseline fl-greedy +3 tries +4 +0 +3 +1 +0\.625 *$`,
	} {
		if !regexp.MustCompile(re).Match(out.Bytes()) {
			t.Errorf("no line matches %s in\n%s", re, out.String())
		}
	}
}
