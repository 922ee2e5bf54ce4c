package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/frognano/frog/actors"
)

// benchWorkersOptions are the flags of `frog bench workers`.
type benchWorkersOptions struct {
	workers     []int
	episodes    int64
	concurrency int
	repeats     int
	seed        uint64
	timeout     time.Duration
	json        bool
	pin         bool
	cpus        []int // with pin: the CPUs this process may use
}

func newBenchWorkersCmd(g *globals) *cobra.Command {
	o := &benchWorkersOptions{}
	c := &cobra.Command{
		Use:   "workers",
		Short: "Benchmark simulated episodes in one process against rollout workers on loopback",
		Long: `bench workers plays the same simulated episodes ('frog sim --time-scale 0')
in one process and spread over N rollout worker processes ('frog sim --listen
--local-slots 0' and N 'frog worker --join' on 127.0.0.1), each setup once per
repeat, the setups alternated. Every process is this frog binary.

It reports, per setup, the median episodes/s (counted from the moment the
workers had joined) and its ratio to one process, the CPU time the trainer and
the workers spent an episode (user and system, from the processes' own
accounting), and the messages and bytes an episode on each link, each way.
The trainer's CPU an episode is what bounds how many workers one trainer can
feed: one trainer core takes about 1e6 / (that many microseconds) episodes/s.

All the processes share this machine's cores unless --pin is given: then the
trainer runs on the first CPU this process may use and nothing else does, and
the one process (the baseline) and the workers run on the others, split among
the workers (shared round the ranks when there are fewer CPUs than workers).
Pinned, '1 worker' against 'one process' is the wire's cost to the cores that
run episodes, as on a cluster where the trainer has a machine of its own;
unpinned on a small machine, it is the total CPU an episode costs.`,
		Example: `  frog bench workers
  frog bench workers --workers 1,2,3 --episodes 200000 --concurrency 2000 --repeats 3
  frog bench workers --workers 1 --pin
  frog bench workers --workers 4 --json`,
		Args: cobra.NoArgs,
		PreRunE: func(*cobra.Command, []string) error {
			if o.episodes < 1 {
				return usagef("--episodes %d: want >= 1", o.episodes)
			}
			if err := firstErr(inRange("--concurrency", o.concurrency, 1, actors.MaxConcurrency), inRange("--repeats", o.repeats, 1, 100)); err != nil {
				return err
			}
			if len(o.workers) == 0 {
				return usagef("--workers: name at least one number of workers")
			}
			for _, n := range o.workers {
				if err := inRange("--workers", n, 1, min(actors.MaxWorkers, o.concurrency)); err != nil {
					return err
				}
			}
			if o.timeout <= 0 {
				return usagef("--timeout %v: want > 0", o.timeout)
			}
			if o.pin {
				cpus, err := usableCPUs()
				if err != nil {
					return usagef("--pin: %v", err)
				}
				if len(cpus) < 2 {
					return usagef("--pin: this process may use %d CPU (%v); pinning needs 2, one for the trainer", len(cpus), cpus)
				}
				o.cpus = cpus
			}
			return nil
		},
		RunE: func(c *cobra.Command, _ []string) error { return runBenchWorkers(c.Context(), g, o) },
	}
	f := c.Flags()
	f.IntSliceVar(&o.workers, "workers", []int{1, 2, 3}, "numbers of worker processes to compare with one process")
	f.Int64Var(&o.episodes, "episodes", 200000, "episodes a run")
	f.IntVar(&o.concurrency, "concurrency", 2000, "episodes running at once, all processes together (each of N workers offers concurrency/N slots)")
	f.IntVar(&o.repeats, "repeats", 3, "runs of each setup (medians are reported)")
	f.Uint64Var(&o.seed, "seed", 1, "seed")
	f.DurationVar(&o.timeout, "timeout", 5*time.Minute, "the longest one run may take before it is stopped and reported as failed")
	f.BoolVar(&o.json, "json", false, "print the report as one JSON object")
	f.BoolVar(&o.pin, "pin", false, "give the trainer the first CPU to itself, and the one process and the workers the others (Linux)")
	return c
}

// workersSetup is one setup's figures in `frog bench workers`' report.
type workersSetup struct {
	// Workers is the number of worker processes; 0 is one process.
	Workers int `json:"workers"`
	// EpisodesPerSecond is the median of Runs; Ratio its ratio to one
	// process's median.
	EpisodesPerSecond float64   `json:"episodes_per_second"`
	Ratio             float64   `json:"ratio"`
	Runs              []float64 `json:"runs"`
	// TrainerCPUMicros and WorkersCPUMicros are the median CPU time an
	// episode of the trainer's process and of all workers' together.
	TrainerCPUMicros float64 `json:"trainer_cpu_us_per_episode"`
	WorkersCPUMicros float64 `json:"workers_cpu_us_per_episode"`
	TrainerPeakRSS   int64   `json:"trainer_peak_rss_bytes"`
	// Per episode on the links, all links together (last run).
	MsgsOut  float64 `json:"messages_out_per_episode"`
	MsgsIn   float64 `json:"messages_in_per_episode"`
	BytesOut float64 `json:"bytes_out_per_episode"`
	BytesIn  float64 `json:"bytes_in_per_episode"`
}

// workersRun is one run's raw figures.
type workersRun struct {
	rate, trainerCPU, workersCPU float64
	rss                          int64
	links                        []actors.WorkerStats
	episodes                     int64
}

func runBenchWorkers(ctx context.Context, g *globals, o *benchWorkersOptions) error {
	self, err := selfExecutable()
	if err != nil {
		return err
	}
	setups := append([]int{0}, o.workers...)
	runs := make(map[int][]workersRun)
	for rep := range o.repeats {
		for _, n := range setups {
			r, err := benchWorkersRun(ctx, self, o, n)
			if err != nil {
				return fmt.Errorf("run %d, %d workers: %w", rep+1, n, err)
			}
			runs[n] = append(runs[n], r)
			if !o.json {
				fmt.Fprintf(g.stderr, "run %d, %s: %.0f episodes/s\n", rep+1, setupName(n), r.rate)
			}
		}
	}
	var out []workersSetup
	for _, n := range setups {
		out = append(out, summarizeWorkersRuns(n, runs[n]))
	}
	for i := range out {
		if out[0].EpisodesPerSecond > 0 {
			out[i].Ratio = out[i].EpisodesPerSecond / out[0].EpisodesPerSecond
		}
	}
	if o.json {
		return json.NewEncoder(g.stdout).Encode(map[string]any{"episodes": o.episodes, "concurrency": o.concurrency,
			"repeats": o.repeats, "pinned_cpus": o.cpus, "setups": out})
	}
	return printWorkersBench(g.stdout, o, out)
}

func setupName(n int) string {
	switch n {
	case 0:
		return "one process"
	case 1:
		return "1 worker"
	}
	return strconv.Itoa(n) + " workers"
}

// selfExecutable is how to start this frog again: its name as it was
// started when that finds it (a test binary that acts as frog by that
// name), else the running binary.
func selfExecutable() (string, error) {
	if p, err := exec.LookPath(os.Args[0]); err == nil {
		return p, nil
	}
	return os.Executable()
}

// benchWorkersRun plays one run with n workers (0: one process).
func benchWorkersRun(ctx context.Context, self string, o *benchWorkersOptions, n int) (workersRun, error) {
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	args := []string{"sim", "--episodes", strconv.FormatInt(o.episodes, 10), "--concurrency", strconv.Itoa(o.concurrency),
		"--time-scale", "0", "--seed", strconv.FormatUint(o.seed, 10), "--json", "--no-run-dir", "--log-level", "warn"}
	var addr string
	if n > 0 {
		var err error
		if addr, err = loopbackAddr(); err != nil {
			return workersRun{}, err
		}
		args = append(args, "--listen", addr, "--local-slots", "0", "--await-workers", strconv.Itoa(n))
	}
	var stdout, stderr bytes.Buffer
	trainer := exec.CommandContext(ctx, self, args...)
	trainer.Stdout, trainer.Stderr = &stdout, &stderr
	trainerCPUs, workerCPUs := pinPlan(o.cpus, n)
	if err := startOn(trainer, trainerCPUs); err != nil {
		return workersRun{}, err
	}
	var workers []*exec.Cmd
	var werrs []*bytes.Buffer
	for i := range n {
		var e bytes.Buffer
		w := exec.CommandContext(ctx, self, "worker", "--join", addr, "--slots", strconv.Itoa(o.concurrency/n+min(1, o.concurrency%n)),
			"--listen", "127.0.0.1:0", "--name", "w"+strconv.Itoa(i+1), "--log-level", "warn")
		w.Stdout, w.Stderr = io.Discard, &e
		if err := startOn(w, workerCPUs[i]); err != nil {
			cancel()
			_ = trainer.Wait()
			return workersRun{}, err
		}
		workers, werrs = append(workers, w), append(werrs, &e)
	}
	terr := trainer.Wait()
	var r workersRun
	for i, w := range workers {
		if err := w.Wait(); err != nil && terr == nil {
			return workersRun{}, fmt.Errorf("worker %d: %w: %s", i+1, err, lastLines(werrs[i].String(), 5))
		}
		r.workersCPU += procCPUSeconds(w)
	}
	if terr != nil {
		return workersRun{}, fmt.Errorf("trainer: %w: %s", terr, lastLines(stderr.String(), 5))
	}
	var sum struct {
		Episodes       actors.EpisodeCounts `json:"episodes"`
		ElapsedSeconds float64              `json:"elapsed_seconds"`
		PeakRSS        int64                `json:"peak_rss_bytes"`
		Scheduler      struct {
			Remote *actors.RemoteStats `json:"remote"`
		} `json:"scheduler"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
		return workersRun{}, fmt.Errorf("the trainer's summary: %w", err)
	}
	if !sum.Episodes.Accounted || sum.Episodes.Completed != o.episodes {
		return workersRun{}, fmt.Errorf("the run completed %d of %d episodes (accounted: %v)", sum.Episodes.Completed, o.episodes, sum.Episodes.Accounted)
	}
	elapsed := sum.ElapsedSeconds
	if rs := sum.Scheduler.Remote; rs != nil {
		elapsed -= rs.WaitedSeconds
		r.links = rs.Workers
	}
	r.episodes = sum.Episodes.Admitted
	r.rate = float64(r.episodes) / max(elapsed, 1e-9)
	r.trainerCPU = procCPUSeconds(trainer)
	r.rss = sum.PeakRSS
	return r, nil
}

// pinPlan is where --pin puts a setup's processes (cpus: the CPUs this
// process may use; none: no pinning). With no worker, the one process gets
// every CPU but the first, which no process gets; with n workers, the
// trainer gets the first and the workers split the rest, sharing them in
// turn when there are fewer than n.
func pinPlan(cpus []int, n int) (trainer []int, workers [][]int) {
	workers = make([][]int, n)
	if len(cpus) < 2 {
		return nil, workers
	}
	rest := cpus[1:]
	if n == 0 {
		return rest, workers
	}
	for i := range n {
		if len(rest) >= n {
			workers[i] = rest[i*len(rest)/n : (i+1)*len(rest)/n]
		} else {
			workers[i] = rest[i%len(rest) : i%len(rest)+1]
		}
	}
	return cpus[:1], workers
}

// loopbackAddr is a free port on 127.0.0.1 for a trainer to listen at.
func loopbackAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func procCPUSeconds(c *exec.Cmd) float64 {
	if c.ProcessState == nil {
		return 0
	}
	return (c.ProcessState.UserTime() + c.ProcessState.SystemTime()).Seconds()
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// summarizeWorkersRuns is a setup's medians over its runs; the traffic is
// the last run's.
func summarizeWorkersRuns(n int, runs []workersRun) workersSetup {
	s := workersSetup{Workers: n}
	var tcpu, wcpu []float64
	for _, r := range runs {
		s.Runs = append(s.Runs, r.rate)
		tcpu = append(tcpu, r.trainerCPU/float64(r.episodes)*1e6)
		wcpu = append(wcpu, r.workersCPU/float64(r.episodes)*1e6)
		s.TrainerPeakRSS = max(s.TrainerPeakRSS, r.rss)
	}
	s.EpisodesPerSecond, s.TrainerCPUMicros, s.WorkersCPUMicros = medianOf(s.Runs), medianOf(tcpu), medianOf(wcpu)
	if last := runs[len(runs)-1]; last.episodes > 0 {
		ep := float64(last.episodes)
		for _, l := range last.links {
			s.MsgsOut += float64(l.MsgsOut) / ep
			s.MsgsIn += float64(l.MsgsIn) / ep
			s.BytesOut += float64(l.BytesOut) / ep
			s.BytesIn += float64(l.BytesIn) / ep
		}
	}
	return s
}

func medianOf(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func printWorkersBench(w io.Writer, o *benchWorkersOptions, setups []workersSetup) error {
	fmt.Fprintf(w, "simulated episodes (frog sim --time-scale 0): %d a run, %d at once, %d runs a setup, medians\n",
		o.episodes, o.concurrency, o.repeats)
	if len(o.cpus) > 1 {
		fmt.Fprintf(w, "pinned: the trainer on CPU %d alone; one process and the workers on CPUs %v\n", o.cpus[0], o.cpus[1:])
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "setup\tepisodes/s\tratio\ttrainer CPU/episode\tworkers CPU/episode\ttrainer peak RSS\tmessages/episode out, in\tbytes/episode out, in")
	for _, s := range setups {
		wire := "-\t-"
		if s.Workers > 0 {
			wire = fmt.Sprintf("%.3f, %.3f\t%.0f, %.0f", s.MsgsOut, s.MsgsIn, s.BytesOut, s.BytesIn)
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%.2fx\t%.1f µs\t%s\t%.0f MiB\t%s\n", setupName(s.Workers), s.EpisodesPerSecond, s.Ratio,
			s.TrainerCPUMicros, cpuCell(s), float64(s.TrainerPeakRSS)/(1<<20), wire)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(setups) > 1 && setups[1].TrainerCPUMicros > 0 {
		fmt.Fprintf(w, "\nWith 1 worker the trainer spent %.1f µs of CPU an episode: one trainer core takes at most about %.0f episodes/s\n"+
			"from workers (at low --concurrency most of that CPU is waiting, not work, and the bound is loose).\n",
			setups[1].TrainerCPUMicros, 1e6/setups[1].TrainerCPUMicros)
	}
	return nil
}

func cpuCell(s workersSetup) string {
	if s.Workers == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f µs", s.WorkersCPUMicros)
}
