package market

import "time"

// adoptAt, rehomeAt and restoreAt drive adoption, re-homing and a restore
// by hand, for tests of what follows them; the market decides them itself
// (failover.go, rehome.go, reclaim.go).
func (m *Market) adoptAt(now time.Time, rec JobRecord) {
	m.enter(now)
	defer m.leave()
	m.fo.adopt(rec)
}

func (m *Market) rehomeAt(now time.Time, job string, manager NodeID) {
	m.enter(now)
	defer m.leave()
	m.fo.rehomeTo(job, manager)
}

func (m *Market) restoreAt(now time.Time, jobs []JobRecord) {
	m.enter(now)
	defer m.leave()
	m.mgr.restore(jobs)
}
