package docker

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
	"github.com/google/go-cmp/cmp"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/rs/zerolog"

	"github.com/frognano/frog/env"
)

// fakeAPI is a daemon that fails where told; its containers' attach streams
// are served by agent, a stand-in for the in-container agent. Methods it
// does not define panic (the embedded interface is nil).
type fakeAPI struct {
	dockerAPI
	pingErr, createErr, attachErr, startErr error
	agent                                   func(c net.Conn)

	mu      sync.Mutex
	removed []string
}

func (f *fakeAPI) Ping(context.Context) (types.Ping, error) { return types.Ping{}, f.pingErr }

func (f *fakeAPI) ImageInspect(context.Context, string, ...client.ImageInspectOption) (image.InspectResponse, error) {
	return image.InspectResponse{}, nil
}

func (f *fakeAPI) ContainerCreate(context.Context, *container.Config, *container.HostConfig, *network.NetworkingConfig, *ocispec.Platform, string) (container.CreateResponse, error) {
	if f.createErr != nil {
		return container.CreateResponse{}, f.createErr
	}
	return container.CreateResponse{ID: "c1"}, nil
}

func (f *fakeAPI) ContainerAttach(context.Context, string, container.AttachOptions) (types.HijackedResponse, error) {
	if f.attachErr != nil {
		return types.HijackedResponse{}, f.attachErr
	}
	host, ctr := net.Pipe()
	go f.agent(ctr)
	return types.HijackedResponse{Conn: host, Reader: bufio.NewReader(host)}, nil
}

func (f *fakeAPI) ContainerStart(context.Context, string, container.StartOptions) error {
	return f.startErr
}

func (f *fakeAPI) ContainerRemove(_ context.Context, id string, _ container.RemoveOptions) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.removed = append(f.removed, id)
	return nil
}

func (f *fakeAPI) ContainerInspect(context.Context, string) (container.InspectResponse, error) {
	return container.InspectResponse{ContainerJSONBase: &container.ContainerJSONBase{State: &container.State{Status: "exited", ExitCode: 137, OOMKilled: true}}}, nil
}

func (f *fakeAPI) ContainerRename(context.Context, string, string) error { return nil }

func (f *fakeAPI) removedIDs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.removed...)
}

// muxWrite writes p as one frame of Docker's multiplexed stream.
func muxWrite(w io.Writer, stream byte, p []byte) error {
	hdr := [8]byte{stream}
	binary.BigEndian.PutUint32(hdr[4:], uint32(len(p)))
	_, err := w.Write(append(hdr[:], p...))
	return err
}

func writeResp(w io.Writer, resp response) error {
	body, _ := json.Marshal(resp)
	frame := append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
	return muxWrite(w, 1, frame)
}

func readReq(r io.Reader) (request, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return request{}, err
	}
	buf := make([]byte, binary.BigEndian.Uint32(hdr[:]))
	if _, err := io.ReadFull(r, buf); err != nil {
		return request{}, err
	}
	var req request
	return req, json.Unmarshal(buf, &req)
}

// echoAgent says hello and answers execs with their argv joined, until
// dieAfter requests (0: never), when it writes to stderr and hangs up.
func echoAgent(dieAfter int) func(net.Conn) {
	return func(c net.Conn) {
		defer c.Close()
		if writeResp(c, response{Op: "hello", Version: "1"}) != nil {
			return
		}
		for n := 1; ; n++ {
			req, err := readReq(c)
			if err != nil {
				return
			}
			if n == dieAfter {
				muxWrite(c, 2, []byte("agent: fatal error\n"))
				return
			}
			writeResp(c, response{ID: req.ID, Stdout: []byte(strings.Join(req.Cmd, " "))})
		}
	}
}

func fakeConfig() Config {
	cfg := DefaultConfig()
	cfg.Reap = false
	cfg.PoolSize = 0
	cfg.BuildCacheWarm = nil
	cfg.StartTimeout = 2 * time.Second
	return cfg
}

func TestOpenFaults(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name        string
		api         *fakeAPI
		wantRemoved []string
		wantInErr   string
	}{
		{"create fails", &fakeAPI{createErr: boom, agent: echoAgent(0)}, nil, "boom"},
		{"attach fails", &fakeAPI{attachErr: boom, agent: echoAgent(0)}, []string{"c1"}, "boom"},
		{"start fails", &fakeAPI{startErr: boom, agent: echoAgent(0)}, []string{"c1"}, "boom"},
		{"agent hangs up before hello", &fakeAPI{agent: func(c net.Conn) {
			muxWrite(c, 2, []byte("exec /frog/agent: no such file"))
			c.Close()
		}}, []string{"c1"}, "no such file"},
		{"agent never says hello", &fakeAPI{agent: func(c net.Conn) { io.Copy(io.Discard, c) }}, []string{"c1"}, "deadline"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := newProvider(context.Background(), tc.api, fakeConfig(), zerolog.Nop())
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close(context.Background())
			_, err = p.Open(context.Background(), env.OpenOptions{Run: "r", Episode: 1})
			if !errors.Is(err, env.ErrInfra) || !strings.Contains(err.Error(), tc.wantInErr) {
				t.Errorf("Open = %v, want an error wrapping env.ErrInfra and saying %q", err, tc.wantInErr)
			}
			if diff := cmp.Diff(tc.wantRemoved, tc.api.removedIDs()); diff != "" {
				t.Errorf("removed containers (-want +got):\n%s", diff)
			}
			if st := p.Stats(); st.Live != 0 {
				t.Errorf("live = %d after a failed open", st.Live)
			}
		})
	}
}

func TestNoDaemon(t *testing.T) {
	_, err := newProvider(context.Background(), &fakeAPI{pingErr: errors.New("connection refused")}, fakeConfig(), zerolog.Nop())
	if !errors.Is(err, ErrNoDaemon) || !errors.Is(err, env.ErrInfra) {
		t.Errorf("New without a daemon = %v, want an error wrapping ErrNoDaemon and env.ErrInfra", err)
	}
}

func TestAgentDies(t *testing.T) {
	api := &fakeAPI{agent: echoAgent(2)}
	p, err := newProvider(context.Background(), api, fakeConfig(), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	ctx := context.Background()
	sb, err := p.Open(ctx, env.OpenOptions{Run: "r", Episode: 1})
	if err != nil {
		t.Fatal(err)
	}
	res, err := sb.Exec(ctx, env.ExecOptions{Cmd: []string{"echo", "hi"}})
	if err != nil || string(res.Stdout) != "echo hi" {
		t.Fatalf("first Exec = %q, %v; want %q", res.Stdout, err, "echo hi")
	}
	_, err = sb.Exec(ctx, env.ExecOptions{Cmd: []string{"echo", "again"}})
	if !errors.Is(err, env.ErrInfra) {
		t.Fatalf("Exec after the agent died = %v, want an error wrapping env.ErrInfra", err)
	}
	for _, want := range []string{"OOM killed", "agent: fatal error"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if _, err := sb.ReadFile(ctx, "x"); !errors.Is(err, env.ErrInfra) {
		t.Errorf("ReadFile after the agent died = %v, want env.ErrInfra", err)
	}
	if err := sb.Close(ctx); err != nil {
		t.Errorf("Close = %v", err)
	}
	if diff := cmp.Diff([]string{"c1"}, api.removedIDs()); diff != "" {
		t.Errorf("removed (-want +got):\n%s", diff)
	}
	if st := p.Stats(); st.Live != 0 || st.Faults["agent"] != 2 {
		t.Errorf("stats = %+v, want no live sandbox and 2 agent faults", st)
	}
}

func TestCheckPath(t *testing.T) {
	tests := []struct {
		path string
		ok   bool
	}{
		{"a.go", true}, {"d/e/f.go", true}, {"./x/../y", true}, {"/workspace/a.go", true}, {"/workspace", true},
		{"", false}, {"..", false}, {"../x", false}, {"a/../../x", false}, {"/etc/passwd", false}, {"/workspace2/x", false}, {"/workspace/../etc", false},
	}
	for _, tc := range tests {
		if err := checkPath(tc.path); (err == nil) != tc.ok {
			t.Errorf("checkPath(%q) = %v, want ok %v", tc.path, err, tc.ok)
		}
	}
}
