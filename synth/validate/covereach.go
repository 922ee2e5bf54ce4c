package validate

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/frognano/frog/env"
)

// testCover is one test's run under coverEach.
type testCover struct {
	// Ran says the test binary ran and returned: Exit is its status.
	Ran  bool
	Exit int
	// Profile is the cover profile it wrote (nil when it died before
	// writing one).
	Profile []byte
}

// coverEach runs each of tests alone under the coverage test binary bin,
// one after another in one sandbox command (a command a test would cost
// about five times the test itself here: docs/episodes.md), each with its
// own cover profile. dir is the package's directory in sb and bin is
// relative to it; the profiles go to directory out (as sb's ReadFile names
// it; outFromDir is the same directory seen from dir) and are read back
// after. Each test has the binary's -test.timeout of timeout; the command
// as a whole, a second a test more. A test whose status the command did not
// report (the command timed out before it) is returned with Ran false.
func coverEach(ctx context.Context, sb env.Sandbox, dir, bin, out, outFromDir string, tests []string, timeout time.Duration) ([]testCover, error) {
	res := make([]testCover, len(tests))
	if len(tests) == 0 {
		return res, nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "cd %s || exit 97\nrm -rf %s && mkdir -p %s || exit 97\n", shellQuote(dir), shellQuote(outFromDir), shellQuote(outFromDir))
	for i, t := range tests {
		fmt.Fprintf(&b, "%s -test.run %s -test.count=1 -test.timeout %s -test.coverprofile %s >/dev/null 2>&1\necho \"frog-cover %d $?\"\n",
			shellQuote(bin), shellQuote(runRegexp([]string{t})), timeout, shellQuote(path.Join(outFromDir, strconv.Itoa(i)+".out")), i)
	}
	r, err := execIn(ctx, sb, time.Duration(len(tests))*(timeout+time.Second), "sh", "-c", b.String())
	if err != nil {
		return nil, err
	}
	if r.exit == 97 {
		return nil, fmt.Errorf("coverage runs: %s", firstLines(string(r.out), 4))
	}
	sc := bufio.NewScanner(bytes.NewReader(r.out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 || f[0] != "frog-cover" {
			continue
		}
		i, err1 := strconv.Atoi(f[1])
		code, err2 := strconv.Atoi(f[2])
		if err1 != nil || err2 != nil || i < 0 || i >= len(tests) {
			continue
		}
		res[i].Ran, res[i].Exit = true, code
	}
	for i := range res {
		if !res[i].Ran {
			continue
		}
		data, err := sb.ReadFile(ctx, path.Join(out, strconv.Itoa(i)+".out"))
		switch {
		case err == nil:
			res[i].Profile = data
		case errors.Is(err, env.ErrInfra) || ctx.Err() != nil:
			return nil, err
		}
	}
	return res, nil
}
