module github.com/frognano/frog/env/docker/agent

go 1.26.0

require (
	github.com/u-root/u-root v0.16.0
	golang.org/x/sys v0.49.0
	mvdan.cc/sh/v3 v3.14.1
)

require (
	github.com/dustin/go-humanize v1.0.1 // indirect
	golang.org/x/term v0.46.0 // indirect
)
