package docker

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/docker/docker/api/types"

	"github.com/frognano/frog/env/docker/agent/wire"
)

// The wire types are env/docker/agent/wire's, which the agent compiles too.
const maxFrame = wire.MaxFrame

type (
	request  = wire.Request
	response = wire.Response
)

// errAgentGone is the cause when the attach stream ends: the container or its
// agent died, or the sandbox was closed.
var errAgentGone = errors.New("agent stream ended")

// agentConn multiplexes requests to one container's agent over its hijacked
// attach stream. Calls may come from several goroutines. It owns one
// goroutine, the reader, which exits when the stream ends (the container
// dies or close is called).
type agentConn struct {
	hj      types.HijackedResponse
	wmu     sync.Mutex
	nextID  atomic.Uint64
	mu      sync.Mutex
	pending map[uint64]chan *response
	err     error // set once, when the stream ended
	dead    chan struct{}
	hello   chan *response
	stderr  tail // the agent's own stderr, for diagnostics
}

func newAgentConn(hj types.HijackedResponse) *agentConn {
	c := &agentConn{hj: hj, pending: map[uint64]chan *response{}, dead: make(chan struct{}), hello: make(chan *response, 1)}
	go c.readLoop(&demux{r: hj.Reader, stderr: &c.stderr})
	return c
}

func (c *agentConn) readLoop(r io.Reader) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		resp, err := readFrame(br)
		if err != nil {
			c.fail(err)
			return
		}
		if resp.ID == 0 {
			select {
			case c.hello <- resp:
			default:
			}
			continue
		}
		c.mu.Lock()
		ch := c.pending[resp.ID]
		delete(c.pending, resp.ID)
		c.mu.Unlock()
		if ch != nil {
			ch <- resp
		}
	}
}

func (c *agentConn) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return
	}
	if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
		err = errAgentGone
	} else {
		err = fmt.Errorf("%w: %w", errAgentGone, err)
	}
	c.err = err
	close(c.dead)
}

func (c *agentConn) deadErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// close ends the stream; the reader exits and pending calls fail.
func (c *agentConn) close() {
	c.hj.Close()
	c.fail(net.ErrClosed)
}

// waitHello waits for the agent's first frame.
func (c *agentConn) waitHello(ctx context.Context) error {
	select {
	case <-c.hello:
		return nil
	case <-c.dead:
		return c.deadErr()
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *agentConn) send(req *request) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if len(body) > maxFrame {
		return fmt.Errorf("request of %d bytes exceeds %d", len(body), maxFrame)
	}
	buf := make([]byte, 4, 4+len(body))
	binary.BigEndian.PutUint32(buf, uint32(len(body)))
	buf = append(buf, body...)
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.hj.Conn.SetWriteDeadline(time.Now().Add(30 * time.Second))
	_, err = c.hj.Conn.Write(buf)
	return err
}

// errNoAnswer: the agent did not answer within the guard time.
var errNoAnswer = errors.New("no answer from the sandbox's agent")

// call sends req and waits for its response, for ctx, for the stream to end
// or for guard to pass. On ctx or guard it asks the agent to cancel the
// request (a command is then killed) and returns without waiting. Errors
// other than ctx's are faults of the sandbox.
func (c *agentConn) call(ctx context.Context, req *request, guard time.Duration) (*response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	req.ID = c.nextID.Add(1)
	ch := make(chan *response, 1)
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return nil, c.err
	}
	c.pending[req.ID] = ch
	c.mu.Unlock()
	if err := c.send(req); err != nil {
		c.forget(req.ID)
		return nil, fmt.Errorf("send to agent: %w", err)
	}
	t := time.NewTimer(guard)
	defer t.Stop()
	select {
	case resp := <-ch:
		return resp, nil
	case <-c.dead:
		return nil, c.deadErr()
	case <-ctx.Done():
		c.cancel(req)
		return nil, ctx.Err()
	case <-t.C:
		c.cancel(req)
		return nil, fmt.Errorf("%w within %v", errNoAnswer, guard)
	}
}

func (c *agentConn) forget(id uint64) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

func (c *agentConn) cancel(req *request) {
	c.forget(req.ID)
	if req.Op == "exec" {
		c.send(&request{Op: "cancel", Target: req.ID})
	}
}

func readFrame(r io.Reader) (*response, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > maxFrame {
		return nil, fmt.Errorf("frame of %d bytes exceeds %d", n, maxFrame)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, err
	}
	resp := new(response)
	if err := json.Unmarshal(buf, resp); err != nil {
		return nil, fmt.Errorf("bad frame: %w", err)
	}
	return resp, nil
}

// demux reads the stdout of Docker's multiplexed attach stream (8-byte
// headers: stream, 0, 0, 0, big-endian length) and sends stderr to a tail.
type demux struct {
	r      io.Reader
	left   int
	stderr io.Writer
}

func (d *demux) Read(p []byte) (int, error) {
	for d.left == 0 {
		var h [8]byte
		if _, err := io.ReadFull(d.r, h[:]); err != nil {
			return 0, err
		}
		n := int(binary.BigEndian.Uint32(h[4:]))
		if h[0] == 1 {
			d.left = n
			break
		}
		if _, err := io.CopyN(d.stderr, d.r, int64(n)); err != nil {
			return 0, err
		}
	}
	if len(p) > d.left {
		p = p[:d.left]
	}
	n, err := d.r.Read(p)
	d.left -= n
	return n, err
}

// tail keeps the last 4 KiB written to it.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 4<<10 {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-4<<10:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
