package main

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestRunBuildsSpec(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string // the spec posted, as JSON
	}{
		{"defaults", []string{"--", "echo", "hi"},
			`{"name": "run-echo", "type": "run-echo", "priority": 5, "tasks": [{"name": "main", "command": ["echo", "hi"], "resources": {}, "retries": 0}]}`},
		{"no dashes", []string{"--cpu", "0.5", "sleep", "1"},
			`{"name": "run-sleep", "type": "run-sleep", "priority": 5, "tasks": [{"name": "main", "command": ["sleep", "1"], "resources": {"cpu": 0.5}, "retries": 0}]}`},
		{"everything", []string{"--cpu", "2", "--mem", "4GiB", "--gpu", "2", "--gpu-mem", "40GiB", "--gpu-model", "A100",
			"--priority", "8", "--name", "train", "--retries", "0", "--timeout", "1h", "--", "/usr/bin/python3", "train.py", "--epochs", "3"},
			`{"name": "train", "type": "train", "priority": 8, "tasks": [{"name": "main", "command": ["/usr/bin/python3", "train.py", "--epochs", "3"],
			  "resources": {"cpu": 2, "memory": "4GiB", "gpu": {"count": 2, "memory": "40GiB", "model": "A100"}}, "retries": 0, "timeout": "1h"}]}`},
		{"gpu share", []string{"--gpu", "0.25", "--type", "smi", "--", "nvidia-smi"},
			`{"name": "run-nvidia-smi", "type": "smi", "priority": 5, "tasks": [{"name": "main", "command": ["nvidia-smi"], "resources": {"gpu": {"share": 0.25}}, "retries": 0}]}`},
		{"millicores, flags after the command", []string{"ls", "--cpu", "500m", "--priority", "0"},
			`{"name": "run-ls", "type": "run-ls", "priority": 0, "tasks": [{"name": "main", "command": ["ls"], "resources": {"cpu": "500m"}, "retries": 0}]}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			node := newFakeNode(t, acceptJob)
			out, errs, code := cli(t, append([]string{"run", "--api", node.api()}, c.args...)...)
			if code != exitOK {
				t.Fatalf("exit %d, stderr:\n%s", code, errs)
			}
			if out != "job-1\n" {
				t.Errorf("stdout %q, want the job ID", out)
			}
			reqs := node.requests()
			if len(reqs) != 1 || reqs[0].Method != "POST" || reqs[0].Path != "/v1/jobs" || reqs[0].ContentType != "application/json" {
				t.Fatalf("requests %+v, want one JSON POST /v1/jobs", reqs)
			}
			var got, want any
			if err := json.Unmarshal(reqs[0].Body, &got); err != nil {
				t.Fatalf("posted body is not JSON: %v\n%s", err, reqs[0].Body)
			}
			if err := json.Unmarshal([]byte(c.want), &want); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("posted\n%s\nwant\n%s", reqs[0].Body, c.want)
			}
		})
	}
}

func TestRunBadFlags(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"bad mem", []string{"--mem", "lots", "--", "echo"}, "agora run: --mem: "},
		{"negative mem", []string{"--mem", "-1GiB", "--", "echo"}, "agora run: --mem: "},
		{"bad cpu", []string{"--cpu", "many", "--", "echo"}, "agora run: --cpu: "},
		{"cpu over limit", []string{"--cpu", "100000", "--", "echo"}, "agora run: --cpu: "},
		{"gpu 1.5", []string{"--gpu", "1.5", "--", "echo"}, "agora run: --gpu: "},
		{"gpu zero", []string{"--gpu", "0", "--", "echo"}, "agora run: --gpu: "},
		{"gpu word", []string{"--gpu", "one", "--", "echo"}, "agora run: --gpu: "},
		{"gpu too many", []string{"--gpu", "65", "--", "echo"}, "agora run: --gpu: "},
		{"gpu-mem without gpu", []string{"--gpu-mem", "4GiB", "--", "echo"}, "agora run: --gpu-mem needs --gpu"},
		{"bad gpu-mem", []string{"--gpu", "1", "--gpu-mem", "big", "--", "echo"}, "agora run: --gpu-mem: "},
		{"priority", []string{"--priority", "11", "--", "echo"}, "agora run: --priority: 11 out of range"},
		{"priority word", []string{"--priority", "high", "--", "echo"}, "priority"},
		{"retries", []string{"--retries", "-1", "--", "echo"}, "agora run: --retries: "},
		{"timeout", []string{"--timeout", "soon", "--", "echo"}, "agora run: --timeout: "},
		{"empty program", []string{"--", ""}, "agora run: command: "},
		{"missing command", []string{"--cpu", "2"}, "agora run: missing command"},
		{"missing command after dashes", []string{"--"}, "agora run: missing command"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			node := newFakeNode(t, acceptJob)
			_, errs, code := cli(t, append([]string{"run", "--api", node.api()}, c.args...)...)
			if code != exitBadUsage {
				t.Fatalf("exit %d, want 2; stderr:\n%s", code, errs)
			}
			if !strings.Contains(errs, c.want) {
				t.Errorf("stderr does not contain %q:\n%s", c.want, errs)
			}
			if n := len(node.requests()); n != 0 {
				t.Errorf("%d requests sent for bad flags", n)
			}
		})
	}
}

// TestRunWait (issue 26, done-when 3, against a canned node): run --wait
// prints the task's standard output on stdout and its standard error on
// stderr, split along the spans the node marks, and exits with the
// task's exit code; the job ID goes to stderr.
func TestRunWait(t *testing.T) {
	fastPolling(t)
	running := statusJSON("running", "", taskJSON("running", peerA, 1, 0))
	failed := statusJSON("failed", "task main failed: exit code 3", taskJSON("failed", peerA, 1, 3))
	node := newFakeNode(t, func(r fakeReq, n int) (int, string) {
		switch {
		case r.Method == "POST":
			return 201, `{"id": "job-1"}`
		case r.Path == "/v1/jobs/job-1" && n < 1:
			return 200, running
		case r.Path == "/v1/jobs/job-1":
			return 200, failed
		case r.Path == "/v1/jobs/job-1/logs" && strings.Contains(r.Query, "from=3"):
			return 200, `{"id": "job-1", "state": "failed", "logs": [{"task": "main", "replica": 0, "attempt": 1, "node": "` + peerA + `", "data": "", "next": 3}]}`
		case r.Path == "/v1/jobs/job-1/logs":
			return 200, `{"id": "job-1", "state": "running", "logs": [{"task": "main", "replica": 0, "attempt": 1, "node": "` + peerA + `", "data": "out\nerr\nmore\n", "next": 3, "stderr": [{"off": 4, "len": 4}]}]}`
		}
		return 404, `{"error": "no such thing"}`
	})
	out, errs, code := cli(t, "run", "--wait", "--api", node.api(), "--", "sh", "-c", "echo out; echo err >&2; echo more; exit 3")
	if code != 3 || out != "out\nmore\n" || !strings.Contains(errs, "err\n") || strings.Contains(errs, "out") {
		t.Fatalf("exit %d (want 3), stdout %q (want the task's stdout), stderr: %q", code, out, errs)
	}
	if !strings.HasPrefix(errs, "job job-1\n") || !strings.Contains(errs, "agora run: job job-1 failed: task main failed: exit code 3\n") {
		t.Fatalf("stderr lacks the job ID or the failure:\n%s", errs)
	}
}
