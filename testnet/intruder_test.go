package testnet

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/market/auth"
	"github.com/agora-sched/agora/market/wire"
	"github.com/agora-sched/agora/node"
	"github.com/agora-sched/agora/node/admission"
	"github.com/agora-sched/agora/node/checkpoints"
	"github.com/agora-sched/agora/node/replication"
	"github.com/agora-sched/agora/node/transport"
	"github.com/agora-sched/agora/runtime/checkpoint"
	"github.com/agora-sched/agora/store"
	"github.com/agora-sched/agora/testnet/waitfor"
)

// intruder is a libp2p host that is no testnet node: it speaks to the
// nodes through the real encoders of each protocol, and says what it
// likes.
type intruder struct {
	t    *testing.T
	h    host.Host
	repl *replication.Service
	ck   *checkpoints.Service
	dir  string
}

// newIntruder starts an intruder with a fresh identity; with au it holds
// a node certificate of that authority (an admitted node gone bad),
// without it none (an outsider).
func newIntruder(t *testing.T, au *Authority) *intruder {
	t.Helper()
	h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"), libp2p.DisableRelay())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	st, err := store.Open(t.TempDir(), store.InMemory())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	in := &intruder{t: t, h: h, dir: t.TempDir()}
	if au != nil {
		adm, err := admission.New(h, admission.Options{Book: au.Book(), Chain: au.Chain(h.ID().String(), "lab")})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(adm.Close)
	}
	copies := store.NewBucket[replication.Copy](st, "replicas").AllowLarge(replication.MaxFrame+4<<10).
		WithCodec(replication.EncodeCopy, replication.DecodeCopy)
	in.repl = replication.New(h, replication.Options{Copies: copies,
		Check: func(market.NodeID, market.JobRecord, *market.HeldCopy) error { return nil }})
	in.ck = checkpoints.New(h, st, nil)
	return in
}

func (in *intruder) id() market.NodeID { return market.NodeID(in.h.ID().String()) }

// connect dials nd; an outsider's connection may be cut at once.
func (in *intruder) connect(nd *Node) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = in.h.Connect(ctx, peer.AddrInfo{ID: nd.ID(), Addrs: nd.Addrs()})
}

// send writes msgs to nd's market stream, encoded and framed as a node's
// transport does; errors are the refusal it meets.
func (in *intruder) send(nd *Node, msgs ...market.Msg) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := in.h.NewStream(ctx, nd.ID(), transport.MarketProtocol)
	if err != nil {
		return err
	}
	defer s.Close()
	var b []byte
	for _, m := range msgs {
		e, err := wire.Encode(m)
		if err != nil {
			in.t.Fatalf("encode %s: %v", market.Kind(m), err)
		}
		b = binary.AppendUvarint(b, uint64(len(e)))
		b = append(b, e...)
	}
	_, err = s.Write(b)
	return err
}

// pushRecord pushes a job-record copy to nd as a manager replicates one.
func (in *intruder) pushRecord(nd *Node, rec market.JobRecord) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := in.repl.Push(ctx, []market.ReplicaCopy{{Record: rec, Peers: []market.NodeID{market.NodeID(nd.ID().String())}}})
	return err
}

// pushManifest snapshots a directory holding planted as the checkpoint
// of key at epoch and pushes it to nd as an executor does.
func (in *intruder) pushManifest(nd *Node, key market.TaskKey, epoch, seq uint64) error {
	dir := filepath.Join(in.dir, fmt.Sprint(seq))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		in.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "model.pt"), []byte("planted"), 0o600); err != nil {
		in.t.Fatal(err)
	}
	cs := in.ck.Store()
	m, _, err := checkpoint.Snapshot(dir, checkpoint.Meta{Job: key.Job, Task: key.Task, Replica: key.Replica, Epoch: epoch, Seq: seq, Created: time.Now()}, cs)
	if err != nil {
		in.t.Fatal(err)
	}
	raw, err := checkpoint.EncodeManifest(m)
	if err != nil {
		in.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return in.ck.PushTo(ctx, nd.ID(), *checkpoints.KeyOf(key), m, raw)
}

// attackNet is two admitted nodes, A (labelled n=a) and B, and a job J
// that A manages running on B, with a backlog queued on A.
type attackNet struct {
	x    *Authority
	a, b *Node
	job  string
	rec  market.JobRecord
}

func newAttackNet(t *testing.T) *attackNet {
	x := NewAuthority(t)
	net := New(t, 2, Options{Topology: Star, Resources: func(i int) string { return "cpu: 2\nmemory: 4GiB\ngpus: []\n" },
		Configure: func(i int, c *node.Config) {
			x.Admit(c, "lab")
			c.Labels = map[string]string{"n": string(rune('a' + i))}
		}})
	ops := x.User("ops", true, auth.NoQuota)
	an := &attackNet{x: x, a: net.Node(0), b: net.Node(1)}
	an.a.SetCredential(&ops)
	an.b.SetCredential(&ops)
	waitfor.Cond(t, 10*time.Second, "A and B to see each other", func() bool { return has(an.a.Peers(), an.b) && has(an.b.Peers(), an.a) })
	var err error
	if an.job, err = an.a.Submit(`{"name": "j", "tasks": [{"name": "t", "command": ["sleep", "6"], "retries": 0, "resources": {"cpu": "2", "labels": {"n": "b"}}}]}`); err != nil {
		t.Fatal(err)
	}
	if _, err := an.a.Submit(`{"name": "backlog", "tasks": [{"name": "t", "replicas": 4, "command": ["sleep", "2"], "resources": {"cpu": "2", "labels": {"n": "a"}}}]}`); err != nil {
		t.Fatal(err)
	}
	waitfor.Cond(t, 10*time.Second, "J to run on B and its record to reach B", func() bool {
		exs, _ := an.b.Executions(an.job)
		_, copied := an.b.ReplicaRecord(an.job)
		return len(exs) == 1 && copied
	})
	an.rec, _ = an.a.JobRecord(an.job)
	return an
}

// attacks are what an intruder tries against the network: each returns
// the node it aimed at.
func (an *attackNet) attacks(in *intruder) map[string]func() error {
	rec, a, b := an.rec, an.a, an.b
	t := rec.Tasks[0]
	id := market.AuctionID{Key: t.Key, Epoch: t.Epoch}
	ts, _ := rec.Spec.Task(t.Key.Task)
	spec := market.TaskSpec{TaskOffer: market.TaskOffer{Key: t.Key, Request: ts.Request}, Command: []string{"sh", "-c", "echo owned > /tmp/agora-intruder"},
		Epoch: t.Epoch + 1, Attempt: 1, Owner: rec.Owner}
	return map[string]func() error{
		// A's award of J to B, copied and sent again by the intruder.
		"replayed award": func() error {
			return in.send(b, market.Award{Auction: id, Manager: market.NodeID(a.ID().String()), Task: spec, Last: true, Ticket: rec.Ticket,
				Bid: market.Bid{Auction: id, Bidder: market.NodeID(b.ID().String())}})
		},
		// An award of a signed job for an auction B never bid in.
		"unsolicited award": func() error {
			next := market.AuctionID{Key: t.Key, Epoch: t.Epoch + 1}
			return in.send(b, market.Award{Auction: next, Manager: in.id(), Task: spec, Last: true, Ticket: rec.Ticket,
				Bid: market.Bid{Auction: next, Bidder: market.NodeID(b.ID().String())}})
		},
		// J's record, naming the intruder its manager, and a record of
		// a job nobody signed.
		"pushed job record": func() error {
			moved := rec.Clone()
			moved.Manager = in.id()
			if err := in.pushRecord(b, moved); err == nil {
				return fmt.Errorf("J's record naming the intruder its manager was stored")
			}
			forged := rec.Clone()
			forged.ID, forged.Manager, forged.Ticket = "j-intruder", in.id(), nil
			if err := in.pushRecord(a, forged); err == nil {
				return fmt.Errorf("an unsigned record was stored")
			}
			return nil
		},
		// J's task reported succeeded by a node that does not run it.
		"forged report": func() error {
			return in.send(a, market.TaskStatus{Key: t.Key, Epoch: t.Epoch, Node: in.id(), State: market.TaskSucceeded},
				market.TaskStatus{Key: t.Key, Epoch: t.Epoch + 5, Node: in.id(), State: market.TaskSucceeded})
		},
		// A thief from outside A's view asks for A's backlog.
		"steal request": func() error {
			return in.send(a, market.StealRequest{Thief: in.id(), Room: resource.Request{CPU: 64000, Memory: 1 << 40}, Max: 8})
		},
		// A checkpoint of J's task with the highest seq, and one whose
		// seq is not of its epoch.
		"checkpoint manifest": func() error {
			_ = in.pushManifest(b, t.Key, 99, 99<<32|1)
			if err := in.pushManifest(a, t.Key, 7, 99<<32|2); err == nil {
				return fmt.Errorf("a manifest whose seq is not of its epoch was kept")
			}
			return nil
		},
	}
}

// unharmed checks that J ran once, on B, and succeeded; that nothing but
// J and the backlog ran anywhere; that B's copy of J still names A; and
// that neither node manages a job it was not given.
func (an *attackNet) unharmed(t *testing.T) {
	t.Helper()
	st := waitJob(t, an.a, an.job, 30*time.Second)
	if st.State != "succeeded" {
		t.Fatalf("J ended %s: %s", st.State, st.Reason)
	}
	rec, _ := an.a.JobRecord(an.job)
	if n := len(rec.Tasks[0].History); n != 1 || rec.Tasks[0].Epoch != an.rec.Tasks[0].Epoch {
		t.Fatalf("J's task: %d attempts, epoch %d (was %d): %+v", n, rec.Tasks[0].Epoch, an.rec.Tasks[0].Epoch, rec.Tasks[0].History)
	}
	if exs, _ := an.a.Executions(an.job); len(exs) > 0 {
		t.Fatal("J ran on A")
	}
	if exs, _ := an.b.Executions(an.job); len(exs) != 1 {
		t.Fatalf("J ran %d times on B", len(exs))
	}
	if cp, ok := an.b.ReplicaRecord(an.job); !ok || cp.Manager != market.NodeID(an.a.ID().String()) {
		t.Fatalf("B's copy of J: held %v, manager %s", ok, cp.Manager)
	}
	for _, nd := range []*Node{an.a, an.b} {
		code, body, err := nd.API("GET", "/v1/jobs", nil)
		if err != nil || code != 200 {
			t.Fatalf("jobs on node %d: %d %v", nd.Index, code, err)
		}
		var jobs []struct{ ID, Name string }
		if err := json.Unmarshal(body, &jobs); err != nil {
			t.Fatal(err)
		}
		for _, j := range jobs {
			if j.Name != "j" && j.Name != "backlog" {
				t.Fatalf("node %d manages a job %q it was not given", nd.Index, j.Name)
			}
			if nd == an.b {
				t.Fatalf("B manages job %s", j.Name)
			}
		}
	}
	if _, err := os.Stat("/tmp/agora-intruder"); err == nil {
		t.Fatal("the intruder's command ran")
	}
}

// TestOutsiderChangesNothing: an outsider with a fresh identity (one per
// attempt, so that each meets the door anew) replays an admitted node's
// award, sends an unsolicited award, pushes job records, forges a task
// report, asks for A's backlog and pushes checkpoint manifests, through
// the real wire encoders. Nothing runs, nothing is adopted, J runs once
// and succeeds, and each attempt is counted on /metrics by reason.
func TestOutsiderChangesNothing(t *testing.T) {
	an := newAttackNet(t)
	attempts := 0
	for name := range an.attacks(nil) {
		in := newIntruder(t, nil)
		in.connect(an.a)
		in.connect(an.b)
		_ = an.attacks(in)[name]() // refused at the door: no answer to expect
		attempts++
	}
	an.unharmed(t)
	door := 0.0
	for _, nd := range []*Node{an.a, an.b} {
		m := scrape(t, nd)
		door += m[`agora_refused_total{reason="no_certificate"}`] + m[`agora_refused_total{reason="unadmitted_stream"}`]
	}
	// Each outsider meets both nodes: at least one refusal per attempt.
	if door < float64(attempts) {
		t.Fatalf("%v refusals at the door for %d attempts", door, attempts)
	}
}

// TestInsiderChecks: the same attempts by a node that holds a valid
// certificate (an admitted node gone bad) pass the door and meet the
// core's checks: each is refused, counted by its reason, and changes
// nothing.
func TestInsiderChecks(t *testing.T) {
	an := newAttackNet(t)
	in := newIntruder(t, an.x)
	in.connect(an.a)
	in.connect(an.b)
	attacks := an.attacks(in)
	for _, name := range []string{"replayed award", "unsolicited award", "pushed job record", "forged report", "steal request", "checkpoint manifest"} {
		if err := attacks[name](); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	reasons := map[string]*Node{
		market.RefuseSender: an.b, market.RefuseUnbid: an.b, market.RefuseRecord: nil,
		market.RefuseReport: an.a, market.RefuseSteal: an.a, checkpoints.RefusedManifest: an.a,
	}
	waitfor.Cond(t, 10*time.Second, "every attempt to be counted", func() bool {
		for reason, nd := range reasons {
			n := 0.0
			for _, x := range []*Node{an.a, an.b} {
				if nd == nil || nd == x {
					n += scrape(t, x)[fmt.Sprintf(`agora_refused_total{reason=%q}`, reason)]
				}
			}
			if n == 0 {
				return false
			}
		}
		return true
	})
	an.unharmed(t)
}
