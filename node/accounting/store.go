package accounting

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/agora-sched/agora/market/acct"
	"github.com/agora-sched/agora/store"
)

// Store keeps accounting records by end time.
type Store struct {
	b *store.Bucket[acct.Record]
}

// NewStore opens the records bucket of s.
func NewStore(s *store.Store) *Store {
	return &Store{b: store.NewBucket[acct.Record](s, "acct")}
}

// key orders records by end time: zero-padded Unix nanoseconds, then
// the record's ID.
func key(r *acct.Record) string { return timeKey(r.Finished.UnixNano()) + "/" + r.ID() }

func timeKey(ns int64) string { return fmt.Sprintf("%019d", max(ns, 0)) }

// Put keeps r (replacing a record of the same ID and end).
func (s *Store) Put(r acct.Record) error { return s.b.Put(key(&r), r) }

// Page is records of end time at or after from (Unix nanoseconds), in
// end-time order, that keep passes, until their JSON would pass
// maxBytes. next is where the following page starts; more says there is
// one.
func (s *Store) Page(from int64, keep func(*acct.Record) bool, maxBytes int) (recs []acct.Record, next int64, more bool, err error) {
	size := 0
	next = from
	err = s.b.ScanFrom("", timeKey(from), func(_ string, r acct.Record) (bool, error) {
		ns := r.Finished.UnixNano()
		if !keep(&r) {
			next = ns
			return true, nil
		}
		b, _ := json.Marshal(&r)
		if size+len(b)+1 > maxBytes && len(recs) > 0 {
			// The next page starts at this record's instant: records of
			// the same instant may come twice, and the asker keeps one
			// per ID.
			more = true
			next = ns
			return false, nil
		}
		size += len(b) + 1
		recs = append(recs, r)
		next = ns
		return true, nil
	})
	if !more {
		next++
	}
	return recs, next, more, err
}

// Sweep deletes the records that ended before cutoff, and says how many.
func (s *Store) Sweep(cutoff time.Time) (int, error) {
	var old []string
	end := timeKey(cutoff.UnixNano())
	err := s.b.Scan("", func(k string, _ acct.Record) (bool, error) {
		if k >= end {
			return false, nil
		}
		old = append(old, k)
		return true, nil
	})
	for _, k := range old {
		if err == nil {
			err = s.b.Delete(k)
		}
	}
	return len(old), err
}

// Count is how many records are kept.
func (s *Store) Count() (int, error) { return s.b.Count("") }

// ParseCursor reads a page cursor (Unix nanoseconds).
func ParseCursor(s string) (int64, error) { return strconv.ParseInt(s, 10, 64) }
