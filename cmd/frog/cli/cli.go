package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"runtime/debug"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/frognano/frog/run"
)

// Version is frog's version, written into every run directory.
var Version = "0.1.0-dev"

// Exit codes.
const (
	ExitOK          = 0
	ExitFailure     = 1
	ExitUsage       = 2
	ExitInterrupted = 130
)

// UsageError is a bad flag, argument or value: exit code 2. It is
// run.UsageError, which the packages under run return too.
type UsageError = run.UsageError

func usagef(format string, args ...any) error { return run.Usagef(format, args...) }

// inRange is a usage error naming flag unless lo <= v <= hi. Sizes have an
// upper bound too: a count near math.MaxInt64 overflows what is computed
// from it, and no machine runs that much at once.
func inRange(flag string, v, lo, hi int) error {
	if v < lo || v > hi {
		return usagef("%s %d: want %d to %d", flag, v, lo, hi)
	}
	return nil
}

// firstErr is the first error of errs that is not nil.
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// ErrInterrupted is returned when a signal stopped the job; what it had done
// was recorded and reported first. It is run.ErrInterrupted.
var ErrInterrupted = run.ErrInterrupted

// interrupted is ErrInterrupted with what the signal cut short, for a job
// stopped before it had anything to report: Main says it.
func interrupted(format string, args ...any) error { return run.Interrupted(format, args...) }

// ExitCode maps an error returned by Run to the process's exit code.
func ExitCode(err error) int {
	var u *UsageError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &u):
		return ExitUsage
	case errors.Is(err, ErrInterrupted):
		return ExitInterrupted
	}
	return ExitFailure
}

// Main runs frog with the process's arguments and streams. The first
// SIGINT or SIGTERM shuts the job down gracefully: what runs is cancelled
// and recorded, the summary written, exit code 130. A second one ends frog
// at once, exit code 130, unless it comes within sameRequest of the first:
// that is one request sent twice (timeout(1) signals the command and then
// its process group; docs/actors.md, "Shutdown").
func Main() int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go watchSignals(sigs, cancel, time.Now, func(s os.Signal) {
		fmt.Fprintf(os.Stderr, "frog: %v again: exiting now\n", s)
		os.Exit(ExitInterrupted)
	})
	err := Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	signal.Stop(sigs)
	close(sigs) // no signal is sent on it after Stop
	// A bare ErrInterrupted follows a report that says so already.
	if err != nil && err.Error() != ErrInterrupted.Error() {
		fmt.Fprintf(os.Stderr, "frog: %v\n", err)
		var u *UsageError
		if errors.As(err, &u) {
			fmt.Fprintln(os.Stderr, "Run 'frog --help' for usage.")
		}
	}
	return ExitCode(err)
}

// sameRequest is how soon after the first a signal is taken as the same
// request sent twice, not a second one.
const sameRequest = 250 * time.Millisecond

// watchSignals cancels the job at the first signal of sigs and calls exit
// at the next one that comes sameRequest or more after it. It returns when
// sigs is closed.
func watchSignals(sigs <-chan os.Signal, cancel func(), now func() time.Time, exit func(os.Signal)) {
	if _, ok := <-sigs; !ok {
		return
	}
	first := now()
	cancel()
	for s := range sigs {
		if now().Sub(first) >= sameRequest {
			exit(s)
			return
		}
	}
}

// globals are the flags every command takes.
type globals struct {
	logFormat  string
	logLevel   string
	cpuProfile string
	memProfile string
	traceFile  string
	memLimit   string
	stdout     io.Writer
	stderr     io.Writer
	cpuFile    *os.File
	memFile    *os.File
	traceOut   *os.File
}

// logger builds the zerolog logger the flags ask for.
func (g *globals) logger() (zerolog.Logger, error) {
	lvl, err := zerolog.ParseLevel(g.logLevel)
	if err != nil || g.logLevel == "" {
		return zerolog.Nop(), usagef("--log-level %q: want trace, debug, info, warn, error or disabled", g.logLevel)
	}
	var w io.Writer
	switch g.logFormat {
	case "console":
		w = zerolog.ConsoleWriter{Out: g.stderr, TimeFormat: time.TimeOnly, NoColor: !isTerminal(g.stderr)}
	case "json":
		w = g.stderr
	default:
		return zerolog.Nop(), usagef("--log-format %q: want console or json", g.logFormat)
	}
	return zerolog.New(w).Level(lvl).With().Timestamp().Logger(), nil
}

// Run runs frog with args (without the program name), writing results to
// stdout and logs and progress to stderr.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	g := &globals{stdout: stdout, stderr: stderr}
	root := &cobra.Command{
		Use:   "frog",
		Short: "Train and study coding agents with RL on self-synthesized bug-fix tasks",
		Long: `frog trains coding agents with reinforcement learning on bug-fix tasks that it
synthesizes itself, online, at the frontier of what the current policy can learn.
It is an actor system: one actor per episode, each owning one sandbox, a policy
server that batches inference, a learner (GRPO), a curriculum and a synthesizer.

Results go to standard output (a table, or one JSON object with --json); logs
and the progress bar go to standard error.

Exit codes: 0 success, 1 failure, 2 bad usage, 130 interrupted (after a
graceful shutdown that records every episode; a second SIGINT or SIGTERM ends
frog at once).`,
		Version:       version(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetContext(ctx)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &UsageError{Err: fmt.Errorf("%s: %w", c.CommandPath(), err)}
	})
	pf := root.PersistentFlags()
	pf.StringVar(&g.logFormat, "log-format", "console", "log format on stderr: console or json")
	pf.StringVar(&g.logLevel, "log-level", "info", "log level: trace, debug, info, warn, error or disabled")
	pf.StringVar(&g.cpuProfile, "cpuprofile", "", "write a CPU profile (pprof) of the command to this file")
	pf.StringVar(&g.memProfile, "memprofile", "", "write a heap profile (pprof) at the end of the command to this file")
	pf.StringVar(&g.traceFile, "trace", "", "write an execution trace of the command to this file (go tool trace; -pprof=sync or sched shows where it waits)")
	pf.StringVar(&g.memLimit, "memory-limit", "", "soft limit of the Go heap, e.g. 950MiB or 8GiB (as GOMEMLIMIT): the collector works harder near it")
	root.PersistentPreRunE = func(*cobra.Command, []string) error {
		if g.memLimit != "" {
			n, err := parseBytes(g.memLimit)
			if err != nil {
				return usagef("--memory-limit %q: %v", g.memLimit, err)
			}
			debug.SetMemoryLimit(n)
		}
		return g.startProfiles()
	}
	root.AddCommand(newSimCmd(g), newTrainCmd(g), newEvalCmd(g), newRolloutCmd(g), newReportCmd(g), newExperimentCmd(g), newBenchCmd(g), newSynthCmd(g), newImageCmd(g), newGCCmd(g), newDeviceCmd(g), newVersionCmd(g), newTabulateCmd(g), newWorkerCmd(g))
	for _, c := range root.Commands() {
		c.Flags().SetNormalizeFunc(normalize)
	}
	err := root.Execute()
	if err != nil && isCobraUsage(err) {
		return &UsageError{Err: err}
	}
	// Profiles are written whatever the command's end: a failed or
	// interrupted run is often the one worth profiling.
	if perr := g.stopProfiles(); perr != nil && err == nil {
		err = perr
	}
	return err
}

// normalize accepts --workers as another name of --concurrency.
func normalize(_ *pflag.FlagSet, name string) pflag.NormalizedName {
	if name == "workers" {
		name = "concurrency"
	}
	return pflag.NormalizedName(name)
}

// isCobraUsage recognizes cobra's own argument errors (unknown command,
// wrong number of arguments), which carry no type of their own.
func isCobraUsage(err error) bool {
	var u *UsageError
	if errors.As(err, &u) {
		return false
	}
	s := err.Error()
	return strings.HasPrefix(s, "unknown command") || strings.Contains(s, "arg(s)") ||
		strings.HasPrefix(s, "unknown flag") || strings.HasPrefix(s, "unknown shorthand flag")
}

// startProfiles opens both profiles' files before the command runs, so
// that a path that cannot be written is a usage error now, not a surprise
// at the end of a long run.
func (g *globals) startProfiles() error {
	if g.memProfile != "" {
		f, err := os.Create(g.memProfile)
		if err != nil {
			return usagef("--memprofile: %v", err)
		}
		g.memFile = f
	}
	if g.traceFile != "" {
		f, err := os.Create(g.traceFile)
		if err != nil {
			return usagef("--trace: %v", err)
		}
		if err := trace.Start(f); err != nil {
			f.Close()
			return fmt.Errorf("--trace: %w", err)
		}
		g.traceOut = f
	}
	if g.cpuProfile == "" {
		return nil
	}
	f, err := os.Create(g.cpuProfile)
	if err != nil {
		return usagef("--cpuprofile: %v", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return fmt.Errorf("--cpuprofile: %w", err)
	}
	g.cpuFile = f
	return nil
}

func (g *globals) stopProfiles() error {
	var errs []error
	if g.traceOut != nil {
		trace.Stop()
		if err := g.traceOut.Close(); err != nil {
			errs = append(errs, fmt.Errorf("--trace: %w", err))
		}
		g.traceOut = nil
	}
	if g.cpuFile != nil {
		pprof.StopCPUProfile()
		if err := g.cpuFile.Close(); err != nil {
			errs = append(errs, fmt.Errorf("--cpuprofile: %w", err))
		}
		g.cpuFile = nil
	}
	if g.memFile != nil {
		if err := pprof.WriteHeapProfile(g.memFile); err != nil {
			errs = append(errs, fmt.Errorf("--memprofile: %w", err))
		}
		if err := g.memFile.Close(); err != nil {
			errs = append(errs, fmt.Errorf("--memprofile: %w", err))
		}
		g.memFile = nil
	}
	return errors.Join(errs...)
}

// parseBytes reads a size such as 950MiB, 1GiB, 512M or 1048576.
func parseBytes(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"B", 1}}
	mult := int64(1)
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSuffix(s, u.suffix), u.mult
			break
		}
	}
	n, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || n <= 0 || math.IsInf(n, 0) || n*float64(mult) > math.MaxInt64 {
		return 0, errors.New("want a positive size such as 950MiB or 8GiB")
	}
	return int64(n * float64(mult)), nil
}

func newVersionCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print frog's version",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(g.stdout, "frog", version())
			return err
		},
	}
}

func version() string {
	v := Version
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				v += "+" + s.Value[:12]
			}
		}
	}
	return v
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}
