package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/gossip"
	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/market/acct"
	"github.com/agora-sched/agora/market/auth"
	"github.com/agora-sched/agora/market/spec"
)

// fake is a Backend with one job, "j-1", run once on node "n2".
type fake struct {
	submitted []spec.Job
	cancelled []string
	drained   bool
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func (f *fake) Identity() (string, []string)                 { return "12D3KooWSelf", nil }
func (f *fake) Authorize(context.Context, auth.Action) error { return nil }
func (f *fake) SignIn(context.Context) (string, error)       { return "", nil }
func (f *fake) Peers() []gossip.Member                       { return nil }
func (f *fake) PinImage(context.Context, string) (ImageResponse, error) {
	return ImageResponse{}, fmt.Errorf("%w: no container runtime", ErrRefused)
}
func (f *fake) Connection(string) string  { return "none" }
func (f *fake) Capacity() resource.Vector { return resource.Vector{CPU: 4000} }

func (f *fake) Submit(_ context.Context, js spec.Job) (string, error) {
	if js.Name == "refused" {
		return "", fmt.Errorf("%w: market: job exists", ErrRefused)
	}
	f.submitted = append(f.submitted, js)
	return "j-2", nil
}

func (f *fake) SubmitTicket(context.Context, []byte) (string, error) {
	return "", fmt.Errorf("%w: no authority", ErrForbidden)
}

func (f *fake) job() market.JobRecord {
	return market.JobRecord{ID: "j-1", State: market.JobRunning, Manager: "n1", Submitted: t0,
		Tasks: []market.TaskRecord{{Key: market.TaskKey{Job: "j-1", Task: "a"}, State: market.TaskRunning, Node: "n2", Attempts: 1,
			History: []market.AttemptRecord{{Attempt: 1, Epoch: 1, Node: "n2", State: market.TaskRunning, Awarded: t0, Started: t0}}}}}
}

func (f *fake) Jobs(context.Context) ([]market.JobRecord, error) {
	return []market.JobRecord{f.job()}, nil
}

func (f *fake) ClusterJobs(context.Context) (ClusterJobs, error) {
	peer := market.JobRecord{ID: "j-7", State: market.JobSucceeded, Manager: "n3", Submitted: t0.Add(time.Second), Owner: "bob"}
	return MergeRows([]market.JobRecord{f.job()}, map[string][]byte{"n3": RowsAnswer([]market.JobRecord{peer}, 1<<20)}, nil), nil
}

func (f *fake) Job(_ context.Context, id string) (market.JobRecord, error) {
	if id != "j-1" {
		return market.JobRecord{}, ErrNotFound
	}
	return f.job(), nil
}

func (f *fake) Cancel(_ context.Context, id string) error {
	switch id {
	case "j-1":
		f.cancelled = append(f.cancelled, id)
		return nil
	case "j-done":
		return errors.New("market: job j-done already succeeded")
	}
	return ErrNotFound
}

func (f *fake) TaskLog(_ context.Context, node market.NodeID, k market.TaskKey, attempt int, from uint64) (LogPage, bool, error) {
	if node != "n2" || attempt != 1 {
		return LogPage{}, false, nil
	}
	return LogPage{Data: fmt.Sprintf("%s from %d\n", k, from), Next: 42}, true, nil
}

func (f *fake) Drain(context.Context) error   { f.drained = true; return nil }
func (f *fake) Undrain(context.Context) error { f.drained = false; return nil }
func (f *fake) Drained() bool                 { return f.drained }

func (f *fake) Revoke(context.Context, []byte) (string, bool, error) {
	return "", false, fmt.Errorf("%w: no authority", ErrRefused)
}

// TestRoutes: every endpoint answers with its document and status code,
// bad input with 400 naming the problem, an unknown job with 404.
func TestRoutes(t *testing.T) {
	f := &fake{}
	srv := httptest.NewServer(New(f, http.NotFoundHandler(), Guard{Token: testToken}).srv.Handler)
	defer srv.Close()
	for _, tc := range []struct {
		method, path, body string
		code               int
		want               string
	}{
		{"GET", "/v1/id", "", 200, `"peer_id": "12D3KooWSelf"`},
		{"GET", "/v1/peers", "", 200, "[]"},
		{"GET", "/v1/devices", "", 200, `"cpu": 4,`},
		{"POST", "/v1/jobs", `{"name": "x", "tasks": [{"name": "a", "command": ["true"]}]}`, 201, `"id": "j-2"`},
		{"POST", "/v1/jobs", `{"name": "x", "tasks": []}`, 400, "tasks"},
		{"POST", "/v1/jobs", `{"name": "refused", "tasks": [{"name": "a", "command": ["true"]}]}`, 400, "job exists"},
		{"POST", "/v1/jobs", `{"name": "x", "tasks": [{"name": "a", "command": ["true"], "inputs": [{"local": "/etc/passwd"}]}]}`, 400,
			"local inputs are uploaded by the agora command"},
		{"POST", "/v1/jobs", `{"name": "x", "tasks": [{"name": "a", "command": ["true"], "inputs": [{"data": "` + strings.Repeat("ab", 32) + `", "path": "x"}]}]}`, 400,
			"is not held by this node: upload it to this node first"},
		{"GET", "/v1/jobs", "", 200, `"id": "j-1"`},
		{"GET", "/v1/jobs/j-1", "", 200, `"state": "running"`},
		{"GET", "/v1/cluster/jobs", "", 200, `"id": "j-7"`},
		{"GET", "/v1/cluster/jobs?state=running", "", 200, `"nodes": [
        "n2"
      ],`},
		{"GET", "/v1/cluster/jobs?user=bob&node=n3", "", 200, `"jobs": []`},
		{"GET", "/v1/cluster/jobs?state=stuck", "", 400, `unknown state \"stuck\"`},
		{"GET", "/v1/jobs/j-9", "", 404, "no job j-9"},
		{"GET", "/v1/jobs/j-1/logs?from=7", "", 200, `"data": "j-1/a/0 from 7\n"`},
		{"GET", "/v1/jobs/j-1/logs?task=zz", "", 404, `has no task \"zz\"`},
		{"GET", "/v1/jobs/j-1/logs?replica=-1", "", 400, `invalid replica \"-1\"`},
		{"GET", "/v1/jobs/j-1/logs?from=x", "", 400, `invalid from \"x\"`},
		{"DELETE", "/v1/jobs/j-1", "", 200, `"state": "cancelled"`},
		{"DELETE", "/v1/jobs/j-done", "", 409, "already succeeded"},
		{"DELETE", "/v1/jobs/j-9", "", 404, "no job j-9"},
		{"POST", "/v1/undrain", "", 200, `"state": "open"`},
		{"GET", "/v1/id", "", 200, `"drained": false`},
		{"POST", "/v1/drain", "", 200, `"state": "drained"`},
		{"GET", "/v1/id", "", 200, `"drained": true`},
	} {
		req, err := http.NewRequest(tc.method, srv.URL+tc.path, strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(TokenHeader, "Bearer "+testToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.code || !strings.Contains(string(b), tc.want) {
			t.Errorf("%s %s: %d %s, want %d with %q", tc.method, tc.path, resp.StatusCode, b, tc.code, tc.want)
		}
		if resp.StatusCode >= 400 {
			var e ErrorResponse
			if json.Unmarshal(b, &e) != nil || e.Error == "" {
				t.Errorf("%s %s: error body %s is not an ErrorResponse", tc.method, tc.path, b)
			}
		}
	}
	if len(f.submitted) != 1 || len(f.cancelled) != 1 || !f.drained {
		t.Fatalf("backend saw %d submits, %v cancels, drained %v", len(f.submitted), f.cancelled, f.drained)
	}
}

// TestMergeRows: the cluster-wide list holds this node's rows and each
// peer's rows for the jobs that peer manages (a row naming another
// manager is dropped), a job listed twice once, oldest first; a peer
// whose answer does not parse counts as unreachable, one that ran out of
// room as truncated.
func TestMergeRows(t *testing.T) {
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	mine := []market.JobRecord{{ID: "j-3", Manager: "me", State: market.JobRunning, Submitted: at(3)}}
	a := RowsAnswer([]market.JobRecord{{ID: "j-1", Manager: "pa", Submitted: at(1)}, {ID: "j-9", Manager: "pz", Submitted: at(0)}, {ID: "j-3", Manager: "pa", Submitted: at(3)}}, 1<<20)
	big := []market.JobRecord{{ID: "j-2", Manager: "pb", Submitted: at(2)}, {ID: "j-4", Manager: "pb", Submitted: at(4)}}
	b := RowsAnswer(big, 64+len(mustJSON(t, RowOf(big[1])))+1) // room for the newest only
	got := MergeRows(mine, map[string][]byte{"pa": a, "pb": b, "pc": []byte("not json")}, []string{"pd"})
	var ids []string
	for _, r := range got.Jobs {
		ids = append(ids, r.ID+"@"+r.Manager)
	}
	if want := []string{"j-1@pa", "j-3@me", "j-4@pb"}; !slices.Equal(ids, want) {
		t.Fatalf("rows %v, want %v", ids, want)
	}
	if !slices.Equal(got.Unreachable, []string{"pc", "pd"}) || !slices.Equal(got.Truncated, []string{"pb"}) {
		t.Fatalf("unreachable %v truncated %v, want [pc pd] and [pb]", got.Unreachable, got.Truncated)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (f *fake) Accounting(context.Context, acct.Filter) (AcctAnswer, error) { return AcctAnswer{}, nil }
func (f *fake) Report(context.Context, acct.Filter) (ReportAnswer, error)   { return ReportAnswer{}, nil }
