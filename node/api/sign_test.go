package api

import (
	"testing"

	"github.com/agora-sched/agora/market/auth"
)

// TestActionOf: each request about jobs is signed as the action the node
// checks it for; others carry no token.
func TestActionOf(t *testing.T) {
	for _, c := range []struct {
		method, path string
		act          auth.Action
		job          string
	}{
		{"GET", "/v1/jobs", auth.ActJobs, ""},
		{"POST", "/v1/drain", auth.ActDrain, ""},
		{"POST", "/v1/undrain", auth.ActUndrain, ""},
		{"GET", "/v1/jobs/j-1", auth.ActStatus, "j-1"},
		{"DELETE", "/v1/jobs/j-1", auth.ActCancel, "j-1"},
		{"GET", "/v1/jobs/j-1/logs?task=a", auth.ActLogs, "j-1"},
		{"GET", "/v1/jobs/j-1/outputs?task=a&replica=0", auth.ActLogs, "j-1"},
		{"GET", "/v1/jobs/j-1/spec", auth.ActSpec, "j-1"},
		{"GET", "/v1/data/chunks/ab", "", ""},
		{"GET", "/v1/peers", auth.ActPeers, ""},
		{"GET", "/v1/devices", auth.ActPeers, ""},
		{"GET", "/v1/id", "", ""},
	} {
		act, job, ok := ActionOf(c.method, c.path)
		if ok != (c.act != "") || act != c.act || job != c.job {
			t.Errorf("%s %s: %q %q %v", c.method, c.path, act, job, ok)
		}
	}
}
