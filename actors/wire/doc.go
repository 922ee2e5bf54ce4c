// Package wire is the schema of the messages that cross between a trainer
// and its rollout workers (`frog train --listen`, `frog worker --join`):
// protobuf types generated from join.proto (the frozen handshake) and
// frog.proto (schema version Schema). protoactor-go's remote carries only
// protobuf messages; the actors package converts frog's own types to and
// from these at the process boundary, so nothing inside a process pays for
// the encoding.
package wire

// Schema is the version of frog.proto's messages this frog speaks. A
// worker whose Join names another is refused.
const Schema = 2
