package process

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The build cache program of contained commands. The go command of a
// contained command reads and writes its build cache through GOCACHEPROG,
// and that program is this executable (frog, or a test binary of a package
// that imports this one), which a command's view shows at
// cacheProgDir/cacheProgName: run under that name, it serves the cache and
// exits before anything else of the executable runs (this file's init). A
// get is answered from the command's own layer, then from the shared one
// (the host's GOCACHE, read-only); a put lands in the command's layer only,
// which is deleted with the command. Both are in the go command's own
// on-disk format. It is env/docker's agent's gocacheprog, which works the
// same way in containers.

// cacheProgName is the name this executable serves GOCACHEPROG under.
const cacheProgName = "frog-gocacheprog"

func init() {
	if filepath.Base(os.Args[0]) == cacheProgName {
		os.Exit(runCacheProg(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
}

// runCacheProg is frog-gocacheprog -shared DIR -layer DIR.
func runCacheProg(args []string, in io.Reader, out, errOut io.Writer) int {
	fs := flag.NewFlagSet(cacheProgName, flag.ContinueOnError)
	fs.SetOutput(errOut)
	shared := fs.String("shared", "", "the read-only shared cache (the go command's GOCACHE format)")
	layer := fs.String("layer", "", "the writable cache of this command")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *layer == "" {
		fmt.Fprintln(errOut, cacheProgName+": -layer is required")
		return 2
	}
	c := &progCache{layer: *layer, read: []string{*layer}}
	if *shared != "" {
		c.read = append(c.read, *shared)
	}
	if err := c.serve(in, out); err != nil {
		fmt.Fprintf(errOut, "%s: %v\n", cacheProgName, err)
		return 1
	}
	return 0
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

func cacheFile(dir string, id []byte, kind string) string {
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
		data, err := os.ReadFile(cacheFile(dir, action, "a"))
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
		path := cacheFile(dir, out, "d")
		if fi, err := os.Stat(path); err != nil || fi.Size() != size {
			continue
		}
		t := time.Unix(0, nanos)
		resp.Miss, resp.OutputID, resp.Size, resp.Time, resp.DiskPath = false, out, size, &t, path
		return
	}
}

// put stores body as output out of action in the command's layer.
func (c *progCache) put(action, out, body []byte, resp *progResponse) error {
	if len(action) != hashSize || len(out) != hashSize {
		return errors.New("bad action or output ID")
	}
	path := cacheFile(c.layer, out, "d")
	if err := writeAtomic(path, body); err != nil {
		return err
	}
	entry := fmt.Sprintf("v1 %x %x %20d %20d\n", action, out, len(body), time.Now().UnixNano())
	if err := writeAtomic(cacheFile(c.layer, action, "a"), []byte(entry)); err != nil {
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
