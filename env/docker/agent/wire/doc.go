// Package wire is the protocol between frog (env/docker) and the agent
// inside each sandbox container (env/docker/agent): one Request or
// Response a frame, a 4-byte big-endian length and then JSON, over the
// container's attach stream. Both sides compile this one file, so they
// cannot drift apart: frog as a package of its module, the agent as a
// package of its own (the image build copies it with the agent's source).
package wire
