package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/market/acct"
	"github.com/agora-sched/agora/node/api"
)

// Source is what the dashboard reads: the API's backend and, for jobs
// this node manages, their event logs (the auction rounds among them).
type Source interface {
	api.Backend
	Events(job string) []string
	Free() resource.Vector
	// OutputsArchive writes a task replica's outputs to w as a .tar.gz,
	// for a caller allowed the job's detail.
	OutputsArchive(ctx context.Context, w io.Writer, job, task string, replica int) error
	// History is what the charts draw (nil: nothing kept).
	History() *History
	// RunningHere lists the task replicas this node runs now and
	// Queued those awarded to it, waiting to start.
	RunningHere() (running, queued []market.TaskKey)
	// RecentHere lists the attempts this node ran that ended since
	// since, newest first, at most limit, as far as the caller may see.
	RecentHere(ctx context.Context, since time.Time, limit int) ([]acct.Attempt, error)
}

// Handler serves the dashboard under /ui/: pages that read, and the
// actions of act.go, which the API's guard lets in only with a session
// that acts.
func Handler(src Source) http.Handler {
	h := &handler{src: src}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ui/{$}", h.overview)
	mux.HandleFunc("GET /ui/login", h.login)
	mux.HandleFunc("GET /ui/submit", h.submitForm)
	mux.HandleFunc("GET /ui/history", h.history)
	mux.HandleFunc("GET /ui/node", h.node)
	mux.HandleFunc("GET /ui/jobs/{id}", h.job)
	mux.HandleFunc("GET /ui/jobs/{id}/logs", h.logs)
	mux.HandleFunc("GET /ui/jobs/{id}/outputs/{task}/{file}", h.outputs)
	mux.HandleFunc("POST /ui/act/submit", h.submit)
	mux.HandleFunc("POST /ui/act/jobs/{id}/cancel", h.cancelJob)
	mux.HandleFunc("POST /ui/act/jobs/{id}/rerun", h.rerun)
	return mux
}

type handler struct{ src Source }

// peerRow is one node in the overview.
type peerRow struct {
	ID, Short, Site, Connection, Labels string
	Self                                bool
	CPU, FreeCPU, Memory, FreeMemory    string
	GPUs                                []gpuCell
	Devices                             []string
	Queue                               int
	Seen                                string
}

type gpuCell struct {
	Model, Memory string
	FreePct       int
}

func cpuText(milli int64) string { return fmt.Sprintf("%.1f", float64(milli)/1000) }

func rowOf(id, site, conn string, labels map[string]string, capacity, free resource.Vector) peerRow {
	r := peerRow{ID: id, Short: short(id), Site: site, Connection: conn,
		CPU: cpuText(capacity.CPU), FreeCPU: cpuText(free.CPU),
		Memory: resource.FormatSize(capacity.Memory), FreeMemory: resource.FormatSize(free.Memory)}
	var ls []string
	for k, v := range labels {
		ls = append(ls, k+"="+v)
	}
	sort.Strings(ls)
	r.Labels = strings.Join(ls, " ")
	for _, g := range capacity.GPUs {
		c := gpuCell{Model: g.Model, Memory: resource.FormatSize(g.Memory), FreePct: 100}
		for _, f := range free.GPUs {
			if f.Index == g.Index {
				c.FreePct = int(f.Free / 10)
			}
		}
		r.GPUs = append(r.GPUs, c)
	}
	for _, d := range capacity.Devices {
		left := 0
		for _, f := range free.Devices {
			if f.Kind == d.Kind && f.Model == d.Model {
				left = f.Count
			}
		}
		r.Devices = append(r.Devices, fmt.Sprintf("%s %s: %d of %d free", d.Kind, d.Model, left, d.Count))
	}
	return r
}

// short abbreviates a peer ID as the CLI does.
func short(id string) string {
	if len(id) <= 16 {
		return id
	}
	return id[:8] + "…" + id[len(id)-6:]
}

func (h *handler) overview(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	self, _ := h.src.Identity()
	capacity := h.src.Capacity()
	var peers []peerRow
	me := rowOf(self, "", "this node", nil, capacity, h.src.Free())
	me.Self = true
	peers = append(peers, me)
	for _, m := range h.src.Peers() {
		a := m.Advert
		p := rowOf(a.Peer.String(), a.Site, h.src.Connection(a.Peer.String()), a.Labels, a.Capacity, a.Free)
		p.Queue, p.Seen = a.Queue, ago(m.LastSeen)
		peers = append(peers, p)
	}
	sort.SliceStable(peers[1:], func(i, j int) bool { return peers[1+i].ID < peers[1+j].ID })
	jobs, err := h.src.ClusterJobs(ctx)
	slices.Reverse(jobs.Jobs) // newest first
	data := map[string]any{"Self": self, "Short": short(self), "Peers": peers, "Jobs": jobs.Jobs,
		"Unreachable": jobs.Unreachable, "Now": time.Now(), "Acts": api.SessionActs(r)}
	if err != nil {
		data["JobsError"] = err.Error()
	}
	render(w, overviewPage, data)
}

// taskBox is one task of a job's DAG.
type taskBox struct {
	Name, State, Title string
	X, Y               int
	Replicas           []market.TaskRecord
}

// edge joins two tasks of the DAG.
type edge struct{ X1, Y1, X2, Y2 int }

// Layout of the DAG's SVG.
const (
	boxW, boxH = 150, 40
	colGap     = 60
	rowGap     = 20
)

// dag lays a job's tasks out by depth (a task's column is one more than
// its deepest dependency's) and aggregates each task's replicas' states.
func dag(j market.JobRecord) ([]taskBox, []edge, int, int) {
	depth := map[string]int{}
	var walk func(name string, seen map[string]bool) int
	byName := map[string][]string{}
	for _, t := range j.Spec.Tasks {
		byName[t.Name] = t.After
	}
	walk = func(name string, seen map[string]bool) int {
		if d, ok := depth[name]; ok {
			return d
		}
		if seen[name] { // a cycle cannot pass validation; stay finite anyway
			return 0
		}
		seen[name] = true
		d := 0
		for _, a := range byName[name] {
			d = max(d, walk(a, seen)+1)
		}
		depth[name] = d
		return d
	}
	rows := map[int]int{}
	pos := map[string][2]int{}
	var boxes []taskBox
	width, height := 0, 0
	for _, t := range j.Spec.Tasks {
		d := walk(t.Name, map[string]bool{})
		x, y := 10+d*(boxW+colGap), 10+rows[d]*(boxH+rowGap)
		rows[d]++
		pos[t.Name] = [2]int{x, y}
		b := taskBox{Name: t.Name, X: x, Y: y}
		counts := map[market.TaskState]int{}
		for _, tr := range j.Tasks {
			if tr.Key.Task == t.Name {
				b.Replicas = append(b.Replicas, tr)
				counts[tr.State]++
			}
		}
		b.State = aggregate(counts, len(b.Replicas))
		var parts []string
		for st, n := range counts {
			parts = append(parts, fmt.Sprintf("%d %s", n, st))
		}
		sort.Strings(parts)
		b.Title = strings.Join(parts, ", ")
		boxes = append(boxes, b)
		width, height = max(width, x+boxW+10), max(height, y+boxH+10)
	}
	var edges []edge
	for _, t := range j.Spec.Tasks {
		for _, a := range t.After {
			from, to := pos[a], pos[t.Name]
			edges = append(edges, edge{from[0] + boxW, from[1] + boxH/2, to[0], to[1] + boxH/2})
		}
	}
	return boxes, edges, width, height
}

// aggregate is a task's state from its replicas': the least advanced
// wins, a failure over all.
func aggregate(c map[market.TaskState]int, n int) string {
	switch {
	case n == 0:
		return "waiting"
	case c[market.TaskFailed] > 0:
		return "failed"
	case c[market.TaskSucceeded] == n:
		return "succeeded"
	case c[market.TaskCancelled] > 0:
		return "cancelled"
	case c[market.TaskRunning] > 0:
		return "running"
	case c[market.TaskAwarded] > 0:
		return "awarded"
	case c[market.TaskPending] > 0:
		return "pending"
	}
	return "waiting"
}

func (h *handler) job(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	id := r.PathValue("id")
	j, err := h.src.Job(ctx, id)
	if errors.Is(err, api.ErrNotFound) {
		w.WriteHeader(http.StatusNotFound)
		render(w, errorPage, map[string]any{"Title": "No job " + id, "Error": "no node of the network knows job " + id})
		return
	}
	st := api.StatusOf(j)
	var waits []api.TaskStatus
	for _, t := range st.Tasks {
		if t.Waiting != "" {
			waits = append(waits, t)
		}
	}
	data := map[string]any{"Job": j, "Status": st, "Waits": waits, "Acts": api.SessionActs(r), "Done": j.State.Terminal()}
	var outs []api.TaskStatus
	for i, t := range j.Tasks {
		if t.Outputs != nil {
			outs = append(outs, st.Tasks[i])
		}
	}
	data["Outputs"] = outs
	if err != nil {
		data["Denied"] = err.Error() // a summary: the caller may not see the detail
	}
	boxes, edges, width, height := dag(j)
	data["Boxes"], data["Edges"], data["Width"], data["Height"] = boxes, edges, width, height
	self, _ := h.src.Identity()
	if string(j.Manager) == self && err == nil { // the event log is the detail too
		data["Events"] = h.src.Events(id)
	}
	data["Logs"] = h.logText(ctx, j)
	render(w, jobPage, data)
}

// logText is the latest output of each of a job's replicas that ran.
func (h *handler) logText(ctx context.Context, j market.JobRecord) string {
	var b strings.Builder
	for _, t := range j.Tasks {
		if len(t.History) == 0 {
			continue
		}
		at := t.History[len(t.History)-1]
		page, ok, err := h.src.TaskLog(ctx, at.Node, t.Key, at.Attempt, 0)
		if err != nil || !ok {
			continue
		}
		fmt.Fprintf(&b, "==> %s (attempt %d on %s) <==\n%s", t.Key, at.Attempt, short(string(at.Node)), page.Data)
		if page.Data != "" && !strings.HasSuffix(page.Data, "\n") {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// logs serves a job's latest output as text, for the job page's live
// refresh.
func (h *handler) logs(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	j, err := h.src.Job(ctx, r.PathValue("id"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Job-State", string(j.State))
	_, _ = w.Write([]byte(h.logText(ctx, j)))
}

// node is this node's page: its resources and devices, whether it is
// drained, the task replicas it runs and holds queued, and the attempts
// that ended here in the last day (its recent events).
func (h *handler) node(w http.ResponseWriter, r *http.Request) {
	self, addrs := h.src.Identity()
	row := rowOf(self, "", "this node", nil, h.src.Capacity(), h.src.Free())
	running, queued := h.src.RunningHere()
	data := map[string]any{"Self": self, "Short": short(self), "Addrs": addrs, "Row": row,
		"Drained": h.src.Drained(), "Running": running, "Queued": queued}
	recent, err := h.src.RecentHere(r.Context(), time.Now().Add(-24*time.Hour), recentAttempts)
	if err != nil {
		data["RecentError"] = err.Error()
	}
	data["Recent"] = recent
	render(w, nodePage, data)
}

// recentAttempts is how many ended attempts the node page lists.
const recentAttempts = 50

func (h *handler) login(w http.ResponseWriter, r *http.Request) {
	render(w, loginPage, nil)
}

// ago renders t relative to now (api.Ago).
func ago(t time.Time) string { return api.Ago(t, time.Now()) }

// agoText renders an API time (RFC 3339) relative to now.
func agoText(s string) string {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return "-"
	}
	return ago(t)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_ = json.NewEncoder(w).Encode(v)
}

func render(w http.ResponseWriter, t *template.Template, data any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'unsafe-inline'; img-src 'self' data:")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Referrer-Policy", "no-referrer")
	if err := t.Execute(w, data); err != nil {
		fmt.Fprintf(w, "<p>render: %s</p>", template.HTMLEscapeString(err.Error()))
	}
}
