package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agora-sched/agora/node/api"
)

const jobsList = `[
 {"id": "job-2", "name": "train", "state": "running", "reason": "", "manager": "` + peerA + `", "submitted": "2026-03-01T10:05:00Z", "finished": "",
  "tasks": [{"name": "prep", "replica": 0, "state": "succeeded"}, {"name": "train", "replica": 0, "state": "running"}, {"name": "train", "replica": 1, "state": "running"}]},
 {"id": "job-1", "name": "hello", "state": "succeeded", "reason": "", "manager": "` + peerA + `", "submitted": "2026-03-01T10:00:00Z", "finished": "2026-03-01T10:00:02Z",
  "tasks": [{"name": "main", "replica": 0, "state": "succeeded"}]}
]`

func TestJobsTable(t *testing.T) {
	node := newFakeNode(t, func(r fakeReq, n int) (int, string) { return 200, jobsList })
	out, errs, code := cli(t, "jobs", "--api", node.api())
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 {
		t.Fatalf("want a header and two rows:\n%s", out)
	}
	// Submission times as relative times, as with --all (issue 47).
	ago := func(ts string) []string { return strings.Fields(api.Ago(parseTime(ts), time.Now())) }
	want := [][]string{
		{"ID", "NAME", "STATE", "TASKS", "SUBMITTED"},
		append([]string{"job-1", "hello", "succeeded", "1/1", "done"}, ago("2026-03-01T10:00:00Z")...), // oldest first
		append([]string{"job-2", "train", "running", "1/3", "done"}, ago("2026-03-01T10:05:00Z")...),
	}
	for i, w := range want {
		if got := strings.Fields(lines[i]); strings.Join(got, " ") != strings.Join(w, " ") {
			t.Errorf("line %d = %q, want fields %q", i, lines[i], w)
		}
	}
	if r := node.requests(); len(r) != 1 || r[0].Method != "GET" || r[0].Path != "/v1/jobs" {
		t.Errorf("requests %+v, want GET /v1/jobs", r)
	}
}

func TestJobsJSONAndErrors(t *testing.T) {
	cases := []struct {
		name   string
		answer string
		code   int
		stdout string
	}{
		{"list", jobsList, exitOK, indentJSON(t, jobsList)},
		{"null", "null", exitOK, "[]\n"},
		{"garbage", "{", exitFailed, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			node := newFakeNode(t, func(r fakeReq, n int) (int, string) { return 200, c.answer })
			out, errs, code := cli(t, "jobs", "--json", "--api", node.api())
			if code != c.code || out != c.stdout {
				t.Fatalf("exit %d, stdout %q (stderr %q); want %d, %q", code, out, errs, c.code, c.stdout)
			}
		})
	}
	if _, errs, code := cli(t, "jobs", "--api", unreachableAPI(t)); code != exitFailed || !strings.HasPrefix(errs, "agora jobs: ") {
		t.Errorf("unreachable node: exit %d, stderr %q", code, errs)
	}
	if _, _, code := cli(t, "jobs", "extra"); code != exitBadUsage {
		t.Errorf("extra argument: exit %d, want 2", code)
	}
}

func indentJSON(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Indent(&b, []byte(s), "", "  "); err != nil {
		t.Fatal(err)
	}
	return b.String() + "\n"
}

// jobStatusJSON has its fields out of the usual order and one the client
// does not know, to show --json passes the node's answer through.
const jobStatusJSON = `{"state": "failed", "id": "job-7", "name": "train", "reason": "task train[1] failed: exit code 2", "manager": "` + peerA + `",
 "submitted": "2026-03-01T10:00:00Z", "finished": "2026-03-01T10:09:00Z", "extra": {"x": 1},
 "tasks": [
  {"name": "prep", "replica": 0, "state": "succeeded", "node": "` + peerA + `", "attempts": 1, "exit_code": 0, "reason": "", "started": "", "finished": ""},
  {"name": "train", "replica": 1, "state": "failed", "node": "` + peerA + `", "attempts": 3, "exit_code": 2, "reason": "exit code 2", "started": "", "finished": ""},
  {"name": "report", "replica": 0, "state": "cancelled", "node": "", "attempts": 0, "exit_code": 0, "reason": "", "started": "", "finished": ""}
 ]}`

func TestStatus(t *testing.T) {
	node := newFakeNode(t, func(r fakeReq, n int) (int, string) {
		if r.Path == "/v1/jobs/job-7" {
			return 200, jobStatusJSON
		}
		return 404, `{"error": "no job"}`
	})
	t.Run("json passthrough", func(t *testing.T) {
		out, errs, code := cli(t, "status", "job-7", "--json", "--api", node.api())
		if code != exitOK || out != indentJSON(t, jobStatusJSON) {
			t.Fatalf("exit %d, stderr %q, stdout:\n%s", code, errs, out)
		}
	})
	t.Run("table", func(t *testing.T) {
		out, errs, code := cli(t, "status", "--api", node.api(), "job-7")
		if code != exitOK {
			t.Fatalf("exit %d, stderr:\n%s", code, errs)
		}
		for _, w := range []string{"id:        job-7\n", "name:      train\n", "state:     failed\n", "reason:    task train[1] failed: exit code 2\n", "manager:   " + peerA + "\n"} {
			if !strings.Contains(out, w) {
				t.Errorf("output lacks %q:\n%s", w, out)
			}
		}
		head, table, _ := strings.Cut(out, "\n\n")
		if strings.Contains(head, "TASK") {
			t.Fatalf("no blank line between header and table:\n%s", out)
		}
		rows := strings.Split(strings.TrimSuffix(table, "\n"), "\n")
		want := []string{
			"TASK STATE NODE ATTEMPTS EXIT REASON",
			"prep[0] succeeded " + peerA + " 1 0",
			"train[1] failed " + peerA + " 3 2 exit code 2",
			"report[0] cancelled - 0 -",
		}
		if len(rows) != len(want) {
			t.Fatalf("table has %d lines, want %d:\n%s", len(rows), len(want), table)
		}
		for i, w := range want {
			if got := strings.Join(strings.Fields(rows[i]), " "); got != w {
				t.Errorf("row %d = %q, want %q", i, got, w)
			}
			if strings.HasSuffix(rows[i], " ") {
				t.Errorf("row %d has trailing spaces: %q", i, rows[i])
			}
		}
	})
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown job", []string{"job-404", "--api", node.api()}, exitFailed, "agora status: no job job-404\n"},
		{"unreachable", []string{"job-7", "--api", unreachableAPI(t)}, exitFailed, "agora status: cannot reach"},
		{"missing job", []string{"--api", node.api()}, exitBadUsage, "agora status: missing JOB"},
		{"two jobs", []string{"a", "b", "--api", node.api()}, exitBadUsage, "agora status: unexpected argument \"b\""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, errs, code := cli(t, append([]string{"status"}, c.args...)...)
			if code != c.code || !strings.HasPrefix(errs, c.want) || out != "" {
				t.Fatalf("exit %d, stdout %q, stderr %q; want %d and %q", code, out, errs, c.code, c.want)
			}
		})
	}
}

func TestCancel(t *testing.T) {
	cases := []struct {
		name   string
		status int
		answer string
		code   int
		stdout string
		stderr string
	}{
		{"cancelled", 200, `{"id": "job-1", "state": "cancelled"}`, exitOK, "cancelled job-1\n", ""},
		{"unknown", 404, `{"error": "no job job-1"}`, exitFailed, "", "agora cancel: no job job-1\n"},
		{"finished", 409, `{"error": "job job-1 already succeeded"}`, exitFailed, "", "agora cancel: job job-1 already succeeded\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			node := newFakeNode(t, func(r fakeReq, n int) (int, string) { return c.status, c.answer })
			out, errs, code := cli(t, "cancel", "job-1", "--api", node.api())
			if code != c.code || out != c.stdout || errs != c.stderr {
				t.Fatalf("exit %d, stdout %q, stderr %q; want %d, %q, %q", code, out, errs, c.code, c.stdout, c.stderr)
			}
			if r := node.requests(); len(r) != 1 || r[0].Method != "DELETE" || r[0].Path != "/v1/jobs/job-1" {
				t.Errorf("requests %+v, want DELETE /v1/jobs/job-1", r)
			}
		})
	}
	if _, errs, code := cli(t, "cancel"); code != exitBadUsage || !strings.HasPrefix(errs, "agora cancel: missing JOB") {
		t.Errorf("no job: exit %d, stderr %q", code, errs)
	}
}
