package testnet

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/agora-sched/agora/market/auth"
	"github.com/agora-sched/agora/node/api"
)

var httpClient = &http.Client{Timeout: 30 * time.Second}

// API sends one request to the node's HTTP API, signed with the node's
// credential when it has one (SetCredential), and returns the status code
// and body.
func (nd *Node) API(method, path string, body []byte) (int, []byte, error) {
	return nd.APIAs(nd.credential(), method, path, body)
}

// APIAs is API signed with cred (none when nil), as agora --credential
// signs.
func (nd *Node) APIAs(cred *auth.Credential, method, path string, body []byte) (int, []byte, error) {
	sg, err := api.Sign(cred, method, path, "application/json", body, time.Now(), rand.Reader)
	if err != nil {
		return 0, nil, err
	}
	return nd.send(method, path, sg)
}

// Signed is a job submission prepared for Node.SubmitSigned: signed with
// the node's credential when it has one, as a user's client signs on the
// user's own machine before it sends.
func (nd *Node) Signed(specText string) (api.Signed, error) {
	return api.Sign(nd.credential(), "POST", "/v1/jobs", "application/json", []byte(specText), time.Now(), rand.Reader)
}

// SignStatus signs, ahead, the request credential this node's client
// sends to ask for job id's status (a client reuses it while fresh: its
// signature then costs nothing when the status is asked). Nothing to do
// without a credential.
func (nd *Node) SignStatus(id string) error {
	_, err := api.Sign(nd.credential(), "GET", "/v1/jobs/"+id, "", nil, time.Now(), rand.Reader)
	return err
}

// SubmitSigned posts a prepared submission and returns the job ID.
func (nd *Node) SubmitSigned(sg api.Signed) (string, error) {
	code, b, err := nd.send("POST", "/v1/jobs", sg)
	if err != nil {
		return "", err
	}
	if code != http.StatusCreated {
		return "", fmt.Errorf("submit: %d: %s", code, b)
	}
	var r struct{ ID string }
	if err := json.Unmarshal(b, &r); err != nil {
		return "", err
	}
	return r.ID, nil
}

// send sends a request in its signed form.
func (nd *Node) send(method, path string, sg api.Signed) (int, []byte, error) {
	var rd io.Reader
	if sg.Body != nil {
		rd = bytes.NewReader(sg.Body)
	}
	req, err := http.NewRequest(method, "http://"+nd.APIAddr()+path, rd)
	if err != nil {
		return 0, nil, err
	}
	if sg.Body != nil || method != http.MethodGet {
		ct := sg.ContentType
		if ct == "" {
			ct = "application/json"
		}
		req.Header.Set("Content-Type", ct)
	}
	if sg.Token != "" {
		req.Header.Set(api.CredentialHeader, sg.Token)
	}
	if tok := nd.apiToken(); tok != "" {
		req.Header.Set(api.TokenHeader, "Bearer "+tok)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// SetCredential makes API sign as the user of cred (nil: unsigned).
func (nd *Node) SetCredential(cred *auth.Credential) { nd.cred.Store(cred) }

func (nd *Node) credential() *auth.Credential {
	c, _ := nd.cred.Load().(*auth.Credential)
	return c
}

// SubmitAs posts a job spec signed by cred and returns the job ID.
func (nd *Node) SubmitAs(cred *auth.Credential, specText string) (string, error) {
	sg, err := api.Sign(cred, "POST", "/v1/jobs", "application/json", []byte(specText), time.Now(), rand.Reader)
	if err != nil {
		return "", err
	}
	return nd.SubmitSigned(sg)
}

// Submit posts a job spec, signed with the node's credential, and returns
// the job ID.
func (nd *Node) Submit(specText string) (string, error) {
	return nd.SubmitAs(nd.credential(), specText)
}

// Status asks the node for a job's status.
func (nd *Node) Status(id string) (api.JobStatus, error) {
	var s api.JobStatus
	code, b, err := nd.API("GET", "/v1/jobs/"+id, nil)
	if err != nil {
		return s, err
	}
	if code != http.StatusOK {
		return s, fmt.Errorf("status: %d: %s", code, b)
	}
	return s, json.Unmarshal(b, &s)
}

// Logs asks the node for a job's logs.
func (nd *Node) Logs(id, query string) (api.LogsResponse, error) {
	var s api.LogsResponse
	code, b, err := nd.API("GET", "/v1/jobs/"+id+"/logs"+query, nil)
	if err != nil {
		return s, err
	}
	if code != http.StatusOK {
		return s, fmt.Errorf("logs: %d: %s", code, b)
	}
	return s, json.Unmarshal(b, &s)
}

// PeakCPU reports, from the node's runtime records of a job, the largest
// number of CPUs its tasks held at once and how many attempts ran here.
func (nd *Node) PeakCPU(job string) (peak, runs int) {
	exs, err := nd.Executions(job)
	if err != nil {
		return 0, 0
	}
	type edge struct {
		at  time.Time
		cpu int64
	}
	var edges []edge
	for _, x := range exs {
		end := x.Finished
		if end.IsZero() {
			end = time.Now()
		}
		edges = append(edges, edge{x.Started, x.CPUMilli}, edge{end, -x.CPUMilli})
	}
	sort.Slice(edges, func(i, j int) bool {
		if !edges[i].at.Equal(edges[j].at) {
			return edges[i].at.Before(edges[j].at)
		}
		return edges[i].cpu < edges[j].cpu // ends before starts at the same instant
	})
	var cur, best int64
	for _, e := range edges {
		cur += e.cpu
		best = max(best, cur)
	}
	return int((best + 999) / 1000), len(exs)
}

// TaskStarts reports, from the node's runtime records, when each task
// replica of job that ran to success here last started its process,
// keyed "task/replica".
func (nd *Node) TaskStarts(job string) map[string]time.Time {
	exs, err := nd.Executions(job)
	if err != nil {
		return nil
	}
	out := map[string]time.Time{}
	for _, x := range exs {
		if x.Finished.IsZero() || x.ExitCode != 0 {
			continue
		}
		k := fmt.Sprintf("%s/%d", x.Key.Task, x.Key.Replica)
		if x.Started.After(out[k]) {
			out[k] = x.Started
		}
	}
	return out
}

// apiToken is the node's local API token (none with an authority).
func (nd *Node) apiToken() string {
	b, err := os.ReadFile(filepath.Join(nd.Config.DataDir, api.TokenFile))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
