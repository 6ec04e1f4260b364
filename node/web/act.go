package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agora-sched/agora/market/spec"
	"github.com/agora-sched/agora/node/api"
)

// The dashboard's actions: submit a spec (pasted or uploaded), cancel a
// job, run a job's spec again, download a replica's outputs. The forms
// post to /ui/act/..., which the API's guard lets in only with a session
// that acts (bought with the API token) and from the dashboard's own
// origin; each answers with a redirect to the page to look at next (or
// the form again, with the spec's problems as the CLI words them).

// maxSpecForm bounds a submitted form: a spec is at most spec.MaxSpecBytes.
const maxSpecForm = spec.MaxSpecBytes + 64<<10

func (h *handler) submit(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxSpecForm)
	text := ""
	if strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/form-data") {
		if err := r.ParseMultipartForm(maxSpecForm); err != nil {
			h.submitFailed(w, r, "", "the form: "+err.Error())
			return
		}
		if f, _, err := r.FormFile("file"); err == nil {
			b, err := io.ReadAll(io.LimitReader(f, spec.MaxSpecBytes+1))
			f.Close()
			if err != nil {
				h.submitFailed(w, r, "", "the file: "+err.Error())
				return
			}
			text = string(b)
		}
	} else if err := r.ParseForm(); err != nil {
		h.submitFailed(w, r, "", "the form: "+err.Error())
		return
	}
	if strings.TrimSpace(text) == "" {
		text = r.PostFormValue("spec")
	}
	if strings.TrimSpace(text) == "" {
		h.submitFailed(w, r, text, "no spec: paste one or choose a file")
		return
	}
	js, err := spec.Parse([]byte(text), time.Now())
	if err != nil {
		h.submitFailed(w, r, text, err.Error())
		return
	}
	if locals := js.LocalInputs(); len(locals) > 0 {
		h.submitFailed(w, r, text, "local inputs are uploaded by the agora command (agora submit), not read by a node: "+locals[0])
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	id, err := h.src.Submit(ctx, *js)
	if err != nil {
		h.submitFailed(w, r, text, err.Error())
		return
	}
	http.Redirect(w, r, "/ui/jobs/"+id, http.StatusSeeOther)
}

// submitFailed shows the submit form again with the spec and what is
// wrong with it, one problem a line.
func (h *handler) submitFailed(w http.ResponseWriter, r *http.Request, text, problem string) {
	w.WriteHeader(http.StatusBadRequest)
	render(w, submitPage, map[string]any{"Spec": text, "Problems": strings.Split(problem, "\n")})
}

func (h *handler) submitForm(w http.ResponseWriter, r *http.Request) {
	render(w, submitPage, map[string]any{"Acts": api.SessionActs(r)})
}

func (h *handler) cancelJob(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	ctx, cancel := context.WithTimeout(r.Context(), 15*time.Second)
	defer cancel()
	if err := h.src.Cancel(ctx, id); err != nil {
		h.actFailed(w, id, "cancel", err)
		return
	}
	http.Redirect(w, r, "/ui/jobs/"+id, http.StatusSeeOther)
}

// rerun submits a job's spec again, as a new job.
func (h *handler) rerun(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	j, err := h.src.Job(ctx, id)
	if err != nil {
		h.actFailed(w, id, "re-run", err)
		return
	}
	js := j.Spec
	js.Deadline = time.Time{} // a deadline was the first run's
	nid, err := h.src.Submit(ctx, js)
	if err != nil {
		h.actFailed(w, id, "re-run", err)
		return
	}
	http.Redirect(w, r, "/ui/jobs/"+nid, http.StatusSeeOther)
}

func (h *handler) actFailed(w http.ResponseWriter, id, what string, err error) {
	code := http.StatusBadRequest
	switch {
	case errors.Is(err, api.ErrNotFound):
		code = http.StatusNotFound
	case errors.Is(err, api.ErrForbidden):
		code = http.StatusForbidden
	}
	w.WriteHeader(code)
	render(w, errorPage, map[string]any{"Title": what + " " + id, "Error": what + " job " + id + ": " + err.Error()})
}

// outputs sends a replica's outputs as a .tar.gz.
func (h *handler) outputs(w http.ResponseWriter, r *http.Request) {
	id, task := r.PathValue("id"), r.PathValue("task")
	replica, err := strconv.Atoi(strings.TrimSuffix(r.PathValue("file"), ".tar.gz"))
	if err != nil || replica < 0 || !strings.HasSuffix(r.PathValue("file"), ".tar.gz") {
		http.Error(w, "want /ui/jobs/JOB/outputs/TASK/REPLICA.tar.gz", http.StatusNotFound)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Minute)
	defer cancel()
	// Written to a buffer first: a failure half-way must not reach the
	// browser as a truncated archive with a 200.
	var buf strings.Builder
	if err := h.src.OutputsArchive(ctx, &buf, id, task, replica); err != nil {
		h.actFailed(w, id, "download outputs of", err)
		return
	}
	w.Header().Set("Content-Type", "application/gzip")
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="%s-%s-%d.tar.gz"`, id, task, replica))
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = io.WriteString(w, buf.String())
}
