// Command frog trains and studies coding agents with reinforcement learning
// on bug-fix tasks it synthesizes itself. Run `frog --help`.
package main

import (
	"os"

	"github.com/frognano/frog/cmd/frog/cli"
)

func main() { os.Exit(cli.Main()) }
