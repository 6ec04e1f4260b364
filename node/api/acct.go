package api

import (
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/market/acct"
)

// ParseAcctFilter reads an accounting filter from a query string: job,
// user, site, node, state, and since and until as RFC 3339 times. The
// error names the parameter.
func ParseAcctFilter(q url.Values) (acct.Filter, error) {
	f := acct.Filter{Job: q.Get("job"), User: q.Get("user"), Site: q.Get("site"), Node: q.Get("node"), State: q.Get("state")}
	switch market.TaskState(f.State) {
	case "", market.TaskSucceeded, market.TaskFailed, market.TaskCancelled, market.TaskPreempted:
	default:
		return f, fmt.Errorf("state %q: want succeeded, failed, cancelled or preempted", f.State)
	}
	for _, t := range []struct {
		name string
		to   *time.Time
	}{{"since", &f.Since}, {"until", &f.Until}} {
		v := q.Get(t.name)
		if v == "" {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return f, fmt.Errorf("%s %q: want an RFC 3339 time such as 2026-12-01T00:00:00Z", t.name, v)
		}
		*t.to = at
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Since.Before(f.Until) {
		return f, fmt.Errorf("since %s is not before until %s", f.Since.Format(time.RFC3339), f.Until.Format(time.RFC3339))
	}
	return f, nil
}

func (s *Server) handleAcct(w http.ResponseWriter, r *http.Request) {
	f, err := ParseAcctFilter(r.URL.Query())
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	ans, err := s.b.Accounting(r.Context(), f)
	if listError(w, err) {
		return
	}
	if ans.Attempts == nil {
		ans.Attempts = []acct.Attempt{}
	}
	writeJSON(w, http.StatusOK, ans)
}

func (s *Server) handleReport(w http.ResponseWriter, r *http.Request) {
	f, err := ParseAcctFilter(r.URL.Query())
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	rep, err := s.b.Report(r.Context(), f)
	if listError(w, err) {
		return
	}
	writeJSON(w, http.StatusOK, rep)
}
