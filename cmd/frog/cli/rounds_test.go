package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/frognano/frog/curriculum"
)

// frog sim --curriculum rounds runs the rounds curriculum end to end: the
// calibration episodes are episodes of the run's budget (calibration and
// training together are every completed episode), rounds follow one
// another after --round-updates updates, and every round decided each of
// its candidates once.
func TestSimRounds(t *testing.T) {
	out := runFrog(t, "sim", "--curriculum", "rounds", "--tasks", "sim-bins", "--episodes", "2000", "--concurrency", "1",
		"--seed", "3", "--round-size", "8", "--round-updates", "2", "--group-size", "4", "--groups-per-update", "2",
		"--round-band", "0.2,0.8", "--json", "--no-run-dir", "--log-level", "warn")
	var r struct {
		Episodes struct {
			Admitted  int64 `json:"admitted"`
			Completed int64 `json:"completed"`
			Accounted bool  `json:"accounted"`
		} `json:"episodes"`
		Curriculum curriculum.CurriculumStats `json:"curriculum"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	e, st := r.Episodes, r.Curriculum.Rounds
	if st == nil {
		t.Fatalf("no rounds in the summary's curriculum:\n%s", out)
	}
	if e.Admitted != 2000 || e.Completed != 2000 || !e.Accounted {
		t.Errorf("episodes %+v: want 2000 admitted and completed, accounted", e)
	}
	if st.CalibrationEpisodes == 0 || st.CalibrationEpisodes+st.TrainingEpisodes != e.Completed {
		t.Errorf("%d calibration and %d training episodes: want some calibration, and %d in all", st.CalibrationEpisodes, st.TrainingEpisodes, e.Completed)
	}
	if st.Round < 3 || len(st.PerRound) != st.Round {
		t.Fatalf("round %d with %d reported: want several rounds, each reported", st.Round, len(st.PerRound))
	}
	var calib, admitted int64
	for _, rep := range st.PerRound[:len(st.PerRound)-1] {
		calib += rep.CalibrationEpisodes
		admitted += rep.Admitted
		if rep.Admitted+rep.Refined+rep.Dropped != rep.Candidates || rep.TooEasy+rep.TooHard != rep.Refined+rep.Dropped {
			t.Errorf("round %+v: candidates not each decided once", rep)
		}
		if rep.Admitted > 0 && rep.Updates != 2 {
			t.Errorf("round %+v: want 2 updates of training on its admitted tasks", rep)
		}
		if rep.Admitted == 0 && rep.Updates != 0 {
			t.Errorf("round %+v: nothing admitted, yet trained on", rep)
		}
	}
	if admitted == 0 {
		t.Errorf("no round admitted a task")
	}
	if calib > st.CalibrationEpisodes {
		t.Errorf("rounds count %d calibration episodes, more than the %d in all", calib, st.CalibrationEpisodes)
	}
}

// The rounds flags are checked, each error naming its flag.
func TestRoundsUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--round-size", "0"}, "--round-size 0"},
		{[]string{"--round-calibration", "6", "--group-size", "4"}, "--round-calibration 6: want a multiple of --group-size 4"},
		{[]string{"--round-band", "0.8,0.2"}, `--round-band "0.8,0.2": want 0 <= lo <= hi <= 1`},
		{[]string{"--round-band", "half"}, `--round-band "half": want two pass rates`},
		{[]string{"--round-last-band", "0,x"}, `--round-last-band "0,x"`},
		{[]string{"--round-last", "-1"}, "--round-last -1"},
		{[]string{"--round-updates", "0"}, "--round-updates 0"},
	} {
		var out, errb bytes.Buffer
		args := append([]string{"sim", "--curriculum", "rounds", "--no-run-dir", "--episodes", "8"}, tc.args...)
		err := Run(context.Background(), args, &out, &errb)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("frog %s: %v; want an error with %q", strings.Join(args, " "), err, tc.want)
		}
	}
}
