package experiment

import (
	"github.com/rs/zerolog"

	"github.com/frognano/frog/cuda"
	"github.com/frognano/frog/curriculum"
	"github.com/frognano/frog/policy/neural"
	"github.com/frognano/frog/run/taskenv"
)

// Options are the settings of a curriculum experiment (the flags of frog
// experiment curriculum, checked there); the experiment directory's
// config.json records them.
type Options struct {
	Mode         string                   `json:"mode"`
	Strategies   []string                 `json:"strategies,omitempty"`
	Seeds        int                      `json:"seeds,omitempty"`
	FirstSeed    uint64                   `json:"first_seed,omitempty"`
	Budget       int64                    `json:"budget"`
	Points       int                      `json:"points"`
	Concurrency  int                      `json:"concurrency"`
	GroupSize    int                      `json:"group_size"`
	GroupsPer    int                      `json:"groups_per_update"`
	TaskRefill   int                      `json:"task_refill"`
	Refill       bool                     `json:"refill_zero_variance"`
	LearningRate float64                  `json:"learning_rate"`
	InitialSkill float64                  `json:"initial_skill"`
	TaskSpread   float64                  `json:"task_spread"`
	Noise        float64                  `json:"estimate_noise"`
	Heldout      int                      `json:"heldout"`
	TargetSolve  float64                  `json:"target_solve"`
	Replay       curriculum.ReplayOptions `json:"replay_options"`
	Real         *RealOptions             `json:"real,omitempty"`
	Tables       *TableOptions            `json:"tables,omitempty"`
	// Start is where real and replay runs' networks start
	// (neural.StartPrior or neural.StartScratch; Learner.Prior and KL
	// follow it), recorded in config.json.
	Start string `json:"start,omitempty"`

	// Dir is the experiment directory.
	Dir string `json:"-"`
}

// RealOptions are the settings only Mode "real" reads; config.json records
// them (nil in sim mode, so that sim experiments made before them still
// match).
type RealOptions struct {
	Tasks     string                 `json:"tasks"`
	Heldout   string                 `json:"heldout"`
	Tries     int                    `json:"tries"`
	EvalTries int                    `json:"eval_tries"`
	Sandbox   taskenv.SandboxOptions `json:"sandbox"`
	Learner   neural.Config          `json:"learner"`
	// Start is the command line's --start, which set Learner (recorded
	// as Options.Start).
	Start string `json:"-"`
	// TryCost is frog train's --try-cost (actors.Config.TryCost).
	TryCost float64 `json:"try_cost"`
	// BudgetEpisodes counts Options.Budget in episodes, as replay mode
	// does, rather than in test executions: the unit in which a real run
	// compares with its replay.
	BudgetEpisodes bool            `json:"budget_episodes,omitempty"`
	Device         string          `json:"device"`
	TaskOpts       taskenv.Options `json:"task_options"`
}

// TableOptions are the settings only Mode "replay" reads: the replay
// tables (frog tabulate's) a run trains on and is evaluated on, and the
// built-in policy's settings as in RealOptions. config.json records them
// (nil in the other modes).
type TableOptions struct {
	Table        string        `json:"table"`
	HeldoutTable string        `json:"heldout_table"`
	Tries        int           `json:"tries"`
	EvalTries    int           `json:"eval_tries"`
	Learner      neural.Config `json:"learner"`
	TryCost      float64       `json:"try_cost"`
	Device       string        `json:"device"`
}

// Deps are what an experiment takes from its caller, which chooses the
// backends: none of them is recorded in config.json.
type Deps struct {
	// Version is frog's version, recorded in config.json and every result.
	Version string
	Log     zerolog.Logger
	// Curriculum makes the curriculum of arm a (an entry of
	// Options.Strategies: its strategy, temperature and signal) for one
	// run: seeded with seed, asking sources that take only a difficulty
	// for difficulty. Its errors are returned as they are.
	Curriculum func(a Arm, seed uint64, difficulty float64) (curriculum.Curriculum, error)
	// Sandboxes opens the sandboxes of Mode "real" (unused in sim mode).
	Sandboxes taskenv.Opener
	// Tensor opens the learners' tensor backend of Mode "real" for
	// RealOptions.Device (cuda.Open), and says why it is the one.
	Tensor func(device string) (cuda.Backend, string, error)
}

// budgetEpisodes says whether the budget counts episodes: always in
// replay mode, in real mode when asked.
func (o Options) budgetEpisodes() bool {
	return o.Mode == "replay" || o.Real != nil && o.Real.BudgetEpisodes
}
