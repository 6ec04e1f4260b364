package main

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agora-sched/agora/market/spec"
)

func init() {
	register("submit", "submit a job spec file (YAML or JSON)", cmdSubmit)
}

func cmdSubmit(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("submit", stdout, stderr)
	api := apiFlag(fs)
	cred := credentialFlag(fs)
	wait := fs.Bool("wait", false, "wait for the job to finish; exit 0 only if it succeeded")
	asJSON := fs.Bool("json", false, `print {"id": ...} instead of the bare job ID`)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if code := loadCredential(*cred, "submit", stderr); code != exitOK {
		return code
	}
	file, ok := onlyArg("submit", "FILE", pos, stderr)
	if !ok {
		return exitBadUsage
	}
	data, err := os.ReadFile(file)
	if err != nil {
		fmt.Fprintf(stderr, "agora submit: %v\n", err)
		return exitBadUsage
	}
	if _, err := spec.Parse(data, time.Now()); err != nil {
		printLines(stderr, "agora submit: "+file+": ", err.Error())
		return exitBadUsage
	}
	ctype := "application/yaml"
	if strings.EqualFold(filepath.Ext(file), ".json") {
		ctype = "application/json"
	}
	var progress io.Writer
	if isTerminal(stderr) {
		progress = stderr
	}
	up, err := uploadInputs(newClient(*api), data, filepath.Dir(file), progress)
	if err != nil {
		fmt.Fprintf(stderr, "agora submit: %v\n", err)
		var bad badInput
		if errors.As(err, &bad) {
			return exitBadUsage
		}
		return exitFailed
	}
	if len(up) != len(data) || string(up) != string(data) {
		data, ctype = up, "application/yaml"
	}
	return submitJob("submit", *api, data, ctype, *wait, *asJSON, stdout, stderr)
}

// submitJob posts a validated spec, prints the new job's ID and, with
// wait, follows the job to its end. It returns the command's exit code.
func submitJob(cmd, api string, body []byte, ctype string, wait, asJSON bool, stdout, stderr io.Writer) int {
	id, code := postJob(cmd, api, body, ctype, stderr)
	if code != exitOK {
		return code
	}
	r := submitted{ID: id}
	if asJSON {
		printJSON(stdout, r)
	} else {
		fmt.Fprintln(stdout, r.ID)
	}
	if !wait {
		return exitOK
	}
	return waitJob(cmd, api, r.ID, stderr)
}

// submitted is the node's answer to a submission, and what --json prints.
type submitted struct {
	ID string `json:"id"`
}

// postJob posts a validated spec and returns the new job's ID, or the
// exit code of a failure it reported.
func postJob(cmd, api string, body []byte, ctype string, stderr io.Writer) (string, int) {
	var r submitted
	pinned, err := pinImages(newClient(api), body)
	if pinned != nil {
		body, ctype = pinned, "application/yaml"
	}
	if err == nil {
		err = newClient(api).send("POST", "/v1/jobs", ctype, body, &r)
	}
	var ae *apiError
	switch {
	case errors.As(err, &ae) && ae.Status == http.StatusBadRequest:
		printLines(stderr, "agora "+cmd+": ", ae.Msg)
		return "", exitBadUsage
	case err != nil:
		fmt.Fprintf(stderr, "agora %s: %v\n", cmd, err)
		return "", exitFailed
	case r.ID == "":
		fmt.Fprintf(stderr, "agora %s: the node accepted the job but sent no job ID\n", cmd)
		return "", exitFailed
	}
	return r.ID, exitOK
}

// waitJob polls a job until it ends, printing a progress line to stderr
// for every change of the job's or a task's state. It returns exitOK if
// the job succeeded and exitFailed otherwise, or when the node stays
// unreachable for retryWindow.
func waitJob(cmd, api, id string, stderr io.Writer) int {
	c := newPollClient(api)
	var r retrier
	var last *jobStatus
	for {
		var st jobStatus
		if err := c.do("GET", jobPath(id, ""), nil, &st); err != nil {
			if r.giveUp(err) {
				fmt.Fprintf(stderr, "agora %s: stopped waiting for job %s: %v\n", cmd, id, err)
				return exitFailed
			}
		} else {
			r.reset()
			reportProgress(stderr, id, last, &st)
			last = &st
			if terminal(st.State) {
				if st.State == "succeeded" {
					fmt.Fprintf(stderr, "job %s succeeded\n", id)
					return exitOK
				}
				msg := fmt.Sprintf("agora %s: job %s %s", cmd, id, st.State)
				if st.Reason != "" {
					msg += ": " + flatten(st.Reason)
				}
				fmt.Fprintln(stderr, msg)
				return exitFailed
			}
		}
		time.Sleep(waitInterval)
	}
}

// reportProgress prints what changed between two polls of a job: its
// state while it runs (the end is reported by waitJob), and each task
// replica whose state, node or attempt changed.
func reportProgress(w io.Writer, id string, prev, cur *jobStatus) {
	if !terminal(cur.State) && (prev == nil || prev.State != cur.State) {
		fmt.Fprintf(w, "job %s: %s\n", id, cur.State)
	}
	type key struct {
		name    string
		replica int
	}
	before := map[key]taskStatus{}
	if prev != nil {
		for _, t := range prev.Tasks {
			before[key{t.Name, t.Replica}] = t
		}
	}
	replicas := map[string]int{}
	for _, t := range cur.Tasks {
		replicas[t.Name]++
	}
	for _, t := range cur.Tasks {
		old, seen := before[key{t.Name, t.Replica}]
		if seen && old.State == t.State && old.Node == t.Node && old.Attempts == t.Attempts {
			continue
		}
		label := t.Name
		if replicas[t.Name] > 1 || t.Replica != 0 {
			label = replicaLabel(t.Name, t.Replica)
		}
		fmt.Fprintf(w, "%s: %s\n", label, describeTask(t))
	}
}

// describeTask renders a task replica's state for a progress line, e.g.
// "running on 12D3KooW…x7Yq9a (attempt 2)" or "failed: exit code 3".
func describeTask(t taskStatus) string {
	s := t.State
	if t.Node != "" && t.State != "waiting" && t.State != "pending" {
		s += " on " + shortID(t.Node)
	}
	if t.Attempts > 1 {
		s += fmt.Sprintf(" (attempt %d)", t.Attempts)
	}
	switch {
	case (t.State == "failed" || t.State == "cancelled") && t.Reason != "":
		s += ": " + flatten(t.Reason)
	case t.State == "failed" && t.ExitCode != 0:
		s += fmt.Sprintf(": exit code %d", t.ExitCode)
	}
	return s
}
