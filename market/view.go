package market

import (
	"crypto/sha256"
	"fmt"
	"time"
)

// The manager's view of its peers, from their adverts, and what a change
// of it sets off: tasks on a peer that is gone or restarted are placed
// again; jobs whose manager is gone are taken over by the closest live
// holder of a copy of their record (failover.go); executors look for the
// new manager of the tasks they run (rehome.go).

// Advert updates the view of a peer. An advert with another boot counter
// than the view holds comes from a peer that restarted: what it held
// died with it and is placed again, as for a peer that is gone, but it
// is live, so nobody takes its jobs over.
func (m *Market) Advert(now time.Time, p Peer) {
	m.enter(now)
	defer m.leave()
	if p.ID == m.cfg.Self {
		return
	}
	p.Seen = now
	if p.Queue >= StealableQueue {
		m.loaded++
		if p.Steal.mayGive(m.con.stealNoneRoom, time.Time{}, now) {
			m.con.stealNone = false // it may hold what this node could run
		}
	}
	m.fo.sawAdvert(p.ID)
	if old := m.view[p.ID]; old != nil {
		if old.Queue >= StealableQueue {
			m.loaded--
		}
		restarted := p.Boot != 0 && old.Boot != 0 && p.Boot != old.Boot
		p.hash, p.hin = old.hash, old.hin
		prev := *old
		*old = p // in place: a thousand-node view is refreshed often
		m.gang.peerAdvertised(old)
		m.gang.roomAppeared(&prev, old)
		m.gang.releaseStale(old)
		if restarted {
			m.lostPeer(p.ID, "executor "+string(p.ID)+" restarted")
			m.fo.managerRestarted(p.ID)
		}
		if restarted || prev.Drained && !p.Drained {
			m.wakeParked() // it may hold what nothing could
		}
		m.gang.headMoved()
		return
	}
	// A copy of its own: taking p's address would move every advert's
	// argument to the heap, the known peers' included.
	np := new(Peer)
	*np = p
	np.hash = sha256.Sum256([]byte(np.ID))
	m.view[np.ID] = np
	m.gang.peerAdvertised(np)
	m.gang.roomAppeared(nil, np)
	m.gang.releaseStale(np)
	if m.rep.on() {
		m.rep.dropsFor(p.ID)
	}
	m.sp.peerBack(p.ID)
	m.usageNewPeer()
	m.wakeParked()
	m.gang.headMoved()
}

// PeerGone removes a peer from the view: the tasks it held are placed
// again, the jobs it managed are taken over by the closest live holder
// of their record's copy, and executors of those jobs look for it.
func (m *Market) PeerGone(now time.Time, id NodeID) {
	m.enter(now)
	defer m.leave()
	if old := m.view[id]; old != nil {
		if old.Queue >= StealableQueue {
			m.loaded--
		}
		delete(m.view, id)
		m.gang.peerDropped(old)
	}
	m.lostPeer(id, "executor "+string(id)+" is gone")
	m.fo.managerGone(id)
	m.fo.replicaPeerGone(id)
	m.fo.reclaimPeerGone(id)
	m.sp.peerLeft(id)
}

// live reports whether a node is this one or in its view.
func (sh *shared) live(id NodeID) bool { return id == sh.cfg.Self || sh.view[id] != nil }

// lostPeer places again the replicas peer id held for this node's jobs,
// and counts it as having answered every open round.
func (m *Market) lostPeer(id NodeID, why string) {
	m.con.managerLost(id)
	for j, t := range m.openTasks() {
		if t.Node == id && (t.State == TaskAwarded || t.State == TaskRunning) {
			if j.isGang(t.Key.Task) {
				m.gang.gangReplicaEnded(j, t, TaskStatus{Key: t.Key, Epoch: t.Epoch, Node: id, State: TaskPreempted, ExitCode: -1, Reason: why})
				continue
			}
			m.move(j, t, lost(m.now, why))
			m.event(j.ID, fmt.Sprintf("%s: %s; placing again", t.Key, why))
		}
	}
	for k, a := range m.auctions {
		a.gone(id)
		m.dl.retimeAuction(k)
	}
	for gid, g := range m.gangs {
		g.gone(id)
		m.dl.retimeGang(gid)
	}
}
