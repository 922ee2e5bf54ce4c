package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCacheProg: gets are answered from the command layer, then from the
// shared one (in the go command's format); puts land in the command layer
// only; an entry whose output is missing or of the wrong size is a miss.
func TestCacheProg(t *testing.T) {
	shared, layer := t.TempDir(), t.TempDir()
	id := func(s string) []byte { h := sha256.Sum256([]byte(s)); return h[:] }
	// The shared layer as the go command writes it: std's "fmt" compiled.
	writeEntry := func(dir string, action, body []byte) {
		out := sha256.Sum256(body)
		os.MkdirAll(filepath.Dir(fileName(dir, out[:], "d")), 0o755)
		os.WriteFile(fileName(dir, out[:], "d"), body, 0o644)
		os.MkdirAll(filepath.Dir(fileName(dir, action, "a")), 0o755)
		os.WriteFile(fileName(dir, action, "a"), fmt.Appendf(nil, "v1 %x %x %20d %20d\n", action, out, len(body), time.Now().UnixNano()), 0o644)
	}
	writeEntry(shared, id("fmt"), []byte("fmt archive"))
	writeEntry(shared, id("bad size"), []byte("12345"))
	os.WriteFile(fileName(shared, func() []byte { h := sha256.Sum256([]byte("12345")); return h[:] }(), "d"), []byte("1234"), 0o644)

	body := []byte("p archive")
	out := sha256.Sum256(body)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &progCache{layer: layer, read: []string{layer, shared}}
	served := make(chan error, 1)
	go func() { served <- c.serve(inR, outW); outW.Close() }()
	enc, dec := json.NewEncoder(inW), json.NewDecoder(outR)
	var hello progResponse
	if err := dec.Decode(&hello); err != nil || strings.Join(hello.KnownCommands, ",") != "get,put,close" {
		t.Fatalf("first response = %+v, %v; want the capabilities", hello, err)
	}
	// call sends one request (and its body) and waits for its answer.
	call := func(req progRequest, body []byte) progResponse {
		t.Helper()
		enc.Encode(req)
		if body != nil {
			enc.Encode(body)
		}
		var r progResponse
		if err := dec.Decode(&r); err != nil || r.ID != req.ID {
			t.Fatalf("answer to %d = %+v, %v", req.ID, r, err)
		}
		return r
	}
	got := map[int64]progResponse{
		1: call(progRequest{ID: 1, Command: "get", ActionID: id("fmt")}, nil),
		2: call(progRequest{ID: 2, Command: "get", ActionID: id("p")}, nil),
		3: call(progRequest{ID: 3, Command: "put", ActionID: id("p"), OutputID: out[:], BodySize: int64(len(body))}, body),
		4: call(progRequest{ID: 4, Command: "get", ActionID: id("p")}, nil),
		5: call(progRequest{ID: 5, Command: "get", ActionID: id("bad size")}, nil),
		6: call(progRequest{ID: 6, Command: "close"}, nil),
	}
	inW.Close()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	if r := got[1]; r.Miss || !strings.HasPrefix(r.DiskPath, shared) || r.Size != int64(len("fmt archive")) {
		t.Errorf("get of a shared entry = %+v, want a hit in the shared layer", r)
	}
	if r := got[2]; !r.Miss {
		t.Errorf("get before put = %+v, want a miss", r)
	}
	if r := got[3]; r.Err != "" || !strings.HasPrefix(r.DiskPath, layer) {
		t.Errorf("put = %+v, want a path in the command layer", r)
	}
	if r := got[4]; r.Miss || !strings.HasPrefix(r.DiskPath, layer) || !bytes.Equal(r.OutputID, out[:]) {
		t.Errorf("get after put = %+v, want a hit in the command layer", r)
	}
	if data, err := os.ReadFile(got[4].DiskPath); err != nil || !bytes.Equal(data, body) {
		t.Errorf("stored body = %q, %v; want %q", data, err, body)
	}
	if r := got[5]; !r.Miss {
		t.Errorf("get of an entry whose output has the wrong size = %+v, want a miss", r)
	}
	n := 0
	filepath.WalkDir(shared, func(_ string, d os.DirEntry, _ error) error {
		if !d.IsDir() {
			n++
		}
		return nil
	})
	if n != 4 {
		t.Errorf("the shared layer has %d files after a put, want the 4 it had", n)
	}
}
