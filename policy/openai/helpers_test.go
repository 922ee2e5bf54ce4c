package openai_test

import (
	"os"
	"testing"
)

// scratch holds what the tests lay out (sandboxes, workspaces), removed at
// the end.
var scratch string

func TestMain(m *testing.M) {
	var err error
	if scratch, err = os.MkdirTemp("", "frog-openai-test-"); err != nil {
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(scratch)
	os.Exit(code)
}
