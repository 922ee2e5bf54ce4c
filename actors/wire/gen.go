package wire

// Generated with Debian's protoc and protoc-gen-go at the version of
// google.golang.org/protobuf that go.mod pins (make proto; make check fails
// when the committed code is not what they generate).
//go:generate protoc --proto_path=. --go_out=. --go_opt=paths=source_relative join.proto frog.proto
