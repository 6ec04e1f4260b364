package node

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/market/wire"
)

// JobRecordProtocol carries job-record replicas from a manager to the
// peers that would take over its jobs: one frame of JSON
// {"record": <JobRecord>, "replicas": [<node id>, ...]} and one reply
// {"ok": true} or {"error": "..."} per stream.
const JobRecordProtocol = protocol.ID("/agora/jobrecord/1.0.0")

// Limits and timings of job failover.
const (
	jobReplicas        = 2                      // r: replicas of each job record
	maxJobRecordFrame  = 16 << 20               // bytes: a record of spec.MaxJobReplicas replicas, every retry used, with room
	replicateEvery     = 200 * time.Millisecond // batching of record updates
	failoverCheckEvery = time.Second
	rehomeFor          = 30 * time.Second // how long an executor looks for a new manager
)

// replicaRecord is a job record held for another manager.
type replicaRecord struct {
	Record   market.JobRecord `json:"record"`
	Replicas []string         `json:"replicas"`
	Updated  time.Time        `json:"updated"`
}

type jobReplicaMsg struct {
	Record   market.JobRecord `json:"record"`
	Replicas []string         `json:"replicas"`
}

type failover struct {
	mu      sync.Mutex
	pending map[string]market.JobRecord // records waiting to be replicated
	// tries counts, per job, the batches in a row whose replication of
	// its latest record fell short (retryShort).
	tries  map[string]int
	rehome map[string]bool // jobs whose new manager is being looked for
	// open indexes the unfinished replicas this node holds: job ID → the
	// record's manager and replica set, all checkFailover needs, so that
	// the check does not decode every stored record, finished ones
	// included, every second. Kept under mu, in step with the store.
	open map[string]openReplica
	// done queues the finished replicas by finish time, for
	// expireReplicas (retention.go). Kept under mu.
	done doneHeap
	// boots is, per job this node executes tasks of, its manager's boot
	// counter when first seen (failoverLoop's goroutine only).
	boots map[string]uint64
}

// openReplica is what checkFailover needs of an unfinished replica.
type openReplica struct {
	manager  string
	replicas []string
}

// noteReplicas updates the index of unfinished replicas after recs were
// stored.
func (f *failover) noteReplicas(recs ...replicaRecord) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range recs {
		if r.Record.State.Terminal() {
			delete(f.open, r.Record.ID)
			f.noteDone(r)
		} else {
			f.open[r.Record.ID] = openReplica{manager: string(r.Record.Manager), replicas: r.Replicas}
		}
	}
}

// loadReplicaIndex builds the index of unfinished replicas from the store,
// once, at start.
func (n *Node) loadReplicaIndex() error {
	return n.replicas.Scan("", func(_ string, r replicaRecord) (bool, error) {
		n.fo.noteReplicas(r)
		return true, nil
	})
}

// closest orders ids by XOR distance between SHA-256 of the id and of key.
func closest(key string, ids []string) []string {
	k := sha256.Sum256([]byte(key))
	dist := func(id string) [32]byte {
		h := sha256.Sum256([]byte(id))
		for i := range h {
			h[i] ^= k[i]
		}
		return h
	}
	out := append([]string(nil), ids...)
	sort.Slice(out, func(i, j int) bool {
		a, b := dist(out[i]), dist(out[j])
		for x := range a {
			if a[x] != b[x] {
				return a[x] < b[x]
			}
		}
		return out[i] < out[j]
	})
	return out
}

// replicaPeers are the r live peers closest to a job ID.
func (n *Node) replicaPeers(job string) []string {
	var out []string
	for _, p := range n.closestPeers(job, jobReplicas, nil) {
		out = append(out, p.String())
	}
	return out
}

// replicateLater queues a record for the next replication batch.
func (n *Node) replicateLater(j market.JobRecord) {
	if j.Manager != market.NodeID(n.ID().String()) {
		return
	}
	n.fo.mu.Lock()
	n.fo.pending[j.ID] = j
	n.fo.mu.Unlock()
}

// replicateTries bounds how many batches in a row (replicateEvery apart)
// retry a record that fewer replica peers stored than were asked: a
// stream reset or a slow peer costs a retry, a peer that keeps refusing
// is logged and left.
const replicateTries = 25

// retryShort queues again the records of batch, just sent, that fewer
// peers stored than were asked, unless a newer version is queued already
// (it will be sent instead). A record is the job's whole state, so
// whichever version last reaches a replica is the one it keeps; a final
// record that never reached one would leave it with an unfinished job to
// adopt if the manager died.
func (f *failover) retryShort(batch map[string]market.JobRecord, short []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.tries == nil {
		f.tries = map[string]int{}
	}
	isShort := make(map[string]bool, len(short))
	for _, id := range short {
		isShort[id] = true
	}
	for id, rec := range batch {
		if !isShort[id] {
			delete(f.tries, id)
			continue
		}
		f.tries[id]++
		if f.tries[id] > replicateTries {
			log.Warnw("job record not stored by every replica peer; giving up", "job", id, "batches", replicateTries)
			delete(f.tries, id)
			continue
		}
		if _, newer := f.pending[id]; !newer {
			f.pending[id] = rec
		}
	}
}

// replicate pushes one record to its replica peers and waits for them;
// it returns how many stored it.
func (n *Node) replicate(ctx context.Context, j market.JobRecord) int {
	stored, _ := n.replicateAll(ctx, []market.JobRecord{j})
	return stored[j.ID]
}

// sendRecord replicates one record (body, a jobReplicaMsg) to a version-1
// peer on a stream of its own.
func (n *Node) sendRecord(ctx context.Context, p peer.ID, body []byte) error {
	s, err := n.host.NewStream(ctx, p, JobRecordProtocol)
	if err != nil {
		return err
	}
	return exchangeRecord(ctx, s, body)
}

// exchangeRecord sends body on a version-1 stream, reads the answer and
// closes the stream.
func exchangeRecord(ctx context.Context, s network.Stream, body []byte) error {
	defer s.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = s.SetDeadline(dl)
	}
	w := bufio.NewWriter(s)
	if err := wire.WriteFrame(w, body); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	_ = s.CloseWrite()
	rb, err := wire.ReadFrame(bufio.NewReader(s), 4<<10)
	if err != nil {
		return err
	}
	var rep struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal(rb, &rep); err != nil {
		return err
	}
	if !rep.OK {
		return fmt.Errorf("%s", rep.Error)
	}
	return nil
}

// handleRecord stores a replica pushed by a job's manager over version 1.
func (n *Node) handleRecord(s network.Stream) {
	defer s.Close()
	_ = s.SetDeadline(time.Now().Add(queryTimeout))
	reply := func(err error) {
		b, _ := json.Marshal(map[string]any{"ok": err == nil, "error": errText(err)})
		w := bufio.NewWriter(s)
		if wire.WriteFrame(w, b) == nil {
			_ = w.Flush()
		}
	}
	b, err := wire.ReadFrame(bufio.NewReader(s), maxJobRecordFrame)
	if err != nil {
		return
	}
	var msg jobReplicaMsg
	if err := json.Unmarshal(b, &msg); err != nil {
		reply(fmt.Errorf("malformed job record: %v", err))
		return
	}
	// The same checks, store and index update as a version-2 frame.
	rep := n.storeReplicas(s.Conn().RemotePeer().String(), []jobReplicaMsg{msg})
	switch {
	case rep.Error != "":
		reply(errors.New(rep.Error))
	case len(rep.Errors) > 0:
		reply(errors.New(rep.Errors[msg.Record.ID]))
	default:
		reply(nil)
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// failoverLoop replicates pending records, adopts jobs whose manager is
// gone when this node is the closest live replica, and re-homes this
// node's tasks whose manager is gone.
func (n *Node) failoverLoop() {
	defer n.wg.Done()
	rep := time.NewTicker(replicateEvery)
	defer rep.Stop()
	chk := time.NewTicker(failoverCheckEvery)
	defer chk.Stop()
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-rep.C:
			n.fo.mu.Lock()
			batch := n.fo.pending
			n.fo.pending = map[string]market.JobRecord{}
			n.fo.mu.Unlock()
			if len(batch) > 0 {
				_, short := n.replicateAll(n.ctx, slices.Collect(maps.Values(batch)))
				n.fo.retryShort(batch, short)
			}
		case <-chk.C:
			n.checkFailover()
		}
	}
}

func (n *Node) live() map[string]bool {
	l := map[string]bool{n.ID().String(): true}
	for _, m := range n.Peers() {
		l[m.Advert.Peer.String()] = true
	}
	return l
}

func (n *Node) checkFailover() {
	live := n.live()
	self := n.ID().String()
	n.fo.mu.Lock()
	var orphans []string
	for id, r := range n.fo.open {
		if live[r.manager] {
			continue
		}
		// The closest live node of the replica set takes over.
		for _, rid := range closest(id, r.replicas) {
			if live[rid] {
				if rid == self {
					orphans = append(orphans, id)
				}
				break
			}
		}
	}
	n.fo.mu.Unlock()
	sort.Strings(orphans)
	for _, id := range orphans {
		r, ok, err := n.replicas.Get(id)
		if err != nil || !ok || r.Record.State.Terminal() || live[string(r.Record.Manager)] {
			continue // changed since the index was read
		}
		rec := r.Record
		log.Infow("manager gone: taking over job", "job", rec.ID, "old_manager", rec.Manager)
		n.exec(func() { n.mkt.Adopt(time.Now(), rec) })
		if n.replicas.Delete(id) == nil {
			n.fo.mu.Lock()
			delete(n.fo.open, id)
			n.fo.mu.Unlock()
		}
	}
	// Executor side: find the new manager of jobs whose manager is gone,
	// or came back from a restart (a peer may have adopted the job while
	// it was gone; see findAdopter).
	var managers map[string]market.NodeID
	if n.call(func() { managers = n.mkt.ManagersOf() }) != nil {
		return
	}
	boots := map[string]uint64{}
	for _, m := range n.Peers() {
		boots[m.Advert.Peer.String()] = m.Advert.Boot
	}
	for job := range n.fo.boots {
		if _, ok := managers[job]; !ok {
			delete(n.fo.boots, job)
		}
	}
	for job, mgr := range managers {
		find := n.findNewManager
		if live[string(mgr)] {
			b, seen := n.fo.boots[job]
			n.fo.boots[job] = boots[string(mgr)]
			if !seen || b == boots[string(mgr)] || boots[string(mgr)] == 0 {
				continue
			}
			find = n.findAdopter
		}
		n.fo.mu.Lock()
		busy := n.fo.rehome[job]
		n.fo.rehome[job] = true
		n.fo.mu.Unlock()
		if !busy {
			go find(job, mgr)
		}
	}
}

// findAdopter runs when the manager of a job this node executes tasks of
// restarted (its boot counter moved). If it was gone long enough for a
// peer to adopt the job, the restarted manager does not take the job back
// (reclaimJobs) and ignores this node's reports; the adopter, hearing
// nothing, would place the tasks again. So this node asks the live peers
// closest to the job ID, which hold its record replicas, whether one of
// them manages the job now, and reports to it if so. No answer means no
// adoption: the restarted manager restores the job and keeps it.
func (n *Node) findAdopter(job string, old market.NodeID) {
	defer func() {
		n.fo.mu.Lock()
		delete(n.fo.rehome, job)
		n.fo.mu.Unlock()
	}()
	if j, ok := n.localJob(job); ok && j.Manager == market.NodeID(n.ID().String()) {
		n.exec(func() { n.mkt.Rehome(time.Now(), job, j.Manager) })
		return
	}
	oldID, _ := peer.Decode(string(old))
	for _, p := range n.closestPeers(job, reclaimAsk, map[peer.ID]bool{oldID: true}) {
		if n.managedBy(n.ctx, p, job) {
			log.Infow("job was adopted while its manager was down", "job", job, "manager", p, "old_manager", old)
			n.exec(func() { n.mkt.Rehome(time.Now(), job, market.NodeID(p.String())) })
			return
		}
	}
}

// findNewManager asks live peers which of them now manages job.
func (n *Node) findNewManager(job string, old market.NodeID) {
	defer func() {
		n.fo.mu.Lock()
		delete(n.fo.rehome, job)
		n.fo.mu.Unlock()
	}()
	deadline := time.Now().Add(rehomeFor)
	for time.Now().Before(deadline) && n.ctx.Err() == nil {
		if j, ok := n.localJob(job); ok && j.Manager == market.NodeID(n.ID().String()) {
			n.exec(func() { n.mkt.Rehome(time.Now(), job, j.Manager) })
			return
		}
		for _, m := range n.Peers() {
			if p := m.Advert.Peer; market.NodeID(p.String()) != old && n.managedBy(n.ctx, p, job) {
				log.Infow("job has a new manager", "job", job, "manager", p)
				n.exec(func() { n.mkt.Rehome(time.Now(), job, market.NodeID(p.String())) })
				return
			}
		}
		select {
		case <-n.ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}
