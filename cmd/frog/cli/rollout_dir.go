package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/frognano/frog/run"
	"github.com/frognano/frog/synth"
	"github.com/rs/zerolog"
)

// priorRollout is what an export directory held when a rollout started on
// it: the records of a rollout that was killed or interrupted, which the
// new one continues. Its groups and episodes are numbered after theirs,
// and the tasks that have a whole group there are not rolled out again.
type priorRollout struct {
	Records int `json:"records"`
	Groups  int `json:"groups"`
	// TasksDone is how many tasks have a whole group there: every member
	// recorded and none cancelled.
	TasksDone int `json:"tasks_done"`
	// Torn names the file a torn last line was set aside in.
	Torn string `json:"torn,omitempty"`

	nextGroup, nextEpisode uint64
	done                   map[string]bool
	// summary is the interrupted rollout's summary.json, set aside when the
	// new one starts.
	summary string
}

// rest is recs less the tasks that have a whole group in the prior
// rollout in out, which it logs it continues.
func (p *priorRollout) rest(recs []synth.TaskRecord, out string, log zerolog.Logger) []synth.TaskRecord {
	recs = slices.DeleteFunc(recs, func(r synth.TaskRecord) bool { return p.done[r.ID] })
	log.Info().Str("out", out).Int("records", p.Records).Int("groups", p.Groups).Int("tasks_done", p.TasksDone).
		Uint64("first_group", p.nextGroup).Uint64("first_episode", p.nextEpisode).Str("torn", p.Torn).
		Msg("continuing the rollout in --out: new groups and episodes are numbered after its own")
	return recs
}

// readPriorRollout reads the export in dir for a rollout of groups of
// groupSize that is to continue it; nil when dir holds no export. A
// finished rollout (its summary.json not interrupted), groups of another
// size, or a record that does not read are refused: continuing would mix
// what cannot be mixed. A last line torn by a kill mid-write is set aside
// beside its shard (shard-N.jsonl.torn) and cut from it.
func readPriorRollout(dir string, groupSize int) (*priorRollout, error) {
	p := &priorRollout{done: map[string]bool{}}
	sum := filepath.Join(dir, "summary.json")
	if data, err := os.ReadFile(sum); err == nil {
		var s struct {
			Interrupted bool `json:"interrupted"`
		}
		if err := json.Unmarshal(data, &s); err != nil || !s.Interrupted {
			return nil, usagef("--out %s holds a finished rollout (summary.json): pick another --out", dir)
		}
		p.summary = sum
	}
	names, err := filepath.Glob(filepath.Join(dir, "trajectories", "shard-*.jsonl"))
	if err != nil {
		return nil, err
	}
	if len(names) == 0 && p.summary == "" {
		return nil, nil
	}
	sort.Strings(names)
	type group struct {
		task      string
		size, n   int
		cancelled bool
	}
	groups := map[string]*group{}
	for i, name := range names {
		err := readShardHeads(name, i == len(names)-1, p, func(r shardHead) error {
			if r.GroupSize != groupSize {
				return usagef("--group-size %d: %s holds groups of %d; continue it with --group-size %d, or pick another --out", groupSize, dir, r.GroupSize, r.GroupSize)
			}
			p.Records++
			if n, err := strconv.ParseUint(strings.TrimPrefix(r.GroupID, "g"), 10, 64); err == nil {
				p.nextGroup = max(p.nextGroup, n+1)
			}
			p.nextEpisode = max(p.nextEpisode, r.Episode+1)
			g := groups[r.GroupID]
			if g == nil {
				g = &group{task: r.TaskID, size: r.GroupSize}
				groups[r.GroupID] = g
			}
			g.n++
			g.cancelled = g.cancelled || r.Outcome == "cancelled"
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	p.Groups = len(groups)
	for _, g := range groups {
		if g.n >= g.size && !g.cancelled && !p.done[g.task] {
			p.done[g.task] = true
			p.TasksDone++
		}
	}
	return p, nil
}

// shardHead is what continuing a rollout reads of a record.
type shardHead struct {
	TaskID    string `json:"task_id"`
	GroupID   string `json:"group_id"`
	GroupSize int    `json:"group_size"`
	Episode   uint64 `json:"episode"`
	Outcome   string `json:"outcome"`
}

// readShardHeads calls each with every record of the shard name. In the
// last shard, a last line without its newline that does not read is set
// aside (p.Torn) and cut from the shard; any other line that does not read
// is an error naming it.
func readShardHeads(name string, last bool, p *priorRollout, each func(shardHead) error) error {
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	br := bufio.NewReader(f)
	var off int64
	for n := 1; ; n++ {
		line, rerr := br.ReadBytes('\n')
		if rerr != nil && rerr != io.EOF {
			return fmt.Errorf("%s: %w", name, rerr)
		}
		if len(bytes.TrimSpace(line)) > 0 {
			var r shardHead
			if err := json.Unmarshal(line, &r); err != nil || r.GroupID == "" {
				if last && rerr == io.EOF {
					return setTornAside(f, name, off, line, p)
				}
				return fmt.Errorf("%s:%d: not a record of frog's export (%v): continue the rollout in another --out", name, n, err)
			}
			if err := each(r); err != nil {
				return err
			}
		}
		off += int64(len(line))
		if rerr == io.EOF {
			return nil
		}
	}
}

// setTornAside writes a shard's torn last line (at off) to name.torn and
// cuts it from the shard.
func setTornAside(f *os.File, name string, off int64, line []byte, p *priorRollout) error {
	p.Torn = name + ".torn"
	if err := run.WriteFileAtomic(p.Torn, line); err != nil {
		return fmt.Errorf("set the torn last line of %s aside: %w", name, err)
	}
	return errors.Join(f.Truncate(off), f.Sync())
}
