package remotetest

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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

// ownProcessEnv names, in a test process started by ownProcess, the test
// it runs.
const ownProcessEnv = "FROG_REMOTETEST_OWN_PROCESS"

// ownProcess reports whether this is the test process of t's own; when it
// is not, it runs t again in one and fails t if that fails. A test that
// starts a protoactor-go remote in the test process calls it first:
// remotes in one process, even one after another, race on gRPC's global
// logger (protoactor-go's Start sets it while the goroutines of another
// remote read it).
func ownProcess(t *testing.T) bool {
	t.Helper()
	if os.Getenv(ownProcessEnv) == t.Name() {
		return true
	}
	args := []string{"-test.run=^" + regexp.QuoteMeta(t.Name()) + "$", "-test.count=1", "-test.v"}
	if testing.Short() {
		args = append(args, "-test.short")
	}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), ownProcessEnv+"="+t.Name())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s, in a process of its own: %v\n%s", t.Name(), err, out)
	}
	return false
}
