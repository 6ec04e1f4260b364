package node

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/gossip"
)

// IDResponse is the body of GET /v1/id.
type IDResponse struct {
	PeerID string   `json:"peer_id"`
	Addrs  []string `json:"addrs"`
}

// PeerResponse is one element of GET /v1/peers.
type PeerResponse struct {
	PeerID          string            `json:"peer_id"`
	Site            string            `json:"site"`
	Labels          map[string]string `json:"labels"`
	Capacity        resource.Vector   `json:"capacity"`
	Free            resource.Vector   `json:"free"`
	Queue           int               `json:"queue"`
	PredictedWaitMs int64             `json:"predicted_wait_ms"`
	Load            float64           `json:"load"`
	Addrs           []string          `json:"addrs"`
	LastSeen        string            `json:"last_seen"`
}

// ErrorResponse is the body of every API error.
type ErrorResponse struct {
	Error string `json:"error"`
}

func (n *Node) startAPI() {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/id", n.handleID)
	mux.HandleFunc("GET /v1/peers", n.handlePeers)
	mux.HandleFunc("GET /v1/devices", n.handleDevices)
	n.registerJobAPI(mux)
	mux.HandleFunc("POST /v1/drain", n.handleDrain)
	mux.Handle("GET /metrics", promhttp.HandlerFor(n.reg, promhttp.HandlerOpts{}))
	n.apiSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		if err := n.apiSrv.Serve(n.apiLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Errorw("API server stopped", "err", err)
		}
	}()
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

func (n *Node) handleID(w http.ResponseWriter, _ *http.Request) {
	r := IDResponse{PeerID: n.ID().String(), Addrs: []string{}}
	for _, a := range n.Addrs() {
		r.Addrs = append(r.Addrs, a.String())
	}
	writeJSON(w, http.StatusOK, r)
}

// PeerView renders a membership entry in the API's peers shape.
func PeerView(m gossip.Member) PeerResponse {
	a := m.Advert
	p := PeerResponse{
		PeerID: a.Peer.String(), Site: a.Site, Labels: a.Labels, Capacity: a.Capacity, Free: a.Free,
		Queue: a.Queue, PredictedWaitMs: a.PredictedWait.Milliseconds(), Load: a.Load,
		Addrs: []string{}, LastSeen: m.LastSeen.UTC().Format(time.RFC3339),
	}
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	for _, ad := range a.Addrs {
		p.Addrs = append(p.Addrs, ad.String())
	}
	return p
}

func (n *Node) handlePeers(w http.ResponseWriter, _ *http.Request) {
	out := []PeerResponse{}
	for _, m := range n.Peers() {
		out = append(out, PeerView(m))
	}
	writeJSON(w, http.StatusOK, out)
}

func (n *Node) handleDevices(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, n.capacity)
}
