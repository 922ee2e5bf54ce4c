package gotest

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseProfile(t *testing.T) {
	got, err := ParseProfile([]byte("mode: set\nexample.com/tiny/calc/calc.go:7.24,8.11 1 1\nexample.com/tiny/calc/calc.go:11.2,11.10 1 0\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Block{{File: "calc.go", StartLine: 7, StartCol: 24, EndLine: 8, EndCol: 11}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("parseProfile (-want +got):\n%s", diff)
	}
	if _, err := ParseProfile([]byte("mode: set\ngarbage\n")); err == nil {
		t.Error("parseProfile accepted garbage")
	}
}

func TestParseChatty(t *testing.T) {
	out := "\x16=== RUN   TestA\n\x16--- PASS: TestA (0.00s)\n\x16=== RUN   TestP\n\x16=== PAUSE TestP\n" +
		"\x16=== RUN   TestB\n    b_test.go:3: boom\n\x16--- FAIL: TestB (1.25s)\npanic: boom [recovered]\n"
	got := ParseChatty(Result{Exit: 2, Out: []byte(out)})
	if got.Elapsed["TestB"] != 1250*time.Millisecond {
		t.Errorf("TestB took %v, want 1.25s (its --- FAIL line)", got.Elapsed["TestB"])
	}
	if !got.Unfinished || !got.Parallel["TestP"] || got.Parallel["TestA"] {
		t.Errorf("unfinished %v, parallel %v: want true, only TestP", got.Unfinished, got.Parallel)
	}
	if !cmp.Equal(got.Passed, []string{"TestA"}) || !cmp.Equal(got.Failed, []string{"TestB"}) || got.Died {
		t.Errorf("a panic beside a paused test: passed %v, failed %v, died %v; want [TestA], [TestB], false", got.Passed, got.Failed, got.Died)
	}
	if !strings.Contains(got.Output["TestB"], "panic: boom") {
		t.Errorf("TestB's output lacks the panic: %q", got.Output["TestB"])
	}
	exit := ParseChatty(Result{Exit: 1, Out: []byte("\x16=== RUN   TestA\nexit\n")})
	if len(exit.Failed) != 0 || !exit.Died {
		t.Errorf("os.Exit in a test: failed %v, died %v; want none, true", exit.Failed, exit.Died)
	}
}
