package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/market/auth"
	"github.com/agora-sched/agora/market/spec"
	"github.com/agora-sched/agora/runtime/checkpoint"
)

// DataBackend keeps and serves the node's data for its clients: inputs
// they upload before submitting a job, outputs they read back (agora
// get). node/data's Service implements it.
type DataBackend interface {
	Missing(ids []string) ([]string, error)
	PutChunk(id string, b []byte) error
	KeepUpload(ctx context.Context, raw []byte, ttl time.Duration) (string, []string, error)
	Raw(id string) ([]byte, bool, error)
	Chunk(id string) ([]byte, bool, error)
	FetchFor(ctx context.Context, id, key string, holders []string) (checkpoint.Manifest, error)
	// Complete reports whether a manifest and all its chunks are here.
	Complete(id string) bool
}

// MissingRequest and MissingResponse are the bodies of POST
// /v1/data/missing.
type MissingRequest struct {
	IDs []string `json:"ids"`
}
type MissingResponse struct {
	Missing []string `json:"missing"`
}

// UploadResponse answers POST /v1/data/manifests.
type UploadResponse struct {
	ID      string   `json:"id"`
	Bytes   int64    `json:"bytes"`
	Holders []string `json:"holders"`
}

// OutputRef is one element of GET /v1/jobs/{id}/outputs: a task
// replica's outputs, held by this node once listed.
type OutputRef struct {
	Task     string `json:"task"`
	Replica  int    `json:"replica"`
	Manifest string `json:"manifest"`
	Bytes    int64  `json:"bytes"`
}

// Limits of the data endpoints.
const (
	maxIDsPerAsk = 4096
	uploadTTL    = 7 * 24 * time.Hour
	// dataWriteTimeout replaces the API's write timeout for the requests
	// that move data between nodes before they answer (an upload's
	// copies, a job's outputs fetched for agora get).
	dataWriteTimeout = 30 * time.Minute
)

// ServeData adds the data endpoints, backed by d.
func (s *Server) ServeData(d DataBackend) {
	s.data = d
	s.mux.HandleFunc("POST /v1/data/missing", s.handleMissing)
	s.mux.HandleFunc("PUT /v1/data/chunks/{id}", s.handlePutChunk)
	s.mux.HandleFunc("GET /v1/data/chunks/{id}", s.handleGetChunk)
	s.mux.HandleFunc("POST /v1/data/manifests", s.handleUpload)
	s.mux.HandleFunc("GET /v1/data/manifests/{id}", s.handleGetManifest)
	s.mux.HandleFunc("GET /v1/jobs/{id}/outputs", s.handleOutputs)
}

func (s *Server) handleMissing(w http.ResponseWriter, r *http.Request) {
	var q MissingRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, maxIDsPerAsk*70)).Decode(&q); err != nil || len(q.IDs) > maxIDsPerAsk {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("body: want {\"ids\": [...]} of at most %d chunk IDs", maxIDsPerAsk))
		return
	}
	lack, err := s.data.Missing(q.IDs)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if lack == nil {
		lack = []string{}
	}
	writeJSON(w, http.StatusOK, MissingResponse{Missing: lack})
}

func (s *Server) handlePutChunk(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(io.LimitReader(r.Body, checkpoint.MaxChunkSize+1))
	if err != nil {
		writeError(w, http.StatusBadRequest, "read body: "+err.Error())
		return
	}
	if err := s.data.PutChunk(r.PathValue("id"), b); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) handleGetChunk(w http.ResponseWriter, r *http.Request) {
	b, ok, err := s.data.Chunk(r.PathValue("id"))
	if err != nil || !ok {
		writeError(w, http.StatusNotFound, "chunk not held here")
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	_, _ = w.Write(b)
}

func (s *Server) handleUpload(w http.ResponseWriter, r *http.Request) {
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(dataWriteTimeout))
	raw, err := io.ReadAll(io.LimitReader(r.Body, checkpoint.MaxManifestSize+1))
	if err != nil {
		writeError(w, http.StatusBadRequest, "read body: "+err.Error())
		return
	}
	id, holders, err := s.data.KeepUpload(r.Context(), raw, uploadTTL)
	if err != nil {
		writeError(w, http.StatusBadRequest, "manifest: "+err.Error())
		return
	}
	m, _ := checkpoint.DecodeManifest(raw)
	if holders == nil {
		holders = []string{}
	}
	writeJSON(w, http.StatusCreated, UploadResponse{ID: id, Bytes: m.TotalBytes, Holders: holders})
}

func (s *Server) handleGetManifest(w http.ResponseWriter, r *http.Request) {
	raw, ok, err := s.data.Raw(r.PathValue("id"))
	if err != nil || !ok {
		writeError(w, http.StatusNotFound, "manifest not held here")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(raw)
}

// handleOutputs lists a job's outputs, after making this node hold them
// (fetched from their holders): ?task=T and ?replica=R narrow the list.
func (s *Server) handleOutputs(w http.ResponseWriter, r *http.Request) {
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(dataWriteTimeout))
	id := r.PathValue("id")
	j, err := s.b.Job(r.Context(), id)
	if err != nil {
		jobError(w, id, err)
		return
	}
	task, rep := r.URL.Query().Get("task"), r.URL.Query().Get("replica")
	if task != "" {
		if _, ok := j.Spec.Task(task); !ok {
			writeError(w, http.StatusNotFound, fmt.Sprintf("job %s has no task %s", id, task))
			return
		}
	}
	replica := -1
	if rep != "" {
		if replica, err = strconv.Atoi(rep); err != nil || replica < 0 {
			writeError(w, http.StatusBadRequest, "replica: want a replica index")
			return
		}
	}
	out := []OutputRef{}
	for _, t := range j.Tasks {
		if (task != "" && t.Key.Task != task) || (replica >= 0 && t.Key.Replica != replica) || t.Outputs == nil {
			continue
		}
		var holders []string
		for _, h := range t.Outputs.Holders {
			holders = append(holders, string(h))
		}
		if _, err := s.data.FetchFor(r.Context(), t.Outputs.Manifest, market.DataKey(t.Key), holders); err != nil {
			writeError(w, http.StatusServiceUnavailable, fmt.Sprintf("outputs of %s replica %d: %v", t.Key.Task, t.Key.Replica, err))
			return
		}
		out = append(out, OutputRef{Task: t.Key.Task, Replica: t.Key.Replica, Manifest: t.Outputs.Manifest, Bytes: t.Outputs.Bytes})
	}
	writeJSON(w, http.StatusOK, out)
}

// checkInputs refuses a job whose inputs this node cannot vouch for: a
// local path (only the agora command reads the client's files), or
// uploaded data it does not hold whole.
func (s *Server) checkInputs(js *spec.Job) error {
	if locals := js.LocalInputs(); len(locals) > 0 {
		return fmt.Errorf("%w: local inputs are uploaded by the agora command (agora submit, agora run), not read by a node: %s", ErrRefused, locals[0])
	}
	for _, t := range js.Tasks {
		for i, in := range t.Inputs {
			if in.Data == "" {
				continue
			}
			if s.data == nil || !s.data.Complete(in.Data) {
				return fmt.Errorf("%w: task %s input %d: data %.12s… is not held by this node: upload it to this node first", ErrRefused, t.Name, i, in.Data)
			}
		}
	}
	return nil
}

// checkTicketInputs is checkInputs for a signed job; a ticket that does
// not decode is left to the backend, which says why.
func (s *Server) checkTicketInputs(ticket []byte) error {
	tk, err := auth.DecodeTicket(ticket)
	if err != nil {
		return nil
	}
	js, err := spec.FromSigned(tk.Spec)
	if err != nil {
		return nil
	}
	return s.checkInputs(js)
}
