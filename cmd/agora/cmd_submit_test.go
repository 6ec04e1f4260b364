package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const goodYAML = `# a comment the node should see too
name: hello
tasks:
  - name: main
    command: [echo, hi]
`

const goodJSON = `{"name": "hello", "tasks": [{"name": "main", "command": ["echo", "hi"]}]}`

// specFile writes a spec into a temporary directory.
func specFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// acceptJob answers a submission with job-1.
func acceptJob(r fakeReq, n int) (int, string) {
	if r.Method == "POST" && r.Path == "/v1/jobs" {
		return 201, `{"id": "job-1"}`
	}
	return 404, `{"error": "unexpected request"}`
}

func TestSubmitPostsRawFile(t *testing.T) {
	cases := []struct {
		name, file, body, ctype string
		flags                   []string
		want                    string
	}{
		{"yaml", "job.yaml", goodYAML, "application/yaml", nil, "job-1\n"},
		{"yml flags first", "job.yml", goodYAML, "application/yaml", []string{"--wait=false"}, "job-1\n"},
		{"json", "job.JSON", goodJSON, "application/json", nil, "job-1\n"},
		{"json output", "job.yaml", goodYAML, "application/yaml", []string{"--json"}, "{\n  \"id\": \"job-1\"\n}\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			node := newFakeNode(t, acceptJob)
			file := specFile(t, c.file, c.body)
			args := append(append([]string{"submit"}, c.flags...), file, "--api", node.api())
			out, errs, code := cli(t, args...)
			if code != exitOK {
				t.Fatalf("exit %d, stderr:\n%s", code, errs)
			}
			if out != c.want {
				t.Errorf("stdout %q, want %q", out, c.want)
			}
			reqs := node.requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests, want 1: %+v", len(reqs), reqs)
			}
			r := reqs[0]
			if r.Method != "POST" || r.Path != "/v1/jobs" || r.ContentType != c.ctype || string(r.Body) != c.body {
				t.Errorf("request %s %s (%s) body %q; want POST /v1/jobs (%s) with the file as is", r.Method, r.Path, r.ContentType, r.Body, c.ctype)
			}
		})
	}
}

func TestSubmitBadInput(t *testing.T) {
	badSpec := specFile(t, "bad.yaml", "name: hello\npriority: 42\ntasks:\n  - name: main\n    comand: [echo]\n")
	cases := []struct {
		name string
		args []string
		want []string // each must appear in stderr
	}{
		{"invalid spec", []string{badSpec}, []string{"agora submit: " + badSpec + ": priority", "agora submit: " + badSpec + ": tasks[0]"}},
		{"missing file", []string{"/nonexistent/job.yaml"}, []string{"agora submit: ", "/nonexistent/job.yaml"}},
		{"no file", nil, []string{"agora submit: missing FILE"}},
		{"two files", []string{badSpec, badSpec}, []string{"unexpected argument"}},
		{"unknown flag", []string{"--frob", badSpec}, []string{"frob"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			node := newFakeNode(t, acceptJob)
			_, errs, code := cli(t, append([]string{"submit", "--api", node.api()}, c.args...)...)
			if code != exitBadUsage {
				t.Fatalf("exit %d, want 2; stderr:\n%s", code, errs)
			}
			for _, w := range c.want {
				if !strings.Contains(errs, w) {
					t.Errorf("stderr does not contain %q:\n%s", w, errs)
				}
			}
			if n := len(node.requests()); n != 0 {
				t.Errorf("%d requests sent for bad input", n)
			}
		})
	}
}

func TestSubmitNodeRejects(t *testing.T) {
	node := newFakeNode(t, func(r fakeReq, n int) (int, string) {
		return 400, `{"error": "tasks[0].resources.gpu: no peer has that GPU\nsecond problem"}`
	})
	_, errs, code := cli(t, "submit", "--api", node.api(), specFile(t, "job.yaml", goodYAML))
	if code != exitBadUsage {
		t.Fatalf("exit %d, want 2", code)
	}
	want := "agora submit: tasks[0].resources.gpu: no peer has that GPU\nagora submit: second problem\n"
	if errs != want {
		t.Errorf("stderr %q, want %q", errs, want)
	}
}

func TestSubmitUnreachable(t *testing.T) {
	_, errs, code := cli(t, "submit", "--api", unreachableAPI(t), specFile(t, "job.yaml", goodYAML))
	if code != exitFailed || !strings.HasPrefix(errs, "agora submit: cannot reach") || strings.Count(errs, "\n") != 1 {
		t.Fatalf("exit %d, stderr %q; want 1 and one line", code, errs)
	}
}

const peerA = "12D3KooWAbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcdef"

// jobSeq answers a submission, then one status per poll from states
// (the last repeating).
func jobSeq(states ...string) answer {
	return func(r fakeReq, n int) (int, string) {
		switch {
		case r.Method == "POST":
			return 201, `{"id": "job-1"}`
		case r.Method == "GET" && r.Path == "/v1/jobs/job-1":
			return 200, states[min(n, len(states)-1)]
		}
		return 404, `{"error": "no job"}`
	}
}

func statusJSON(state, reason, task string) string {
	return fmt.Sprintf(`{"id": "job-1", "name": "hello", "state": %q, "reason": %q, "tasks": [%s]}`, state, reason, task)
}

func taskJSON(state, node string, attempts, exit int) string {
	return fmt.Sprintf(`{"name": "main", "replica": 0, "state": %q, "node": %q, "attempts": %d, "exit_code": %d}`, state, node, attempts, exit)
}

func TestSubmitWait(t *testing.T) {
	fastPolling(t)
	pending := statusJSON("pending", "", taskJSON("pending", "", 0, 0))
	running := statusJSON("running", "", taskJSON("running", peerA, 1, 0))
	cases := []struct {
		name   string
		states []string
		code   int
		want   []string
	}{
		{"succeeded", []string{pending, pending, running, running, statusJSON("succeeded", "", taskJSON("succeeded", peerA, 1, 0))}, exitOK,
			[]string{"job job-1: pending\nmain: pending\n", "job job-1: running\nmain: running on 12D3KooW…abcdef\n", "main: succeeded on 12D3KooW…abcdef\njob job-1 succeeded\n"}},
		{"failed", []string{running, statusJSON("failed", "task main failed: exit code 3", taskJSON("failed", peerA, 4, 3))}, exitFailed,
			[]string{"main: failed on 12D3KooW…abcdef (attempt 4): exit code 3\n", "agora submit: job job-1 failed: task main failed: exit code 3\n"}},
		{"cancelled", []string{running, statusJSON("cancelled", "cancelled by user", taskJSON("cancelled", peerA, 1, 0))}, exitFailed,
			[]string{"agora submit: job job-1 cancelled: cancelled by user\n"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			node := newFakeNode(t, jobSeq(c.states...))
			out, errs, code := cli(t, "submit", specFile(t, "job.yaml", goodYAML), "--wait", "--api", node.api())
			if code != c.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, c.code, errs)
			}
			if out != "job-1\n" {
				t.Errorf("stdout %q, want the job ID", out)
			}
			for _, w := range c.want {
				if !strings.Contains(errs, w) {
					t.Errorf("stderr does not contain %q:\n%s", w, errs)
				}
			}
			if strings.Count(errs, "main: running") > 1 {
				t.Errorf("an unchanged state was reported twice:\n%s", errs)
			}
		})
	}
}

func TestSubmitWaitNodeLost(t *testing.T) {
	fastPolling(t)
	running := statusJSON("running", "", taskJSON("running", peerA, 1, 0))
	node := newFakeNode(t, func(r fakeReq, n int) (int, string) {
		if r.Method == "POST" {
			return 201, `{"id": "job-1"}`
		}
		if n == 0 {
			return 200, running
		}
		return 0, "" // the node is gone
	})
	_, errs, code := cli(t, "submit", "--wait", "--api", node.api(), specFile(t, "job.yaml", goodYAML))
	if code != exitFailed {
		t.Fatalf("exit %d, want 1; stderr:\n%s", code, errs)
	}
	if !strings.Contains(errs, "agora submit: stopped waiting for job job-1") {
		t.Errorf("stderr does not say the wait stopped:\n%s", errs)
	}
	if n := len(node.requests()); n < 4 {
		t.Errorf("only %d requests: the lost node was not retried", n)
	}
}

func TestSubmitWaitJSONOutput(t *testing.T) {
	fastPolling(t)
	node := newFakeNode(t, jobSeq(statusJSON("succeeded", "", taskJSON("succeeded", peerA, 1, 0))))
	out, _, code := cli(t, "submit", "--json", "--wait", "--api", node.api(), specFile(t, "job.yaml", goodYAML))
	var r struct{ ID string }
	if code != exitOK || json.Unmarshal([]byte(out), &r) != nil || r.ID != "job-1" {
		t.Fatalf("exit %d, stdout %q; want 0 and {\"id\": \"job-1\"}", code, out)
	}
}
