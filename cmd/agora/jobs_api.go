package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/agora-sched/agora/node/api"
)

// jobStatus is the node's answer to GET /v1/jobs/{id}, and one element of
// GET /v1/jobs: the node's own type, so client and server cannot drift.
type jobStatus = api.JobStatus

// taskStatus is one task replica of a jobStatus.
type taskStatus = api.TaskStatus

// Polling periods and the outage a polling loop rides out; variables so
// that tests can shorten them.
var (
	waitInterval   = 250 * time.Millisecond // submit/run --wait
	followInterval = 300 * time.Millisecond // logs --follow
	retryWindow    = 10 * time.Second       // how long a lost node is retried
)

// terminal reports whether a job or task state is final.
func terminal(state string) bool {
	switch state {
	case "succeeded", "failed", "cancelled":
		return true
	}
	return false
}

// jobPath is the API path of a job, plus an optional suffix.
func jobPath(id, suffix string) string {
	return "/v1/jobs/" + url.PathEscape(id) + suffix
}

// replicaLabel names a task replica as task[replica].
func replicaLabel(task string, replica int) string {
	return fmt.Sprintf("%s[%d]", task, replica)
}

// shortID shortens a peer ID for progress lines, keeping both ends:
// 12D3KooW…x7Yq9a.
func shortID(id string) string {
	if len(id) <= 16 {
		return id
	}
	return id[:8] + "…" + id[len(id)-6:]
}

// retrier decides when a polling loop stops retrying a failed request.
type retrier struct {
	failingSince time.Time
}

// giveUp records a failed request and reports whether to stop: at once
// for an answer the node gave deliberately (a 4xx status), otherwise once
// requests have failed for retryWindow in a row.
func (r *retrier) giveUp(err error) bool {
	var ae *apiError
	if errors.As(err, &ae) && ae.Status < http.StatusInternalServerError {
		return true
	}
	now := time.Now()
	if r.failingSince.IsZero() {
		r.failingSince = now
	}
	return now.Sub(r.failingSince) >= retryWindow
}

// reset records a request that succeeded.
func (r *retrier) reset() { r.failingSince = time.Time{} }

// flagWasSet reports whether the named flag was given on the command line.
func flagWasSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == name {
			set = true
		}
	})
	return set
}

// printIndented re-indents a JSON answer from the node, keeping its field
// order.
func printIndented(w io.Writer, raw []byte) error {
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return err
	}
	b.WriteByte('\n')
	_, err := w.Write(b.Bytes())
	return err
}

// printLines writes a possibly multi-line message as one prefixed line per
// line, so that every line of an error names the command.
func printLines(w io.Writer, prefix, msg string) {
	for _, l := range strings.Split(strings.TrimRight(msg, "\n"), "\n") {
		fmt.Fprintln(w, prefix+l)
	}
}

// isStatus reports whether err is an answer from the node with the given
// HTTP status.
func isStatus(err error, status int) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.Status == status
}

// onlyArg checks that pos holds exactly one positional argument, the
// named one, and prints a usage error otherwise.
func onlyArg(cmd, what string, pos []string, stderr io.Writer) (string, bool) {
	switch {
	case len(pos) == 0:
		fmt.Fprintf(stderr, "agora %s: missing %s (usage: agora %s %s)\n", cmd, what, cmd, what)
		return "", false
	case len(pos) > 1:
		fmt.Fprintf(stderr, "agora %s: unexpected argument %q\n", cmd, pos[1])
		return "", false
	case pos[0] == "":
		fmt.Fprintf(stderr, "agora %s: empty %s\n", cmd, what)
		return "", false
	}
	return pos[0], true
}

// flatten joins a message that may span lines into one line.
func flatten(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
