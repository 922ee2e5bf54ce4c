package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"testing"

	"github.com/frognano/frog/actors"
)

// evalOf is an evaluation whose episodes first solved their tasks t0, t1, …
// at ranks (0: not solved), all of family "stmt".
func evalOf(name string, ranks ...int) actors.EvalReport {
	e := actors.EvalReport{Policy: name, Episodes: len(ranks)}
	solved := 0
	for i, r := range ranks {
		e.FirstSolves = append(e.FirstSolves, actors.FirstSolve{Task: fmt.Sprint("t", i), Rank: r})
		if r > 0 {
			solved++
		}
	}
	e.Solved = actors.NewRate(solved, len(ranks))
	for _, m := range actors.DefaultMarks {
		k := 0
		for _, r := range ranks {
			if r > 0 && r <= m {
				k++
			}
		}
		e.AtTries = append(e.AtTries, actors.RateAt{Tries: m, Rate: actors.NewRate(k, len(ranks))})
	}
	e.MRR = actors.NewMRR(ranks)
	e.ByFamily = []actors.RateOf{{Key: "stmt", Rate: e.Solved, AtTries: e.AtTries, MRR: e.MRR}}
	return e
}

// TestEvalPrintsRanksAndPairs: the table shows the solve rate within 1, 3
// and 10 tries, the MRR, the family's row and, for two policies, their
// discordant pairs and McNemar's p; --json holds the same.
func TestEvalPrintsRanksAndPairs(t *testing.T) {
	a := evalOf("fl-greedy", 1, 1, 1, 1, 1, 1, 1, 1, 1, 2)
	b := evalOf("random", 0, 0, 0, 0, 0, 0, 0, 0, 0, 4)
	rep := evalReport{Policies: []actors.EvalReport{a, b}}
	rep.Pairs = comparePolicies(rep.Policies)
	var out bytes.Buffer
	if err := rep.print(&out, false); err != nil {
		t.Fatal(err)
	}
	for _, re := range []string{
		`(?m)^fl-greedy +solved +100\.0% +\[ *\d+\.\d, 100\.0\] +\(10/10\)$`,
		`(?m)^ +within 1 try +90\.0% .*\(9/10\)$`,
		`(?m)^ +within 3 tries +100\.0% .*\(10/10\)$`,
		`(?m)^ +within 10 tries +100\.0% `,
		`(?m)^ +MRR of the first fix +0\.950 \[0\.\d+, 1\.000\] +\(10 episodes; 95% percentile bootstrap\)$`,
		`(?m)^ +family stmt +100\.0% .*\(10/10\) +9/10 +10/10 +10/10 +0\.950 `,
		`(?m)^fl-greedy vs random +1 try +10 +0 +9 +0 +0\.003906 *$`,
		`(?m)^fl-greedy vs random +3 tries +10 +0 +10 +0 +0\.001953 *$`,
		`(?m)^fl-greedy vs random +10 tries +10 +1 +9 +0 +0\.003906 *$`,
	} {
		if !regexp.MustCompile(re).Match(out.Bytes()) {
			t.Errorf("no line matches %s in\n%s", re, out.String())
		}
	}
	out.Reset()
	if err := rep.print(&out, true); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Pairs []actors.Comparison `json:"pairs"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Pairs) != 1 || len(got.Pairs[0].AtTries) != 3 || got.Pairs[0].AtTries[0].AOnly != 9 {
		t.Errorf("--json pairs %+v; want fl-greedy vs random at 1, 3, 10 tries, 9 discordant at 1", got.Pairs)
	}
}

// TestEvalPrintsAnInterruptedEvaluationAsOne: a policy or ceiling cut
// short is printed with how many of its episodes were scored.
func TestEvalPrintsAnInterruptedEvaluationAsOne(t *testing.T) {
	c := evalOf("ceiling", 1, 0, 3)
	c.Interrupted = true
	c.Outcomes = actors.EvalCounts{Completed: 3, Cancelled: 2, Unplayed: 235}
	var out bytes.Buffer
	if err := (evalReport{Ceiling: &c}).print(&out, false); err != nil {
		t.Fatal(err)
	}
	re := `(?m)^ +interrupted +3 of 240 episodes scored \(2 cancelled, 235 never started\): every figure is of those alone$`
	if !regexp.MustCompile(re).Match(out.Bytes()) {
		t.Errorf("no line matches %s in\n%s", re, out.String())
	}
}
