package cli

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
)

// Sizes that would overflow a count, or that no machine could run, are
// refused before anything starts: exit 2, the flag named as the user
// typed it. (Once --concurrency 9223372036854775807 hung frog for good,
// --hidden1 9223372036854775807 panicked, eval --tries near MaxInt64
// overflowed into an error naming --max-steps, and train --tries 0 or
// --checkpoint-every -1 were taken.)
func TestAbsurdSizesAreUsageErrors(t *testing.T) {
	const huge = "9223372036854775807"
	llm := []string{"--base-url", "http://127.0.0.1:9/v1", "--model", "m"}
	for _, tc := range []struct {
		args []string
		flag string
	}{
		{[]string{"sim", "--concurrency", huge}, "--concurrency"},
		{[]string{"sim", "--workers", huge}, "--concurrency"},
		{[]string{"sim", "--group-size", huge}, "--group-size"},
		{[]string{"sim", "--max-steps", "-1"}, "--max-steps"},
		{[]string{"sim", "--max-staleness", huge}, "--max-staleness"},
		{[]string{"bench", "--concurrency", huge}, "--concurrency"},
		{[]string{"bench", "--live", "1000," + huge}, "--live"},
		{[]string{"bench", "llm", "--concurrency", huge}, "--concurrency"},
		{[]string{"bench", "tries", "--tasks", "t.jsonl", "--concurrency", huge}, "--concurrency"},
		{[]string{"train", "--concurrency", huge}, "--concurrency"},
		{[]string{"train", "--hidden1", huge}, "--hidden1"},
		{[]string{"train", "--hidden2", huge}, "--hidden2"},
		{[]string{"train", "--tries", "0"}, "--tries"},
		{[]string{"train", "--tries", huge}, "--tries"},
		{[]string{"train", "--checkpoint-every", "0"}, "--checkpoint-every"},
		{[]string{"train", "--checkpoint-every", "-1"}, "--checkpoint-every"},
		{append([]string{"train", "--policy", "openai", "--concurrency", huge}, llm...), "--concurrency"},
		{append([]string{"train", "--policy", "openai", "--max-turns", huge}, llm...), "--max-turns"},
		{[]string{"eval", "--tasks", "t.jsonl", "--tries", huge}, "--tries"},
		{[]string{"eval", "--tasks", "t.jsonl", "--samples", "9223372036854775800"}, "--samples"},
		{[]string{"eval", "--tasks", "t.jsonl", "--max-steps", "-1"}, "--max-steps"},
		{[]string{"eval", "--tasks", "t.jsonl", "--concurrency", huge}, "--concurrency"},
		{append([]string{"rollout", "--tasks", "t.jsonl", "--out", "o", "--concurrency", huge}, llm...), "--concurrency"},
		{append([]string{"rollout", "--tasks", "t.jsonl", "--out", "o", "--group-size", huge}, llm...), "--group-size"},
		{append([]string{"rollout", "--tasks", "t.jsonl", "--out", "o", "--context-budget", huge}, llm...), "--context-budget"},
		{[]string{"synth", "--concurrency", "0"}, "--concurrency"},
		{[]string{"synth", "--concurrency", huge}, "--concurrency"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out, errb bytes.Buffer
			err := Run(context.Background(), append(tc.args, "--log-level", "disabled"), &out, &errb)
			var u *UsageError
			if !errors.As(err, &u) || ExitCode(err) != ExitUsage {
				t.Fatalf("err %v (exit %d); want a usage error (exit 2)", err, ExitCode(err))
			}
			if !strings.HasPrefix(err.Error(), tc.flag+" ") {
				t.Errorf("err %q; want it to start with %s", err, tc.flag)
			}
		})
	}
}
