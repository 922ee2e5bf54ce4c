package envtest

import (
	"os"
	"testing"
)

// Unavailable ends a test that lacks what it needs (a Docker daemon, the
// docker command): under CI=true it fails, since backend tests never skip in
// CI; elsewhere it skips, saying why.
func Unavailable(t testing.TB, what string, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true and %s: %v", what, err)
	}
	t.Skipf("skipping: %s (%v)", what, err)
}
