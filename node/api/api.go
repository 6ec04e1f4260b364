package api

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/gossip"
	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/market/acct"
	"github.com/agora-sched/agora/market/auth"
	"github.com/agora-sched/agora/market/spec"
	"github.com/agora-sched/agora/node/buildinfo"
)

// Backend is what the API needs of its node.
type Backend interface {
	// Identity is the node's peer ID and its full listen addresses.
	Identity() (string, []string)
	// SignIn checks a dashboard sign-in: in a network with an authority,
	// that the request ctx belongs to carries a session credential
	// (market/auth ActSession) signed for this node, whose user it
	// returns; nil and "" in an open network (the API token let the
	// request in).
	SignIn(ctx context.Context) (string, error)
	// Authorize checks, in a network with an authority, that the
	// request ctx belongs to carries a credential allowed to do act (one
	// about no job); nil in an open network. Its error wraps
	// ErrForbidden when the credential is missing or refused.
	Authorize(ctx context.Context, act auth.Action) error
	// Peers lists the other live peers.
	Peers() []gossip.Member
	// Connection says how this node is connected to peer id: "direct",
	// "relayed" (only through a relay) or "none".
	Connection(id string) string
	// Capacity is the node's resource vector.
	Capacity() resource.Vector
	// Submit accepts a validated job and returns its ID. An error that
	// wraps ErrRefused is the client's fault (400), one that wraps
	// ErrForbidden a missing or refused credential (403); any other, the
	// node's (503).
	Submit(ctx context.Context, js spec.Job) (string, error)
	// SubmitTicket accepts a signed job (a market/auth ticket), as Submit.
	SubmitTicket(ctx context.Context, ticket []byte) (string, error)
	// Jobs lists the jobs this node manages, those held back after a
	// restart included.
	Jobs(ctx context.Context) ([]market.JobRecord, error)
	// ClusterJobs lists the jobs of this node and of every live peer that
	// answers, as rows, each node showing what the caller may see there.
	ClusterJobs(ctx context.Context) (ClusterJobs, error)
	// Job finds a job's record here or on any live peer; ErrNotFound when
	// none knows it. In a network with an authority a caller who may not
	// see the job's detail (Credential) gets its summary — no tasks, no
	// spec — and an error wrapping ErrForbidden.
	Job(ctx context.Context, id string) (market.JobRecord, error)
	// Cancel cancels a job managed here or by any live peer; ErrNotFound
	// when none knows it.
	Cancel(ctx context.Context, id string) error
	// TaskLog reads from byte offset from (0 or 1: the start) the output
	// of an attempt of a task replica on the node that ran it; ok is
	// false when that node has none.
	TaskLog(ctx context.Context, node market.NodeID, k market.TaskKey, attempt int, from uint64) (LogPage, bool, error)
	// Drain hands the node's work to its peers (see node.Drain);
	// Undrain lets it take work again; Drained says which it is in.
	Drain(ctx context.Context) error
	Undrain(ctx context.Context) error
	Drained() bool
	// PinImage resolves an image reference to the ID (and size) of the
	// image this node's container engine holds under it
	// (docs/containers.md); an error wrapping ErrRefused when it cannot.
	PinImage(ctx context.Context, ref string) (ImageResponse, error)
	// Accounting lists the attempts f selects, from the accounting
	// records of this node and its peers the caller may see (market/acct).
	Accounting(ctx context.Context, f acct.Filter) (AcctAnswer, error)
	// Report is the accounting report over what f selects.
	Report(ctx context.Context, f acct.Filter) (ReportAnswer, error)
	// Revoke takes an encoded revocation, keeps it and spreads it; it
	// reports the revocation's target and whether it was new. An error
	// wrapping ErrRefused is the client's fault.
	Revoke(ctx context.Context, data []byte) (string, bool, error)
}

// Existing is the answer to a submission of a job the network has
// already: a ticket is accepted once, and submitting it again, to any
// node, names the job and its manager. The API answers 200 with both.
type Existing struct {
	ID      string
	Manager string
}

func (e *Existing) Error() string {
	return "job " + e.ID + " was submitted already; " + e.Manager + " manages it"
}

// Errors a Backend returns.
var (
	ErrNotFound  = errors.New("not found")
	ErrRefused   = errors.New("refused")
	ErrForbidden = errors.New("forbidden")
)

// CredentialHeader carries a client's signed request (market/auth token,
// base64url) in a network with an authority.
const CredentialHeader = "Agora-Credential"

// TicketType is the content type of a signed job submission: its body is
// a market/auth ticket.
const TicketType = "application/vnd.agora.ticket"

type credentialKey struct{}

// WithCredential is ctx carrying a request's credential (the encoded
// token) to the Backend.
func WithCredential(ctx context.Context, cred []byte) context.Context {
	return context.WithValue(ctx, credentialKey{}, cred)
}

// Credential is the credential of the request ctx belongs to, or nil.
func Credential(ctx context.Context) []byte {
	b, _ := ctx.Value(credentialKey{}).([]byte)
	return b
}

// LogPage is a page of a task attempt's output.
type LogPage struct {
	Data   string `json:"data"`
	Next   uint64 `json:"next"`
	Done   bool   `json:"done"`
	Stderr []Span `json:"stderr,omitempty"` // the parts of Data from standard error (LogEntry.Stderr)
}

// Limits of the API: a client has readTimeout to send a whole request
// (a half-sent body does not hold a connection), and an idle connection
// is closed after idleTimeout.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 15 * time.Second
	writeTimeout      = 60 * time.Second
	idleTimeout       = 60 * time.Second
	maxHeaderBytes    = 64 << 10
	drainTimeout      = 15 * time.Second
)

// Server is a running API.
type Server struct {
	b         Backend
	srv       *http.Server
	token     string
	published string // the API address its token was published for
	mux       *http.ServeMux
	data      DataBackend // nil: no data endpoints (ServeData)
	sessions  *Sessions
}

// ServeUI mounts the dashboard (package web) under /ui/ — its pages, and
// its actions under /ui/act/, which the guard lets in only with a session
// that acts; GET / leads there.
func (s *Server) ServeUI(ui http.Handler) {
	s.mux.Handle("GET /ui/", ui)
	s.mux.Handle("POST /ui/act/", ui)
	s.mux.Handle("GET /{$}", http.RedirectHandler("/ui/", http.StatusSeeOther))
}

// New builds the API of backend b, with metrics served at /metrics,
// behind g.
func New(b Backend, metrics http.Handler, g Guard) *Server {
	mux := http.NewServeMux()
	if g.Sessions == nil {
		g.Sessions, _ = NewSessions("", rand.Reader, time.Now)
	}
	s := &Server{b: b, token: g.Token, mux: mux, sessions: g.Sessions}
	mux.HandleFunc("POST /v1/ui/code/{node}", s.handleCode)
	mux.HandleFunc("POST /ui/session", s.handleSession)
	mux.HandleFunc("GET /v1/id", s.handleID)
	mux.HandleFunc("GET /v1/peers", s.handlePeers)
	mux.HandleFunc("GET /v1/devices", s.handleDevices)
	mux.HandleFunc("GET /v1/images", s.handleImage)
	mux.HandleFunc("POST /v1/jobs", s.handleSubmit)
	mux.HandleFunc("GET /v1/jobs", s.handleJobs)
	mux.HandleFunc("GET /v1/cluster/jobs", s.handleClusterJobs)
	mux.HandleFunc("GET /v1/jobs/{id}", s.handleJob)
	mux.HandleFunc("GET /v1/jobs/{id}/logs", s.handleLogs)
	mux.HandleFunc("GET /v1/jobs/{id}/spec", s.handleSpec)
	mux.HandleFunc("DELETE /v1/jobs/{id}", s.handleCancel)
	mux.HandleFunc("GET /v1/acct", s.handleAcct)
	mux.HandleFunc("GET /v1/report", s.handleReport)
	mux.HandleFunc("POST /v1/drain", s.handleDrain)
	mux.HandleFunc("POST /v1/undrain", s.handleUndrain)
	mux.HandleFunc("POST /v1/revocations", s.handleRevoke)
	mux.Handle("GET /metrics", metrics)
	s.srv = &http.Server{Handler: guarded(g, withCredential(mux)), ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout: readTimeout, WriteTimeout: writeTimeout, IdleTimeout: idleTimeout, MaxHeaderBytes: maxHeaderBytes}
	return s
}

// Serve answers requests on ln until Shutdown.
func (s *Server) Serve(ln net.Listener) error {
	if err := s.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Shutdown stops the server, waiting for requests in flight until ctx
// ends, and takes back its published token.
func (s *Server) Shutdown(ctx context.Context) error {
	if s.published != "" {
		UnpublishToken(s.published, s.token)
	}
	return s.srv.Shutdown(ctx)
}

// Publish writes the server's token where this user's agora command
// finds the API at addr (PublishToken); nothing without a token.
func (s *Server) Publish(addr string) error {
	if s.token == "" {
		return nil
	}
	if _, err := PublishToken(addr, s.token); err != nil {
		return fmt.Errorf("node: publish the API token: %w", err)
	}
	s.published = addr
	return nil
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, ErrorResponse{Error: msg})
}

func (s *Server) handleID(w http.ResponseWriter, _ *http.Request) {
	id, addrs := s.b.Identity()
	if addrs == nil {
		addrs = []string{}
	}
	writeJSON(w, http.StatusOK, IDResponse{PeerID: id, Addrs: addrs, Build: buildinfo.Get(), Drained: s.b.Drained()})
}

// authorized answers a request its credential does not allow to do act,
// and says whether it may go on.
func (s *Server) authorized(w http.ResponseWriter, r *http.Request, act auth.Action) bool {
	err := s.b.Authorize(r.Context(), act)
	switch {
	case err == nil:
		return true
	case errors.Is(err, ErrForbidden):
		writeError(w, http.StatusForbidden, err.Error())
	default:
		writeError(w, http.StatusServiceUnavailable, err.Error())
	}
	return false
}

func (s *Server) handlePeers(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(w, r, auth.ActPeers) {
		return
	}
	out := []PeerResponse{}
	for _, m := range s.b.Peers() {
		p := PeerView(m)
		p.Connection = s.b.Connection(p.PeerID)
		out = append(out, p)
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleDevices(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(w, r, auth.ActPeers) {
		return
	}
	writeJSON(w, http.StatusOK, s.b.Capacity())
}

// ImageResponse is the answer of GET /v1/images?ref=REF.
type ImageResponse struct {
	Image string `json:"image"`
	ID    string `json:"id"`
	// Size is the image's size in bytes, as the engine counts it (0
	// when it would not say).
	Size int64 `json:"size"`
}

func (s *Server) handleImage(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(w, r, auth.ActPeers) {
		return
	}
	ref := r.URL.Query().Get("ref")
	if ref == "" {
		writeError(w, http.StatusBadRequest, "ref: required (GET /v1/images?ref=NAME:TAG)")
		return
	}
	img, err := s.b.PinImage(r.Context(), ref)
	switch {
	case errors.Is(err, ErrRefused):
		writeError(w, http.StatusBadRequest, err.Error())
	case err != nil:
		writeError(w, http.StatusServiceUnavailable, err.Error())
	default:
		writeJSON(w, http.StatusOK, img)
	}
}

func (s *Server) handleSubmit(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, spec.MaxSpecBytes+1))
	if err != nil {
		writeError(w, http.StatusBadRequest, "read body: "+err.Error())
		return
	}
	var id string
	if r.Header.Get("Content-Type") == TicketType {
		if err = s.checkTicketInputs(body); err == nil {
			id, err = s.b.SubmitTicket(r.Context(), body)
		}
	} else {
		js, perr := spec.Parse(body, time.Now())
		if perr != nil {
			writeError(w, http.StatusBadRequest, perr.Error())
			return
		}
		if err = s.checkInputs(js); err == nil {
			id, err = s.b.Submit(r.Context(), *js)
		}
	}
	var ex *Existing
	switch {
	case errors.As(err, &ex):
		writeJSON(w, http.StatusOK, map[string]any{"id": ex.ID, "manager": ex.Manager, "existing": true})
	case errors.Is(err, ErrForbidden):
		writeError(w, http.StatusForbidden, err.Error())
	case errors.Is(err, ErrRefused):
		writeError(w, http.StatusBadRequest, err.Error())
	case err != nil:
		writeError(w, http.StatusServiceUnavailable, err.Error())
	default:
		writeJSON(w, http.StatusCreated, map[string]string{"id": id})
	}
}

// listError answers a job list's error, if any: 403 for a caller who may
// not list, 503 otherwise. It reports whether it answered.
func listError(w http.ResponseWriter, err error) bool {
	switch {
	case errors.Is(err, ErrForbidden):
		writeError(w, http.StatusForbidden, err.Error())
	case err != nil:
		writeError(w, http.StatusServiceUnavailable, err.Error())
	default:
		return false
	}
	return true
}

func (s *Server) handleJobs(w http.ResponseWriter, r *http.Request) {
	jobs, err := s.b.Jobs(r.Context())
	if listError(w, err) {
		return
	}
	out := []JobStatus{}
	for _, j := range jobs {
		out = append(out, StatusOf(j))
	}
	writeJSON(w, http.StatusOK, out)
}

// handleClusterJobs serves the cluster-wide job list, filtered by the
// query's state (comma-separated states), user (owner) and node (a node
// the job runs or ran on, or a suffix of its ID).
func (s *Server) handleClusterJobs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f, err := parseRowFilter(q.Get("state"), q.Get("user"), q.Get("node"))
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	all, err := s.b.ClusterJobs(r.Context())
	if listError(w, err) {
		return
	}
	out := all
	out.Jobs = []JobRow{}
	for _, j := range all.Jobs {
		if f.match(j) {
			out.Jobs = append(out.Jobs, j)
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleJob(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	j, err := s.b.Job(r.Context(), id)
	if err != nil && (!errors.Is(err, ErrForbidden) || j.ID == "") {
		jobError(w, id, err)
		return
	}
	writeJSON(w, http.StatusOK, StatusOf(j)) // a summary when the detail is forbidden
}

// jobError answers a failed job lookup.
func jobError(w http.ResponseWriter, id string, err error) {
	if errors.Is(err, ErrForbidden) {
		writeError(w, http.StatusForbidden, err.Error())
		return
	}
	writeError(w, http.StatusNotFound, "no job "+id)
}

func (s *Server) handleSpec(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	j, err := s.b.Job(r.Context(), id)
	if err != nil {
		jobError(w, id, err)
		return
	}
	writeJSON(w, http.StatusOK, j.Spec)
}

func (s *Server) handleCancel(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	switch err := s.b.Cancel(r.Context(), id); {
	case errors.Is(err, ErrForbidden):
		writeError(w, http.StatusForbidden, err.Error())
	case errors.Is(err, ErrNotFound):
		writeError(w, http.StatusNotFound, "no job "+id)
	case err != nil:
		writeError(w, http.StatusConflict, err.Error())
	default:
		writeJSON(w, http.StatusOK, map[string]string{"id": id, "state": string(market.JobCancelled)})
	}
}

func (s *Server) handleLogs(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	q := r.URL.Query()
	task := q.Get("task")
	replica, from := -1, uint64(0)
	if v := q.Get("replica"); v != "" {
		x, err := strconv.Atoi(v)
		if err != nil || x < 0 {
			writeError(w, http.StatusBadRequest, "invalid replica "+strconv.Quote(v))
			return
		}
		replica = x
	}
	if v := q.Get("from"); v != "" {
		x, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			writeError(w, http.StatusBadRequest, "invalid from "+strconv.Quote(v))
			return
		}
		from = x
	}
	j, err := s.b.Job(r.Context(), id)
	if err != nil {
		jobError(w, id, err)
		return
	}
	resp := LogsResponse{ID: id, State: string(j.State), Logs: []LogEntry{}}
	matched := false
	for _, t := range j.Tasks {
		if (task != "" && t.Key.Task != task) || (replica >= 0 && t.Key.Replica != replica) {
			continue
		}
		matched = true
		if len(t.History) == 0 {
			continue
		}
		h := t.History[len(t.History)-1]
		if h.Started.IsZero() && len(t.History) > 1 && h.State == market.TaskAwarded {
			h = t.History[len(t.History)-2] // still queued: show the last attempt that ran
		}
		e := LogEntry{Task: t.Key.Task, Replica: t.Key.Replica, Attempt: h.Attempt, Node: string(h.Node), Next: max(from, 1)}
		if page, ok, err := s.b.TaskLog(r.Context(), h.Node, t.Key, h.Attempt, from); err == nil && ok {
			e.Data, e.Next, e.Stderr = page.Data, page.Next, page.Stderr
		}
		resp.Logs = append(resp.Logs, e)
	}
	if task != "" && !matched {
		writeError(w, http.StatusNotFound, fmt.Sprintf("job %s has no task %q", id, task))
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

func (s *Server) handleDrain(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), drainTimeout)
	defer cancel()
	if err := s.b.Drain(ctx); errors.Is(err, ErrForbidden) {
		writeError(w, http.StatusForbidden, err.Error())
		return
	} else if err != nil {
		writeError(w, http.StatusGatewayTimeout, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, DrainResponse{State: "drained"})
}

func (s *Server) handleUndrain(w http.ResponseWriter, r *http.Request) {
	if err := s.b.Undrain(r.Context()); errors.Is(err, ErrForbidden) {
		writeError(w, http.StatusForbidden, err.Error())
		return
	} else if err != nil {
		writeError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, DrainResponse{State: "open"})
}

// maxRevocationBody bounds a revocation's request body.
const maxRevocationBody = 64 << 10

func (s *Server) handleRevoke(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRevocationBody+1))
	if err != nil {
		writeError(w, http.StatusBadRequest, "read body: "+err.Error())
		return
	}
	if len(body) > maxRevocationBody {
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("revocation over %d bytes", maxRevocationBody))
		return
	}
	target, added, err := s.b.Revoke(r.Context(), body)
	switch {
	case errors.Is(err, ErrRefused):
		writeError(w, http.StatusBadRequest, err.Error())
	case err != nil:
		writeError(w, http.StatusServiceUnavailable, err.Error())
	default:
		writeJSON(w, http.StatusOK, map[string]any{"target": target, "new": added})
	}
}

// withCredential hands a request's credential header to the Backend
// through the request's context.
func withCredential(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if v := r.Header.Get(CredentialHeader); v != "" {
			b, err := base64.RawURLEncoding.DecodeString(v)
			if err != nil {
				writeError(w, http.StatusBadRequest, CredentialHeader+": not base64url")
				return
			}
			r = r.WithContext(WithCredential(r.Context(), b))
		}
		h.ServeHTTP(w, r)
	})
}
