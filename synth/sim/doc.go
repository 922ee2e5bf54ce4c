// Package sim is a simulated task source: tasks with a difficulty drawn
// around the one asked for, a buggy file and its gold patch, for `frog sim`,
// `frog bench` and the actors' tests. Its tasks run in env/sim sandboxes,
// and in real sandboxes too: the deciding test command checks the file's
// content with the shell.
//
// Source makes tasks around the difficulty asked for. Binned makes them in
// bins, as the real synthesizer does (an operator family, k mutations,
// their locality, a module), with one family out of reach; it is a
// synth.Steerable, and keeps each task's true difficulty for the simulated
// agent's oracle (Truth), apart from the noisy estimate a curriculum sees.
// `frog sim --tasks sim-bins` and `frog experiment curriculum --mode sim`
// use it.
//
// Both are safe for concurrent use: the synthesizer actor's workers call
// them at once. Their answers depend only on the seed and the order of the
// calls. They never block; a call made with a cancelled ctx returns ctx's
// error and no task.
package sim
