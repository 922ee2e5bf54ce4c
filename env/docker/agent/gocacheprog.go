package main

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The Go build cache of a sandbox has two layers.
//
// The shared layer is a Docker volume that every sandbox mounts read-only:
// only the harness writes it, in a container that runs frog's own commands
// (the go command compiling the standard library, no agent code), with the
// go command's own on-disk cache (GOCACHE). Compiling runs no code of the
// packages compiled, so what it holds is what the compiler made.
//
// The command layer is a fresh, empty directory that the agent makes for
// each command it runs and removes when the command and all it started are
// dead. The go command reads and writes it through GOCACHEPROG: this
// binary, run as gocacheprog, answers a get from the command layer, then
// from the shared one, and stores every put in the command layer, in the go
// command's own format. So a command may poison only its own cache: nothing
// it writes is read by any later command, in its sandbox or another, and the
// deciding test run of an episode reads only what the harness compiled and
// what it compiles itself.

// cacheLayers is how the agent gives commands their build cache layers.
type cacheLayers struct {
	parent string // where layers are made; "" gives commands none
	shared string // the read-only shared layer; "" for none
	self   string // this binary, which serves GOCACHEPROG
}

// create makes a fresh, empty layer for one command ("" when there are no
// layers). Its name is random and it did not exist: no earlier command
// could have put anything in it.
func (c cacheLayers) create() (string, error) {
	if c.parent == "" {
		return "", nil
	}
	if err := os.MkdirAll(c.parent, 0o755); err != nil {
		return "", err
	}
	return os.MkdirTemp(c.parent, "gocache-")
}

// env is what a command's environment gets for its layer.
func (c cacheLayers) env(layer string) []string {
	if layer == "" {
		return nil
	}
	env := []string{"GOCACHE=" + layer}
	if c.shared != "" {
		env = append(env, "GOCACHEPROG="+quoteArg(c.self)+" gocacheprog -shared="+quoteArg(c.shared)+" -layer="+quoteArg(layer))
	}
	return env
}

// quoteArg quotes s for GOCACHEPROG's space-separated arguments.
func quoteArg(s string) string {
	if !strings.ContainsAny(s, " \t'\"") {
		return s
	}
	return "'" + s + "'"
}

// remove deletes a command's layer, also where the command made parts of
// it unwritable. Best effort: a layer left behind is never read again.
func (c cacheLayers) remove(layer string) {
	if layer == "" {
		return
	}
	removeAll(layer)
}

// removeAll is os.RemoveAll, also where a command made directories of p
// unwritable.
func removeAll(p string) error {
	filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(q, 0o700)
		}
		return nil
	})
	return os.RemoveAll(p)
}

// The GOCACHEPROG protocol (cmd/go/internal/cacheprog): JSON requests, one
// per line, on stdin, a put's body following as a base64 JSON string;
// JSON responses on stdout, the first one saying which commands we know.
type progRequest struct {
	ID       int64
	Command  string
	ActionID []byte `json:",omitempty"`
	OutputID []byte `json:",omitempty"`
	BodySize int64  `json:",omitempty"`
}

type progResponse struct {
	ID            int64
	Err           string     `json:",omitempty"`
	KnownCommands []string   `json:",omitempty"`
	Miss          bool       `json:",omitempty"`
	OutputID      []byte     `json:",omitempty"`
	Size          int64      `json:",omitempty"`
	Time          *time.Time `json:",omitempty"`
	DiskPath      string     `json:",omitempty"`
}

// runCacheProg is gocacheprog -shared DIR -layer DIR: a GOCACHEPROG server
// over a read-only shared layer and a writable command layer, both in the
// go command's on-disk format.
func runCacheProg(p *proc, name string, args []string) int {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(p.stderr)
	shared := fs.String("shared", "", "the read-only shared cache (go's GOCACHE format)")
	layer := fs.String("layer", "", "the writable cache of this command")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *layer == "" {
		return p.fail(2, name, "-layer is required")
	}
	c := &progCache{layer: *layer}
	if *shared != "" {
		c.read = append(c.read, *shared)
	}
	c.read = append([]string{*layer}, c.read...)
	if err := c.serve(p.stdin, p.stdout); err != nil {
		return p.fail(1, name, "%v", err)
	}
	return 0
}

type progCache struct {
	layer string
	read  []string // layers to look in, in order
}

// serve answers requests until close or the end of in. The go command
// sends many at once; each is answered on its own goroutine, in any order
// (the protocol allows it), so that file system waits overlap.
func (c *progCache) serve(in io.Reader, out io.Writer) error {
	bw := bufio.NewWriter(out)
	enc := json.NewEncoder(bw)
	var (
		mu      sync.Mutex // serializes responses
		sendErr error
		wg      sync.WaitGroup
	)
	send := func(r *progResponse) {
		mu.Lock()
		defer mu.Unlock()
		if sendErr != nil {
			return
		}
		if sendErr = enc.Encode(r); sendErr == nil {
			sendErr = bw.Flush()
		}
	}
	send(&progResponse{KnownCommands: []string{"get", "put", "close"}})
	dec := json.NewDecoder(bufio.NewReaderSize(in, 64<<10))
	for {
		var req progRequest
		if err := dec.Decode(&req); err != nil {
			wg.Wait()
			if errors.Is(err, io.EOF) {
				return sendErr
			}
			return fmt.Errorf("read request: %w", err)
		}
		var body []byte
		if req.Command == "put" && req.BodySize > 0 {
			if err := dec.Decode(&body); err != nil {
				wg.Wait()
				return fmt.Errorf("read body of request %d: %w", req.ID, err)
			}
			if int64(len(body)) != req.BodySize {
				wg.Wait()
				return fmt.Errorf("request %d: body of %d bytes, want %d", req.ID, len(body), req.BodySize)
			}
		}
		if req.Command == "close" {
			wg.Wait()
			send(&progResponse{ID: req.ID})
			return sendErr
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp := &progResponse{ID: req.ID}
			switch req.Command {
			case "get":
				c.get(req.ActionID, resp)
			case "put":
				if err := c.put(req.ActionID, req.OutputID, body, resp); err != nil {
					resp.Err = err.Error()
				}
			default:
				resp.Err = fmt.Sprintf("unknown command %q", req.Command)
			}
			send(resp)
		}()
	}
}

// hashSize is the size of the go command's action and output IDs.
const hashSize = 32

// entrySize is the length of an action entry in the go command's format:
// "v1 <hex action> <hex output> <size, 20 wide> <unix nanoseconds, 20 wide>\n".
const entrySize = 2 + 1 + 2*hashSize + 1 + 2*hashSize + 1 + 20 + 1 + 20 + 1

func fileName(dir string, id []byte, kind string) string {
	return filepath.Join(dir, fmt.Sprintf("%02x", id[0]), fmt.Sprintf("%x", id)+"-"+kind)
}

// get answers from the first layer holding a valid entry whose output is
// there with the size the entry says; anything else is a miss.
func (c *progCache) get(action []byte, resp *progResponse) {
	resp.Miss = true
	if len(action) != hashSize {
		return
	}
	for _, dir := range c.read {
		data, err := os.ReadFile(fileName(dir, action, "a"))
		if err != nil || len(data) != entrySize || !bytes.HasPrefix(data, []byte("v1 ")) || data[entrySize-1] != '\n' {
			continue
		}
		f := strings.Fields(string(data))
		if len(f) != 5 || f[1] != hex.EncodeToString(action) {
			continue
		}
		out, err := hex.DecodeString(f[2])
		size, err2 := strconv.ParseInt(f[3], 10, 64)
		nanos, err3 := strconv.ParseInt(f[4], 10, 64)
		if errors.Join(err, err2, err3) != nil || len(out) != hashSize || size < 0 {
			continue
		}
		path := fileName(dir, out, "d")
		if fi, err := os.Stat(path); err != nil || fi.Size() != size {
			continue
		}
		t := time.Unix(0, nanos)
		resp.Miss, resp.OutputID, resp.Size, resp.Time, resp.DiskPath = false, out, size, &t, path
		return
	}
}

// put stores body as output out of action in the command layer.
func (c *progCache) put(action, out, body []byte, resp *progResponse) error {
	if len(action) != hashSize || len(out) != hashSize {
		return errors.New("bad action or output ID")
	}
	path := fileName(c.layer, out, "d")
	if err := writeAtomic(path, body); err != nil {
		return err
	}
	entry := fmt.Sprintf("v1 %x %x %20d %20d\n", action, out, len(body), time.Now().UnixNano())
	if err := writeAtomic(fileName(c.layer, action, "a"), []byte(entry)); err != nil {
		return err
	}
	resp.DiskPath = path
	return nil
}

// writeAtomic writes data to path through a temporary file and a rename, so
// that a concurrent go command of the same command never reads half a file.
func writeAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-")
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(f.Name())
		return err
	}
	return os.Rename(f.Name(), path)
}
