// Package chart holds what frog's plots share: one palette and one way to
// draw a series as a line. frog report (cmd/frog/cli) draws a run's report
// with it and run/experiment the curriculum experiment's curves, so that
// the two read alike. It is plain code over gonum/plot, safe for
// concurrent use (it keeps no state), and takes no context: drawing a plot
// is short and never waits.
package chart
