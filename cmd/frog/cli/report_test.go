package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
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
