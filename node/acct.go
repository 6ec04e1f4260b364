package node

import (
	"context"
	"encoding/json"
	"sort"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/market/acct"
	"github.com/agora-sched/agora/market/auth"
	"github.com/agora-sched/agora/market/wire"
	"github.com/agora-sched/agora/node/accounting"
	"github.com/agora-sched/agora/node/api"
	"github.com/agora-sched/agora/node/query"
)

// Accounting (market/acct, docs/operations.md "Accounting"): the
// executor of each attempt signs a usage record, its manager a schedule
// record; each keeps its own for the accounting retention and pushes it
// to the job's manager (usage) and acctCopies peers closest to the
// attempt, so that a record outlives the node that signed it. A query
// asks every live peer for the records the caller may see and joins them.

// DefaultAccountingRetention is how long accounting records are kept
// unless --accounting-retention says otherwise.
const DefaultAccountingRetention = 90 * 24 * time.Hour

const (
	// acctCopies is how many peers besides the manager get each record.
	acctCopies = 2
	// acctSkew is how far in the future a peer's record may end (clocks
	// differ).
	acctSkew = 10 * time.Minute
	// acctPages bounds the pages one query reads from one peer.
	acctPages = 64
)

// acctRetention is the accounting retention in force; negative: forever.
func (n *Node) acctRetention() time.Duration {
	switch r := n.cfg.AccountingRetention; {
	case r == 0:
		return DefaultAccountingRetention
	default:
		return r
	}
}

// startAccounting opens the records' store and the push protocol.
func (n *Node) startAccounting() {
	n.acct = accounting.NewStore(n.store)
	n.acctSvc = accounting.New(n.ph, n.receiveAcct)
	n.onClose(func(bool) { n.acctSvc.Close() })
}

// prover signs with the node's identity key.
func (n *Node) prover() keyProver { return keyProver{n.host.Peerstore().PrivKey(n.host.ID())} }

// usageEnded keeps the usage record of an attempt this node ran, and
// sends it to the attempt's manager and the record's copy peers.
func (n *Node) usageEnded(rec acct.Record, manager market.NodeID) {
	rec.Node, rec.Signer, rec.Site = n.self(), n.self(), n.cfg.Site
	var to []peer.ID
	if p, err := peer.Decode(string(manager)); err == nil && manager != n.self() {
		to = append(to, p)
	}
	n.account(rec, to)
}

// attemptEnded keeps the schedule record of an attempt of a job this
// node manages (market.AttemptEnded).
func (n *Node) attemptEnded(e market.AttemptEnded) {
	h := e.Attempt
	rec := acct.Record{Kind: acct.KindSchedule, Job: e.Key.Job, Task: e.Key.Task, Replica: e.Key.Replica,
		Epoch: h.Epoch, Attempt: h.Attempt, Node: h.Node, Signer: n.self(), Owner: e.Owner, Type: e.Type,
		Name: e.Name, Image: e.Image, CPUMilli: e.Request.CPU, Memory: e.Request.Memory, GPUs: e.Request.GPU.Count,
		Submitted: e.Submitted, Ready: e.Ready, Awarded: h.Awarded, Started: h.Started, Finished: h.Finished,
		State: string(h.State), ExitCode: h.ExitCode, Reason: wire.ClipText(h.Reason, acct.MaxReason)}
	if rec.Node == "" || rec.Finished.IsZero() {
		return
	}
	if !rec.Started.IsZero() && rec.Started.After(rec.Finished) {
		rec.Started = rec.Finished
	}
	n.account(rec, nil)
}

func (n *Node) self() market.NodeID { return market.NodeID(n.host.ID().String()) }

// account signs rec, keeps it and pushes it to to and the peers closest
// to its attempt. A record that does not check is a bug here: logged,
// not kept.
func (n *Node) account(rec acct.Record, to []peer.ID) {
	rec.Sign(n.prover())
	if err := rec.Check(); err != nil {
		log.Warnw("accounting record not kept", "err", err)
		return
	}
	if err := n.acct.Put(rec); err != nil {
		log.Warnw("keep accounting record", "record", rec.ID(), "err", err)
	}
	skip := map[peer.ID]bool{}
	for _, p := range to {
		skip[p] = true
	}
	to = append(to, n.closestPeers(rec.AttemptID(), acctCopies, skip)...)
	if len(to) == 0 || n.ctx.Err() != nil {
		return
	}
	n.wg.Go(func() { n.acctSvc.Spread(n.ctx, rec, to) })
}

// receiveAcct keeps what a peer pushed, as market/acct.Accept allows.
func (n *Node) receiveAcct(from market.NodeID, recs []acct.Record) accounting.Reply {
	var rep accounting.Reply
	now := time.Now()
	retention := n.acctRetention()
	if retention < 0 {
		retention = 1 << 62
	}
	for i := range recs {
		r := &recs[i]
		if err := acct.Accept(r, from, now, retention, acctSkew, n.prover()); err != nil {
			n.countRefused("bad_accounting")
			rep.Refused = append(rep.Refused, wire.ClipText(err.Error(), 512))
			continue
		}
		if err := n.acct.Put(*r); err != nil {
			rep.Refused = append(rep.Refused, "not kept: "+err.Error())
			continue
		}
		rep.Stored++
	}
	return rep
}

// acctVisible is which records the caller of credential cred may see:
// their own, or all for an admin and in an open network.
func (n *Node) acctVisible(cred []byte) (func(*acct.Record) bool, error) {
	if n.trust == nil {
		return func(*acct.Record) bool { return true }, nil
	}
	id, err := n.authorize(cred, "", "", auth.ActJobs)
	if err != nil {
		return nil, err
	}
	return func(r *acct.Record) bool { return id.Admin || r.Owner == id.Name }, nil
}

// acctPage is a QueryAcct answer's body.
type acctPage struct {
	Records []acct.Record `json:"records"`
	Next    int64         `json:"next"`
	More    bool          `json:"more"`
}

// answerAcct answers a QueryAcct from the records kept here.
func (n *Node) answerAcct(q wire.Query) wire.QueryReply {
	vis, err := n.acctVisible(q.Credential)
	if err != nil {
		return wire.QueryReply{Found: true, Error: wire.ClipText(err.Error(), wire.MaxErrorLen)}
	}
	f := acct.Filter{Job: q.Job}
	recs, next, more, err := n.acct.Page(int64(q.From), func(r *acct.Record) bool { return vis(r) && f.MatchRecord(r) },
		wire.MaxReplyBodyBytes-64<<10)
	if err != nil {
		return wire.QueryReply{Found: true, Error: wire.ClipText(err.Error(), wire.MaxErrorLen)}
	}
	body, _ := json.Marshal(acctPage{Records: recs, Next: next, More: more})
	return wire.QueryReply{Found: true, Body: body}
}

// Accounting implements api.Backend: the rows f selects, from the
// records this node and every live peer that answers keep.
func (n *Node) Accounting(ctx context.Context, f acct.Filter) (api.AcctAnswer, error) {
	cred := api.Credential(ctx)
	vis, err := n.acctVisible(cred)
	if err != nil {
		return api.AcctAnswer{}, err
	}
	from := int64(0)
	if !f.Since.IsZero() {
		from = f.Since.UnixNano()
	}
	var mu sync.Mutex
	byID := map[string]acct.Record{}
	keep := func(recs []acct.Record) {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range recs {
			if f.MatchRecord(&r) {
				byID[r.ID()] = r
			}
		}
	}
	for cursor, more := from, true; more; {
		var recs []acct.Record
		recs, cursor, more, err = n.acct.Page(cursor, func(r *acct.Record) bool { return vis(r) && f.MatchRecord(r) }, 4<<20)
		if err != nil {
			return api.AcctAnswer{}, err
		}
		keep(recs)
	}
	var ans api.AcctAnswer
	var wg sync.WaitGroup
	slots := make(chan struct{}, query.FanoutLimit)
	for _, m := range n.Peers() {
		p := m.Advert.Peer
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			cursor := from
			for range acctPages {
				rep, err := n.ask(ctx, p, wire.Query{Kind: wire.QueryAcct, Job: f.Job, From: uint64(max(cursor, 0)), Credential: cred})
				var page acctPage
				if err == nil && rep.Error == "" {
					err = json.Unmarshal(rep.Body, &page)
				}
				if err != nil || rep.Error != "" {
					mu.Lock()
					ans.Unreachable = append(ans.Unreachable, p.String())
					mu.Unlock()
					return
				}
				keep(page.Records)
				if !page.More || page.Next <= cursor {
					return
				}
				cursor = page.Next
			}
		})
	}
	wg.Wait()
	recs := make([]acct.Record, 0, len(byID))
	for _, r := range byID {
		recs = append(recs, r)
	}
	ans.Attempts = acct.Select(recs, f)
	return ans, nil
}

// RecentHere implements web.Source: the attempts this node ran that
// ended since since, newest first, at most limit, from its own records
// only (the node page asks no peer), as far as the caller may see them.
func (n *Node) RecentHere(ctx context.Context, since time.Time, limit int) ([]acct.Attempt, error) {
	vis, err := n.acctVisible(api.Credential(ctx))
	if err != nil {
		return nil, err
	}
	f := acct.Filter{Node: string(n.self()), Since: since}
	var all []acct.Record
	for cursor, more := since.UnixNano(), true; more; {
		var recs []acct.Record
		recs, cursor, more, err = n.acct.Page(cursor, func(r *acct.Record) bool { return vis(r) && f.MatchRecord(r) }, 4<<20)
		if err != nil {
			return nil, err
		}
		all = append(all, recs...)
	}
	atts := acct.Select(all, f)
	sort.SliceStable(atts, func(i, j int) bool { return atts[i].End.After(atts[j].End) })
	if len(atts) > limit {
		atts = atts[:limit]
	}
	return atts, nil
}

// Report implements api.Backend: the report over the rows f selects,
// against the CPUs of this node and the peers it sees.
func (n *Node) Report(ctx context.Context, f acct.Filter) (api.ReportAnswer, error) {
	ans, err := n.Accounting(ctx, f)
	if err != nil {
		return api.ReportAnswer{}, err
	}
	cpus := float64(n.capacity.CPU) / 1000
	for _, m := range n.Peers() {
		cpus += float64(m.Advert.Capacity.CPU) / 1000
	}
	return api.ReportAnswer{Report: acct.MakeReport(ans.Attempts, f.Since, f.Until, cpus, nil), Unreachable: ans.Unreachable}, nil
}

// accountingLoop deletes records past the accounting retention.
func (n *Node) accountingLoop() {
	retention := n.acctRetention()
	n.sweepLoop(retention, func(now time.Time) {
		if gone, err := n.acct.Sweep(now.Add(-retention)); err != nil {
			log.Warnw("expire accounting records", "err", err)
		} else if gone > 0 {
			log.Debugw("accounting records expired", "count", gone)
		}
	})
}
