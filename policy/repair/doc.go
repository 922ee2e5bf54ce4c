// Package repair is what frog's built-in repair policies share: spectrum
// fault localisation (Ochiai, Tarantula, DStar) over the coverage an
// episode measured, the episode protocol (run the tests, measure coverage,
// list candidates at the most suspicious lines, try them, keep what helps,
// submit) driven from the observation's history alone, and the features of
// each option a learned policy scores.
//
// Everything here is plain synchronous code over what the agent observed:
// no field of the task's record, no gold patch. A policy built on it is a
// pure function of its observation and its seed, so one policy value serves
// every episode, concurrently.
package repair
