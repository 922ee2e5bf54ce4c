// Package run is a run's directory — its config, metrics, trajectory
// shards and checkpoints — with one owner for each of its files: atomic
// writes, the checkpoint format, the latest pointer, pruning, loading, and
// the protocol by which a run is resumed. The command line (cmd/frog/cli)
// says where a run goes and prints what it did; everything it writes into
// runs/<name> goes through here, and any program can load a run's policy:
//
//	ck, err := run.Load("runs/train-1") // the checkpoint latest names
//	p, err := ck.Policy()               // its neural policy, on the CPU
//
// A run directory holds:
//
//	config.json                     written first (Create), atomically
//	metrics.jsonl                   one Event a line: "update", "eval",
//	                                "baseline", "curriculum"
//	trajectories/shard-00000.jsonl  one EpisodeRecord a line (Shards)
//	checkpoints/ckpt-<version>.json the learner's checkpoints (Checkpoints)
//	checkpoints/latest              the name of the newest one
//	summary.json                    written last (Dir.WriteSummary)
//
// Every whole file (config, summary, checkpoint, latest) is written through
// a temporary file, fsync and rename (WriteFileAtomic): a kill at any
// moment leaves the old file or the new one. JSONL files are appended to a
// whole line at a time; a write that fails part way (a full disk) is cut
// back, and a line torn by a kill is one readers skip and a resumed run
// sets aside beside its file (<file>.torn-<hash>).
//
// A checkpoint file is {"format":"frog-checkpoint/2","sha256":…,
// "checkpoint":{…}}, every field under the checksum; files of older frogs
// (frog-checkpoint/1) still load. Load of a run directory takes the
// checkpoint latest names or, when that one does not load, the newest that
// does, and says what it passed over (Loaded.Skipped).
//
// Resume continues a run exactly: it cuts metrics.jsonl and the
// trajectory shards back to the checkpoint resumed from, so that they hold
// the records an uninterrupted run would have made by then, each once, and
// the resumed run appends the rest.
//
// Threading: a Dir's metrics hooks (OnUpdate, OnCurriculum) and WriteEvent
// are called from the learner's and the curriculum's actors, concurrently;
// Shards.Write from every episode's goroutine; Checkpoints.Save from one
// goroutine at a time (the curriculum actor's checkpoint writer). Each
// blocks on the disk for one write and fsync at most, and takes no
// context: a record or a checkpoint is written whole, or not at all, so
// cancelling a run stops it calling them and never leaves half a file.
// Create, Resume, Load and the Close methods are called by the run's owner
// (the command), before the actors start and after they stop.
//
// Two error categories are shared by every package under run and the
// command line, which maps them to exit codes: a *UsageError is the
// caller's input (a bad flag, argument, value or file; exit code 2), and
// ErrInterrupted wraps a job that a signal, through its context, stopped
// before it had anything to report (exit code 130). Callers branch on them
// with errors.As and errors.Is; the message is the wrapped error's.
package run
