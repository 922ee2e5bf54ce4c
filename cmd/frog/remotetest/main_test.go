package remotetest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/frognano/frog/cmd/frog/cli"
)

// TestMain makes this test binary frog when it runs as "frog" (the
// processes the tests start).
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"frog": func() { os.Exit(cli.Main()) },
	})
}

// tinyModule is the module real-task tests synthesize from.
const tinyModule = "../../../synth/validate/testdata/tiny"

// tinyAndCaches is the absolute path of tinyModule and the go command's
// caches as KEY=VALUE (GOCACHE, GOMODCACHE), so that a test's go commands
// share them.
func tinyAndCaches(tb testing.TB) (tiny string, caches []string) {
	tb.Helper()
	tiny, err := filepath.Abs(tinyModule)
	if err != nil {
		tb.Fatal(err)
	}
	goenv, err := exec.Command("go", "env", "GOCACHE", "GOMODCACHE").Output()
	if err != nil {
		tb.Fatalf("go env: %v", err)
	}
	dirs := strings.Fields(string(goenv))
	if len(dirs) != 2 {
		tb.Fatalf("go env: %q", goenv)
	}
	return tiny, []string{"GOCACHE=" + dirs[0], "GOMODCACHE=" + dirs[1]}
}
