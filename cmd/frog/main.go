package main

import (
	"os"

	"github.com/frognano/frog/cmd/frog/cli"
)

func main() { os.Exit(cli.Main()) }
