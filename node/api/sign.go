package api

import (
	"io"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/agora-sched/agora/market/auth"
	"github.com/agora-sched/agora/market/spec"
)

// Signed is a request in the form a network with an authority takes it.
type Signed struct {
	ContentType string
	Body        []byte
	// Token goes in CredentialHeader; empty when the request needs none.
	Token string
}

// Sign turns a client request into its signed form with cred: a
// submission's body into a ticket (the spec parsed at now and signed in
// canonical form; a spec that does not parse is an error), a request
// about jobs into one carrying a token that names what it asks and of
// which job. Other requests, and any request when cred is nil, pass
// unchanged.
func Sign(cred *auth.Credential, method, path, ctype string, body []byte, now time.Time, rnd io.Reader) (Signed, error) {
	out := Signed{ContentType: ctype, Body: body}
	if cred == nil {
		return out, nil
	}
	p, _, _ := strings.Cut(path, "?")
	if method == "POST" && p == "/v1/jobs" {
		// The user signs the spec as parsed here (spec.Canonical), what
		// every node then reads.
		js, err := spec.Parse(body, now)
		if err != nil {
			return Signed{}, err
		}
		canon, err := spec.Canonical(js)
		if err != nil {
			return Signed{}, err
		}
		t, err := auth.NewTicket(canon, now, cred.Key, cred.Chain, rnd)
		if err != nil {
			return Signed{}, err
		}
		return Signed{ContentType: TicketType, Body: t.Encode()}, nil
	}
	act, job, ok := ActionOf(method, path)
	if !ok {
		return out, nil
	}
	if tok, ok := tokens.get(cred, act, job, now); ok {
		out.Token = tok
		return out, nil
	}
	t, err := auth.NewToken(act, job, now, cred.Key, cred.Chain, rnd)
	if err != nil {
		return Signed{}, err
	}
	out.Token = t.Text()
	tokens.put(cred, act, job, out.Token, now)
	return out, nil
}

// A client that polls (submit --wait, logs --follow) sends the same
// token again while it is fresh, and the node checks its signature once
// (auth.Book.VerifyToken); a node accepts a token 5 minutes either side
// of its time.
const tokenReuse = time.Minute

// tokenCache holds the tokens signed lately, per credential, action and
// job.
type tokenCache struct {
	mu sync.Mutex
	m  map[tokenKey]signedToken
}

type tokenKey struct {
	cred *auth.Credential
	act  auth.Action
	job  string
}

type signedToken struct {
	text string
	at   time.Time
}

var tokens tokenCache

func (c *tokenCache) get(cred *auth.Credential, act auth.Action, job string, now time.Time) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.m[tokenKey{cred, act, job}]
	if !ok || now.Sub(t.at) > tokenReuse || now.Before(t.at) {
		return "", false
	}
	return t.text, true
}

func (c *tokenCache) put(cred *auth.Credential, act auth.Action, job, text string, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= 1024 {
		c.m = map[tokenKey]signedToken{}
	}
	c.m[tokenKey{cred, act, job}] = signedToken{text, now}
}

// ActionOf is what an API request asks, and about which job; false for
// requests that need no signature.
func ActionOf(method, path string) (auth.Action, string, bool) {
	p, _, _ := strings.Cut(path, "?")
	switch {
	case method == "GET" && (p == "/v1/jobs" || p == "/v1/cluster/jobs" || p == "/v1/acct" || p == "/v1/report"):
		// Accounting is listed as jobs are: owners their own, admins all.
		return auth.ActJobs, "", true
	case method == "POST" && p == "/v1/drain":
		return auth.ActDrain, "", true
	case method == "POST" && p == "/v1/undrain":
		return auth.ActUndrain, "", true
	case method == "GET" && (p == "/v1/peers" || p == "/v1/devices" || p == "/v1/images"):
		return auth.ActPeers, "", true
	}
	if node, ok := strings.CutPrefix(p, "/v1/ui/code/"); ok && method == "POST" {
		return auth.ActSession, node, true // a dashboard sign-in to that node
	}
	rest, ok := strings.CutPrefix(p, "/v1/jobs/")
	if !ok {
		return "", "", false
	}
	idEsc, suffix, _ := strings.Cut(rest, "/")
	id, err := url.PathUnescape(idEsc)
	if err != nil {
		return "", "", false
	}
	switch {
	case method == "DELETE" && suffix == "":
		return auth.ActCancel, id, true
	case method == "GET" && suffix == "":
		return auth.ActStatus, id, true
	case method == "GET" && (suffix == "logs" || suffix == "outputs"):
		// A task's outputs are read as its log is: by the job's owner
		// and admins.
		return auth.ActLogs, id, true
	case method == "GET" && suffix == "spec":
		return auth.ActSpec, id, true
	}
	return "", "", false
}
