package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
)

func main() {
	os.Exit(dispatch(os.Args))
}

// dispatch runs the program argv names: the tool named by argv[0]'s base
// name, or by its first argument (as in "agent sed …"); anything else is the
// agent.
func dispatch(argv []string) int {
	name, args := filepath.Base(argv[0]), argv[1:]
	if len(args) == 1 && args[0] == "--list" {
		// The image builder links each of these names to this binary.
		for _, n := range toolNames() {
			fmt.Println(n)
		}
		return 0
	}
	if tools[name] == nil && len(args) > 0 && tools[args[0]] != nil {
		name, args = args[0], args[1:]
	}
	if run := tools[name]; run != nil {
		return run(stdio(), name, args)
	}
	return agentMain(args)
}

// toolNames lists the tools, sorted.
func toolNames() []string {
	names := make([]string, 0, len(tools))
	for n := range tools {
		names = append(names, n)
	}
	sort.Strings(names)
	return slices.Clip(names)
}
