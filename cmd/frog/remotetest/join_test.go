package remotetest

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"

	"github.com/frognano/frog/actors/wire"
)

// joinProbe is a worker that only joins: it sends the trainer each Join
// the test gives it, as its own request, hands the answers to the test,
// and answers the trainer's heartbeats so that it is not counted silent.
// The episodes placed on it never end.
type joinProbe struct {
	trainer *actor.PID
	answers chan *wire.JoinAnswer
}

func (p *joinProbe) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *wire.Join:
		c.Request(p.trainer, m)
	case *wire.JoinAnswer:
		p.answers <- m
	case *wire.Heartbeat:
		c.Request(p.trainer, &wire.Heartbeat{UnixNano: time.Now().UnixNano()})
	}
}

// A worker whose answer to its Join is slow asks again with the same
// join_id: the trainer answers as before and counts neither a second
// worker nor a loss (a loss would re-admit the worker's episodes, which it
// still plays). A Join with a new join_id from the same address is a
// worker started again: the first is lost. This test process is the
// probe's one remote (ownProcess).
func TestRepeatedJoinIsTheSameWorker(t *testing.T) {
	if !ownProcess(t) {
		return
	}
	addr := freeAddr(t)
	trainer := startFrog(t, "sim", "--listen", addr, "--local-slots", "4", "--await-workers", "1", "--episodes", "400",
		"--concurrency", "8", "--time-scale", "0", "--json", "--no-run-dir")
	system := actor.NewActorSystem()
	rem := remote.NewRemote(system, remote.Configure("127.0.0.1", 0))
	rem.Start()
	// Not graceful: its suspension of the reader races (as frog's own
	// remotes stop).
	stop := sync.OnceFunc(func() { rem.Shutdown(false) })
	defer stop()
	answers := make(chan *wire.JoinAnswer, 64)
	probe := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor {
		return &joinProbe{trainer: actor.NewPID(addr, "scheduler"), answers: answers}
	}))
	build := cliVersion(t)
	join := func(id uint64) *wire.Join {
		return &wire.Join{Schema: wire.Schema, Build: build, Name: "probe", Slots: 2, JoinId: id}
	}
	// answer waits for the answer to a join with id, passing over late
	// answers to the joins made before it (the trainer echoes the id).
	answer := func(what string, id uint64, within time.Duration) *wire.JoinAnswer {
		t.Helper()
		for deadline := time.After(within); ; {
			select {
			case a := <-answers:
				if a.JoinId != id {
					continue
				}
				if !a.Accepted {
					t.Fatalf("%s: refused: %s", what, a.Reason)
				}
				return a
			case <-deadline:
				return nil
			}
		}
	}
	// As a worker does: ask until the trainer listens and answers.
	for deadline := time.Now().Add(time.Minute); ; {
		if time.Now().After(deadline) {
			t.Fatalf("no answer to a join within a minute; trainer's stderr:\n%s", trainer.stderr.String())
		}
		system.Root.Send(probe, join(7))
		if answer("the first join", 7, 500*time.Millisecond) != nil {
			break
		}
	}
	next := func(what string, id uint64) {
		t.Helper()
		system.Root.Send(probe, join(id))
		if answer(what, id, time.Minute) == nil {
			t.Fatalf("%s: no answer within a minute", what)
		}
	}
	next("the same join again", 7)
	next("a join with a new id", 9)
	stop()

	rep := trainerReport(t, trainer)
	rs := rep.Scheduler.Remote
	if e := rep.Episodes; !e.Accounted || e.Admitted != 400 || e.Completed != 400 {
		t.Errorf("episodes %+v: want 400 admitted and completed", e)
	}
	if rs == nil || rs.Joined != 2 || rs.Lost != 2 || len(rs.Workers) != 2 {
		t.Fatalf("remote %+v: want 2 joined (join ids 7 and 9), both lost", rs)
	}
	if w := rs.Workers[0]; w.Lost != "it joined again" || w.MsgsIn < 2 {
		t.Errorf("the first join: %+v: want lost to the new id, its repeated joins counted in; trainer's stderr:\n%s", w, trainer.stderr.String())
	}
	if w := rs.Workers[1]; !strings.Contains(w.Lost, "connection ended") {
		t.Errorf("the second join: %+v: want lost when its connection ended", w)
	}
}
