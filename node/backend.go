package node

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/gossip"
	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/market/auth"
	"github.com/agora-sched/agora/market/spec"
	"github.com/agora-sched/agora/market/wire"
	"github.com/agora-sched/agora/node/api"
	"github.com/agora-sched/agora/node/data"
	"github.com/agora-sched/agora/node/executor"
	"github.com/agora-sched/agora/node/query"
	"github.com/agora-sched/agora/node/web"
)

// The node as the HTTP API's backend (api.Backend): each request is a
// call on the loop, or a question to the peers.

// startAPI serves the HTTP API on the node's API listener.
func (n *Node) startAPI() error {
	var token string // none with --trust: requests are signed
	if n.trust == nil {
		var err error
		if token, err = api.LoadOrCreateToken(n.cfg.DataDir, rand.Reader); err != nil {
			return configErr("API token: %v", err)
		}
	}
	g := api.GuardFor(n.APIAddr(), token)
	sessions, err := api.NewSessions(n.ID().String(), rand.Reader, time.Now)
	if err != nil {
		return err
	}
	g.Sessions = sessions
	n.api = api.New(n, promhttp.HandlerFor(n.reg, promhttp.HandlerOpts{}), g)
	n.api.ServeData(n.data)
	n.api.ServeUI(web.Handler(n))
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		if err := n.api.Serve(n.apiLn); err != nil {
			log.Errorw("API server stopped", "err", err)
		}
	}()
	n.onClose(func(bool) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = n.api.Shutdown(ctx)
		cancel()
	})
	if n.cfg.PublishAPIToken {
		if err := n.api.Publish(n.APIAddr()); err != nil {
			return err
		}
	}
	// Last: a client that finds api.addr finds the token and a node that
	// answers.
	if err := os.WriteFile(filepath.Join(n.cfg.DataDir, apiAddrFile), []byte(n.APIAddr()+"\n"), 0o600); err != nil {
		return configErr("write %s: %v", apiAddrFile, err)
	}
	return nil
}

// Identity implements api.Backend.
func (n *Node) Identity() (string, []string) {
	var addrs []string
	for _, a := range n.Addrs() {
		addrs = append(addrs, a.String())
	}
	return n.host.ID().String(), addrs
}

// Peers lists every other live peer from the membership view.
func (n *Node) Peers() []gossip.Member { return n.gossip.Members() }

// Connection says how the host is connected to peer id: "direct" when
// any connection is not limited (relayed), "relayed" when all are,
// "none" when there are none.
func (n *Node) Connection(id string) string {
	p, err := peer.Decode(id)
	if err != nil {
		return "none"
	}
	kind := "none"
	for _, c := range n.host.Network().ConnsToPeer(p) {
		if !c.Stat().Limited {
			return "direct"
		}
		kind = "relayed"
	}
	return kind
}

// Capacity is the node's resource vector (discovered, then overridden).
func (n *Node) Capacity() resource.Vector { return n.capacity }

// Free is what of the node's capacity tasks have not taken.
func (n *Node) Free() resource.Vector {
	return n.soft.Load().Free.Clone()
}

func newJobID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "j-" + hex.EncodeToString(b[:])
}

// Submit implements api.Backend: the job is accepted once its record's
// first copies are stored on its replica peers, so that it survives this
// node from the moment its submitter hears it was accepted.
func (n *Node) Submit(ctx context.Context, js spec.Job) (string, error) {
	if n.trust != nil {
		n.countRefused(market.RefuseSubmission)
		return "", fmt.Errorf("%w: this network runs signed jobs only: give --credential FILE (or set $AGORA_CREDENTIAL)", api.ErrForbidden)
	}
	if err := n.writable(); err != nil {
		return "", err
	}
	if err := n.pinImages(ctx, &js); err != nil {
		return "", err
	}
	id := newJobID()
	return n.accept(ctx, id, api.ErrRefused, func(now time.Time) error { return n.mkt.Submit(now, id, js) })
}

// PinImage implements api.Backend: the ID of the image this node's
// engine holds under ref.
func (n *Node) PinImage(ctx context.Context, ref string) (api.ImageResponse, error) {
	e := executor.EngineOf(n.cfg.Runner)
	if e == nil {
		return api.ImageResponse{}, fmt.Errorf("%w: image %s: this node has no container runtime to resolve it with: ask a node that holds the image, or give image_id", api.ErrRefused, ref)
	}
	t := spec.Task{Image: ref}
	t.RequireContainer()
	if err := spec.CheckImage(&t); err != nil {
		return api.ImageResponse{}, fmt.Errorf("%w: %v", api.ErrRefused, err)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	id, err := e.ImageID(ctx, ref)
	if err != nil {
		return api.ImageResponse{}, fmt.Errorf("%w: image %s is not on this node: %v", api.ErrRefused, ref, err)
	}
	size, err := e.ImageSize(ctx, id)
	if err != nil {
		log.Warnw("image size", "image", ref, "err", err) // a hint only: placement does without
	}
	n.images.refreshSoon() // an image pinned is likely new here: advertise it
	return api.ImageResponse{Image: ref, ID: id, Size: min(size, spec.MaxImageSize)}, nil
}

// pinImages gives each image task of js that has no image_id the ID of
// the image this node holds under its reference.
func (n *Node) pinImages(ctx context.Context, js *spec.Job) error {
	for i := range js.Tasks {
		t := &js.Tasks[i]
		if t.Image == "" || t.ImageID != "" {
			continue
		}
		img, err := n.PinImage(ctx, t.Image)
		if err != nil {
			return fmt.Errorf("tasks[%d].image: %w", i, err)
		}
		t.ImageID = img.ID
		if t.ImageSize == 0 {
			t.ImageSize = img.Size
		}
	}
	return nil
}

// SubmitTicket implements api.Backend. In an open network the ticket's
// spec is submitted as a plain one: there is no authority to check it
// against.
func (n *Node) SubmitTicket(ctx context.Context, raw []byte) (string, error) {
	t, err := auth.DecodeTicket(raw)
	if err != nil {
		return "", fmt.Errorf("%w: %v", api.ErrRefused, err)
	}
	if n.trust == nil {
		js, err := spec.FromCanonical(t.Spec)
		if err != nil {
			return "", fmt.Errorf("%w: %v", api.ErrRefused, err)
		}
		return n.Submit(ctx, *js)
	}
	if err := n.writable(); err != nil {
		return "", err
	}
	id := t.JobID()
	// A ticket is accepted once in the network: its job's record lives
	// with its manager and, from before the submission is answered, with
	// the peers closest to its ID. Ask them first.
	if mgr, ok := n.managerOf(ctx, id); ok {
		return "", &api.Existing{ID: id, Manager: string(mgr)}
	}
	n.checks.PrepareSubmission(raw) // on this request's goroutine, not the loop
	jid, err := n.accept(ctx, id, api.ErrForbidden, func(now time.Time) error {
		_, err := n.mkt.SubmitTicket(now, raw)
		var dup *market.Submitted
		if err != nil && !errors.As(err, &dup) {
			n.countRefused(market.RefuseSubmission)
		}
		return err
	})
	var dup *market.Submitted
	if errors.As(err, &dup) {
		return "", &api.Existing{ID: dup.Job, Manager: string(dup.Manager)}
	}
	return jid, err
}

// managerOf is the manager of job id as this node or the peers closest
// to the ID (those that hold its record's copies) know it.
func (n *Node) managerOf(ctx context.Context, id string) (market.NodeID, bool) {
	var mgr market.NodeID
	var ok bool
	if n.call(func() { mgr, ok = n.mkt.KnownJob(id) }) != nil || ok {
		return mgr, ok
	}
	var view []market.NodeID
	for _, m := range n.Peers() {
		view = append(view, market.NodeID(m.Advert.Peer.String()))
	}
	var peers []peer.ID
	for _, p := range market.Closest(id, view, managerAsk) {
		if pid, err := peer.Decode(string(p)); err == nil {
			peers = append(peers, pid)
		}
	}
	if len(peers) == 0 {
		return "", false
	}
	ctx, cancel := context.WithTimeout(ctx, n.mkt.Config().QueryTimeout)
	defer cancel()
	answers, _ := n.query.AskAll(ctx, peers, wire.Query{Kind: wire.QueryManager, Job: id})
	for _, p := range peers {
		var a struct {
			Manager market.NodeID `json:"manager"`
		}
		if b, found := answers[p.String()]; found && json.Unmarshal(b, &a) == nil && a.Manager != "" {
			return a.Manager, true
		}
	}
	return "", false
}

// managerAsk is how many of the peers closest to a ticket's job ID a node
// asks before it accepts the ticket: the job's replica set, with room for
// the manager among them and for views that differ a little.
const managerAsk = 5

// accept runs submit on the loop and waits for the job's first copies;
// a refusal is wrapped in refused.
func (n *Node) accept(ctx context.Context, id string, refused error, submit func(time.Time) error) (string, error) {
	copied := n.copied.wait(id)
	defer n.copied.forget(id)
	var serr error
	// The first copies go out in the turn's Ready: whether they did is
	// known after it.
	copying := make(chan bool, 1)
	if err := n.call(func() {
		if serr = submit(time.Now()); serr == nil {
			n.afterTurn = append(n.afterTurn, func() { copying <- n.mkt.Copying(id) })
		}
	}); err != nil {
		return "", err
	}
	if serr != nil {
		return "", fmt.Errorf("%w: %v", refused, serr)
	}
	var sent bool
	select {
	case sent = <-copying:
	case <-ctx.Done():
	case <-n.ctx.Done():
	}
	if sent {
		select {
		case <-copied:
		case <-time.After(2 * n.mkt.Config().QueryTimeout):
		case <-ctx.Done():
		}
	}
	n.met.submitted.Inc()
	log.Infow("job submitted", "job", id)
	return id, nil
}

// Jobs implements api.Backend.
func (n *Node) Jobs(ctx context.Context) ([]market.JobRecord, error) {
	shown, err := n.mayList(ctx)
	if err != nil {
		return nil, err
	}
	var jobs []market.JobRecord
	if err := n.call(func() { jobs = append(n.mkt.Jobs(), n.mkt.Held()...) }); err != nil {
		return nil, err
	}
	out := jobs[:0]
	for _, j := range jobs {
		if shown(j) {
			out = append(out, j)
		}
	}
	return out, nil
}

// Job implements api.Backend.
func (n *Node) Job(ctx context.Context, id string) (market.JobRecord, error) {
	return n.findJob(ctx, id, api.Credential(ctx))
}

// Cancel implements api.Backend.
func (n *Node) Cancel(ctx context.Context, id string) error {
	cred := api.Credential(ctx)
	found, err := n.cancelLocal(id, cred)
	if found {
		return err
	}
	rep, _, ferr := n.fanout(ctx, wire.Query{Kind: "cancel", Job: id, Credential: cred})
	if ferr != nil {
		return api.ErrNotFound
	}
	if rep.Error != "" {
		return remoteError(rep.Error)
	}
	return nil
}

// remoteError is an error a peer answered a query with; a refusal stays
// one.
func remoteError(msg string) error {
	if rest, ok := strings.CutPrefix(msg, api.ErrForbidden.Error()+": "); ok {
		return fmt.Errorf("%w: %s", api.ErrForbidden, rest)
	}
	return errors.New(msg)
}

// TaskLog implements api.Backend.
func (n *Node) TaskLog(ctx context.Context, node market.NodeID, k market.TaskKey, attempt int, from uint64) (api.LogPage, bool, error) {
	cred := api.Credential(ctx)
	if node == market.NodeID(n.host.ID().String()) {
		return n.ex.Log(k, attempt, from, maxLogReplyBytes, n.logAllowed(cred, k.Job))
	}
	p, err := peer.Decode(string(node))
	if err != nil {
		return api.LogPage{}, false, err
	}
	rep, err := n.ask(ctx, p, wire.Query{Kind: "logs", Job: k.Job, Task: k.Task, Replica: int32(k.Replica), Attempt: int32(attempt), From: from, MaxBytes: maxLogReplyBytes, Credential: cred})
	if err != nil || !rep.Found {
		return api.LogPage{}, false, err
	}
	if rep.Error != "" {
		return api.LogPage{}, true, remoteError(rep.Error)
	}
	var lp api.LogPage
	if err := json.Unmarshal(rep.Body, &lp); err != nil {
		return api.LogPage{}, false, err
	}
	return lp, true, nil
}

// Events returns the lines of a job's event log kept on this node.
func (n *Node) Events(job string) []string {
	n.syncEvents()
	var out []string
	from := uint64(1)
	for {
		chunks, next, err := n.store.ReadLog(eventsStream(job), from, 0)
		if err != nil || len(chunks) == 0 {
			return out
		}
		for _, c := range chunks {
			out = append(out, strings.TrimRight(string(c.Data), "\n"))
		}
		from = next
	}
}

// JobRecord returns the full record of a job this node manages.
func (n *Node) JobRecord(id string) (market.JobRecord, bool) { return n.localJob(id) }

// ReplicaRecord returns the copy of a job record this node holds for the
// job's manager — what it would answer status queries with while the
// manager is gone, and take the job over from — if it holds one.
func (n *Node) ReplicaRecord(id string) (market.JobRecord, bool) {
	r, ok, err := n.copies.Get(id)
	if err != nil || !ok {
		return market.JobRecord{}, false
	}
	return r.Record, true
}

// Executions lists the attempts of a job's tasks this node ran or runs.
func (n *Node) Executions(job string) ([]executor.Execution, error) { return n.ex.Executions(job) }

// closestPeers returns up to r live peers not in skip, closest to key
// first (market.Closest; every one, at most query.FanoutLimit, when r <
// 0): a checkpoint's replica peers.
func (n *Node) closestPeers(key string, r int, skip map[peer.ID]bool) []peer.ID {
	byID := map[market.NodeID]peer.ID{}
	var ids []market.NodeID
	for _, m := range n.Peers() {
		if p := m.Advert.Peer; !skip[p] && p != n.host.ID() {
			id := market.NodeID(p.String())
			byID[id] = p
			ids = append(ids, id)
		}
	}
	if r < 0 || r > query.FanoutLimit {
		r = query.FanoutLimit
	}
	var out []peer.ID
	for _, id := range market.Closest(key, ids, r) {
		out = append(out, byID[id])
	}
	return out
}

// Data is the node's data service (task outputs and uploads).
func (n *Node) Data() *data.Service { return n.data }
