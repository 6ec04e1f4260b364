package node

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/market/auth"
	"github.com/agora-sched/agora/market/wire"
	"github.com/agora-sched/agora/node/api"
)

// maxLogReplyBytes bounds a page of a task's output answering a query.
const maxLogReplyBytes = 1 << 20

// answer serves one query from local state.
func (n *Node) answer(q wire.Query) wire.QueryReply {
	switch q.Kind {
	case "status":
		j, ok := n.localJob(q.Job)
		if !ok {
			// A copy answers only while the job's manager is gone.
			r, found, _ := n.copies.Get(q.Job)
			if !found {
				return wire.QueryReply{}
			}
			var live bool
			if n.call(func() { live = n.mkt.Live(r.Record.Manager) }) != nil || live {
				return wire.QueryReply{}
			}
			j = r.Record
		}
		j, aerr := n.visible(q.Credential, j)
		body, err := json.Marshal(j)
		if err != nil {
			return wire.QueryReply{Error: err.Error()}
		}
		if aerr != nil {
			return wire.QueryReply{Found: true, Body: body, Error: wire.ClipText(aerr.Error(), wire.MaxErrorLen)}
		}
		return wire.QueryReply{Found: true, Body: body}
	case "logs":
		k := market.TaskKey{Job: q.Job, Task: q.Task, Replica: int(q.Replica)}
		lr, ok, err := n.ex.Log(k, int(q.Attempt), q.From, int(q.MaxBytes), n.logAllowed(q.Credential, q.Job))
		if err != nil {
			return wire.QueryReply{Found: ok, Error: wire.ClipText(err.Error(), wire.MaxErrorLen)}
		}
		if !ok {
			return wire.QueryReply{}
		}
		body, _ := json.Marshal(lr)
		return wire.QueryReply{Found: true, Body: body}
	case wire.QueryJobs:
		return n.answerJobs(q.Credential)
	case wire.QueryAcct:
		return n.answerAcct(q)
	case wire.QueryManager:
		// Only the manager's name, of a job the asker names: what it
		// needs to refuse a second acceptance of the job's ticket.
		var mgr market.NodeID
		var ok bool
		if n.call(func() { mgr, ok = n.mkt.KnownJob(q.Job) }) != nil || !ok {
			return wire.QueryReply{}
		}
		body, _ := json.Marshal(map[string]market.NodeID{"manager": mgr})
		return wire.QueryReply{Found: true, Body: body}
	case "cancel":
		found, err := n.cancelLocal(q.Job, q.Credential)
		if err != nil {
			return wire.QueryReply{Found: found, Error: err.Error()}
		}
		return wire.QueryReply{Found: found}
	}
	return wire.QueryReply{Error: "unknown query kind " + q.Kind}
}

// findJob returns a job record from this node or, failing that, from the
// first live peer that manages it, as the caller of credential cred may
// see it (see visible).
func (n *Node) findJob(ctx context.Context, id string, cred []byte) (market.JobRecord, error) {
	if j, ok := n.localJob(id); ok {
		return n.visible(cred, j)
	}
	rep, _, err := n.fanout(ctx, wire.Query{Kind: "status", Job: id, Credential: cred})
	if err != nil {
		return market.JobRecord{}, err
	}
	var j market.JobRecord
	if err := json.Unmarshal(rep.Body, &j); err != nil {
		return market.JobRecord{}, fmt.Errorf("bad job record from peer: %w", err)
	}
	if rep.Error != "" {
		return j, remoteError(rep.Error)
	}
	return j, nil
}

// fanout asks every live peer (up to query.FanoutLimit) and returns the
// first reply with Found set, and who gave it.
func (n *Node) fanout(ctx context.Context, q wire.Query) (wire.QueryReply, peer.ID, error) {
	var peers []peer.ID
	for _, m := range n.Peers() {
		peers = append(peers, m.Advert.Peer)
	}
	return n.query.Fanout(ctx, peers, q)
}

// ask sends one query to peer p.
func (n *Node) ask(ctx context.Context, p peer.ID, q wire.Query) (wire.QueryReply, error) {
	return n.query.Ask(ctx, p, q)
}

// localJob reads a job this node manages: from the market, else the store.
func (n *Node) localJob(id string) (market.JobRecord, bool) {
	// The closure's results are its own: when call gives up (the node is
	// stopping) the loop may still run it, and must not write what the
	// store lookup below writes.
	var mj market.JobRecord
	var mok bool
	if err := n.call(func() { mj, mok = n.mkt.Job(id) }); err == nil && mok {
		return mj, true
	}
	j, ok, _ := n.jobs.Get(id)
	return j, ok
}

// cancelLocal cancels a job this node manages, if the caller of
// credential cred may.
func (n *Node) cancelLocal(id string, cred []byte) (bool, error) {
	var found bool
	var owner string
	var err error
	cerr := n.call(func() {
		j, ok := n.mkt.Job(id)
		if !ok && !n.mkt.Holds(id) {
			return
		}
		found, owner = true, j.Owner
	})
	if cerr != nil || !found {
		return false, cerr
	}
	if _, err := n.authorize(cred, id, owner, auth.ActCancel); err != nil {
		return true, err
	}
	cerr = n.call(func() {
		if _, ok := n.mkt.Job(id); !ok && !n.mkt.Holds(id) {
			found = false
			return
		}
		err = n.mkt.Cancel(time.Now(), id, "cancelled by user")
	})
	if cerr != nil {
		return false, cerr
	}
	return found, err
}

// answerJobs answers a jobs query: the rows of the jobs this node
// manages that the caller of credential cred may list.
func (n *Node) answerJobs(cred []byte) wire.QueryReply {
	jobs, err := n.Jobs(api.WithCredential(n.ctx, cred))
	if err != nil {
		return wire.QueryReply{Found: true, Error: wire.ClipText(err.Error(), wire.MaxErrorLen)}
	}
	return wire.QueryReply{Found: true, Body: api.RowsAnswer(jobs, wire.MaxReplyBodyBytes-64<<10)}
}

// ClusterJobs implements api.Backend: this node's rows and those of every
// live peer that answers, each showing what the caller may list there.
func (n *Node) ClusterJobs(ctx context.Context) (api.ClusterJobs, error) {
	mine, err := n.Jobs(ctx)
	if err != nil {
		return api.ClusterJobs{}, err
	}
	var peers []peer.ID
	for _, m := range n.Peers() {
		peers = append(peers, m.Advert.Peer)
	}
	answers, missing := n.query.AskAll(ctx, peers, wire.Query{Kind: wire.QueryJobs, Credential: api.Credential(ctx)})
	return api.MergeRows(mine, answers, missing), nil
}
