package wire

// MaxFrame is the largest frame either side sends or accepts.
const MaxFrame = 256 << 20

// Request is one operation frog asks of the agent; ID pairs it with its
// Response. Op names the operation; the other fields are its arguments.
type Request struct {
	ID        uint64   `json:"id"`
	Op        string   `json:"op"`
	Cmd       []string `json:"cmd,omitempty"`
	Dir       string   `json:"dir,omitempty"`
	Env       []string `json:"env,omitempty"`
	Stdin     []byte   `json:"stdin,omitempty"`
	TimeoutMS int64    `json:"timeout_ms,omitempty"`
	MaxOutput int      `json:"max_output,omitempty"`
	Path      string   `json:"path,omitempty"`
	Data      []byte   `json:"data,omitempty"`
	Target    uint64   `json:"target,omitempty"`
}

// Response answers the Request of the same ID.
type Response struct {
	ID        uint64 `json:"id"`
	Op        string `json:"op,omitempty"`
	Version   string `json:"version,omitempty"`
	ExitCode  int    `json:"exit"`
	Stdout    []byte `json:"stdout,omitempty"`
	Stderr    []byte `json:"stderr,omitempty"`
	TimedOut  bool   `json:"timed_out,omitempty"`
	OOMKilled bool   `json:"oom,omitempty"`
	Truncated bool   `json:"truncated,omitempty"`
	DurNS     int64  `json:"dur_ns,omitempty"`
	Data      []byte `json:"data,omitempty"`
	Err       string `json:"err,omitempty"`
	// ErrKind is "path" (refused path), "notexist", "fs" (another
	// file-system error), "content" (a template entry that layout will not
	// copy) or "proto" (a malformed request).
	ErrKind string `json:"err_kind,omitempty"`
	// Files, Dirs, Links and Bytes count what a layout copied.
	Files int   `json:"files,omitempty"`
	Dirs  int   `json:"dirs,omitempty"`
	Links int   `json:"links,omitempty"`
	Bytes int64 `json:"bytes,omitempty"`
}
