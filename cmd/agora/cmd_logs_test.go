package main

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// logsJSON renders a logs answer.
func logsJSON(state string, entries ...logEntry) string {
	b, _ := json.Marshal(logsAnswer{ID: "job-1", State: state, Logs: entries})
	return string(b)
}

func TestLogsPrint(t *testing.T) {
	a := logEntry{Task: "main", Replica: 0, Attempt: 1, Node: peerA, Data: "hello\nworld\n", Next: 3}
	b := logEntry{Task: "train", Replica: 1, Attempt: 2, Node: peerA, Data: "no newline", Next: 2}
	c := logEntry{Task: "report", Replica: 0, Next: 1}
	cases := []struct {
		name    string
		flags   []string
		answer  string
		query   string
		want    string
		wantErr string
		code    int
	}{
		{"one replica", nil, logsJSON("running", a), "", "hello\nworld\n", "", exitOK},
		{"filtered", []string{"--task", "main", "--replica", "0"}, logsJSON("running", a), "replica=0&task=main", "hello\nworld\n", "", exitOK},
		{"several replicas", nil, logsJSON("running", a, b, c), "",
			"==> main[0] (attempt 1 on " + peerA + ") <==\nhello\nworld\n\n" +
				"==> train[1] (attempt 2 on " + peerA + ") <==\nno newline\n\n" +
				"==> report[0] (not started) <==\n", "", exitOK},
		{"no output", nil, logsJSON("pending"), "", "", "", exitOK},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			node := newFakeNode(t, func(r fakeReq, n int) (int, string) { return 200, c.answer })
			out, errs, code := cli(t, append([]string{"logs", "job-1", "--api", node.api()}, c.flags...)...)
			if code != c.code || out != c.want || errs != c.wantErr {
				t.Fatalf("exit %d, stderr %q, stdout:\n%q\nwant:\n%q", code, errs, out, c.want)
			}
			r := node.requests()
			if len(r) != 1 || r[0].Path != "/v1/jobs/job-1/logs" || r[0].Query != c.query {
				t.Errorf("requests %+v, want one GET /v1/jobs/job-1/logs?%s", r, c.query)
			}
		})
	}
}

func TestLogsErrors(t *testing.T) {
	node := newFakeNode(t, func(r fakeReq, n int) (int, string) { return 404, `{"error": "no job job-9"}` })
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown job", []string{"job-9", "--api", node.api()}, exitFailed, "agora logs: no job job-9\n"},
		{"missing job", nil, exitBadUsage, "agora logs: missing JOB"},
		{"negative replica", []string{"job-9", "--replica", "-1"}, exitBadUsage, "agora logs: --replica -1"},
		{"unreachable", []string{"job-9", "--api", unreachableAPI(t)}, exitFailed, "agora logs: cannot reach"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, errs, code := cli(t, append([]string{"logs"}, c.args...)...)
			if code != c.code || !strings.HasPrefix(errs, c.want) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", code, errs, c.code, c.want)
			}
		})
	}
}

// logScript fakes a job's log store: chunks[task][attempt] lists each
// attempt's output chunks (numbered from 1); attemptAt gives the attempt
// current at each logs request (0: not started), endAt the request from
// which the job is over. Output appears one chunk per request, all of it
// once the job is over.
type logScript struct {
	chunks    map[string][][]string
	attemptAt func(task string, poll int) int
	endAt     int
}

func (s *logScript) answer() answer {
	var mu sync.Mutex
	polls := 0
	return func(r fakeReq, n int) (int, string) {
		mu.Lock()
		defer mu.Unlock()
		state := "running"
		if polls >= s.endAt {
			state = "succeeded"
		}
		if r.Path == "/v1/jobs/job-1" { // status, for finding replicas that started
			var tasks []string
			for name := range s.chunks {
				tasks = append(tasks, fmt.Sprintf(`{"name": %q, "replica": 0, "attempts": %d}`, name, s.attemptAt(name, max(polls, 1))))
			}
			return 200, fmt.Sprintf(`{"id": "job-1", "state": %q, "tasks": [%s]}`, state, strings.Join(tasks, ","))
		}
		q, _ := url.ParseQuery(r.Query)
		polls++
		if polls > s.endAt {
			state = "succeeded"
		}
		var entries []logEntry
		for name, attempts := range s.chunks {
			if q.Get("task") != "" && q.Get("task") != name {
				continue
			}
			att := s.attemptAt(name, polls)
			if att == 0 {
				continue
			}
			data := attempts[att-1]
			from := 1
			if f := q.Get("from"); f != "" {
				from, _ = strconv.Atoi(f)
				if q.Get("task") == "" || q.Get("replica") == "" {
					return 400, `{"error": "from needs task and replica"}`
				}
			}
			avail := min(polls, len(data))
			if state == "succeeded" {
				avail = len(data)
			}
			var text string
			if from <= avail {
				text = strings.Join(data[from-1:avail], "")
			}
			entries = append(entries, logEntry{Task: name, Attempt: att, Node: peerA, Data: text, Next: uint64(max(avail+1, from))})
		}
		return 200, logsJSON(state, entries...)
	}
}

func TestLogsFollow(t *testing.T) {
	fastPolling(t)
	t.Run("one replica", func(t *testing.T) {
		s := &logScript{
			chunks:    map[string][][]string{"main": {{"one\n", "two\n", "three\n", "four\n"}}},
			attemptAt: func(string, int) int { return 1 },
			endAt:     3,
		}
		node := newFakeNode(t, s.answer())
		out, errs, code := cli(t, "logs", "--follow", "job-1", "--api", node.api())
		if code != exitOK || out != "one\ntwo\nthree\nfour\n" {
			t.Fatalf("exit %d, stderr %q, stdout %q", code, errs, out)
		}
		var reqs []fakeReq
		for _, r := range node.requests() {
			if r.Path == "/v1/jobs/job-1/logs" {
				reqs = append(reqs, r)
			}
		}
		last := reqs[len(reqs)-1]
		if last.Query != "from=5&replica=0&task=main" {
			t.Errorf("last request %q, want from=5 for task main replica 0", last.Query)
		}
		// After the job ended: one poll brought the rest, the next nothing.
		if len(reqs) > 6 {
			t.Errorf("%d requests: follow did not stop promptly", len(reqs))
		}
	})
	t.Run("retried attempt", func(t *testing.T) {
		s := &logScript{
			chunks:    map[string][][]string{"main": {{"a1\n", "a2\n", "a3\n"}, {"b1\n", "b2\n"}}},
			attemptAt: func(_ string, poll int) int { return 1 + min(poll/3, 1) },
			endAt:     5,
		}
		node := newFakeNode(t, s.answer())
		out, errs, code := cli(t, "logs", "--follow", "job-1", "--api", node.api())
		want := "a1\na2\n\n==> main[0] (attempt 2 on " + peerA + ") <==\nb1\nb2\n"
		if code != exitOK || out != want {
			t.Fatalf("exit %d, stderr %q, stdout:\n%q\nwant:\n%q", code, errs, out, want)
		}
	})
	t.Run("two tasks interleaved", func(t *testing.T) {
		s := &logScript{
			chunks:    map[string][][]string{"x": {{"x1\n", "x2\n"}}, "y": {{"y1\n", "y2\n"}}},
			attemptAt: func(string, int) int { return 1 },
			endAt:     4,
		}
		node := newFakeNode(t, s.answer())
		out, errs, code := cli(t, "logs", "--follow", "job-1", "--api", node.api())
		if code != exitOK {
			t.Fatalf("exit %d, stderr %q", code, errs)
		}
		for _, task := range []string{"x", "y"} {
			for i := 1; i <= 2; i++ {
				if strings.Count(out, fmt.Sprintf("%s%d\n", task, i)) != 1 {
					t.Errorf("%s%d not printed exactly once:\n%s", task, i, out)
				}
			}
			hdr := "==> " + task + "[0] (attempt 1 on " + peerA + ") <=="
			if !strings.Contains(out, hdr) {
				t.Errorf("no header %q:\n%s", hdr, out)
			}
		}
	})
	t.Run("replica starting later", func(t *testing.T) {
		s := &logScript{
			chunks: map[string][][]string{"x": {{"x1\n", "x2\n"}}, "y": {{"y1\n", "y2\n"}}},
			attemptAt: func(task string, poll int) int {
				if task == "y" && poll < 3 {
					return 0
				}
				return 1
			},
			endAt: 6,
		}
		node := newFakeNode(t, s.answer())
		out, errs, code := cli(t, "logs", "--follow", "job-1", "--api", node.api())
		want := "x1\nx2\n\n==> y[0] (attempt 1 on " + peerA + ") <==\ny1\ny2\n"
		if code != exitOK || out != want {
			t.Fatalf("exit %d, stderr %q, stdout:\n%q\nwant:\n%q", code, errs, out, want)
		}
	})
	t.Run("node lost", func(t *testing.T) {
		node := newFakeNode(t, func(r fakeReq, n int) (int, string) {
			if n == 0 {
				return 200, logsJSON("running", logEntry{Task: "main", Attempt: 1, Data: "hi\n", Next: 2})
			}
			return 0, ""
		})
		out, errs, code := cli(t, "logs", "--follow", "job-1", "--api", node.api())
		if code != exitFailed || out != "hi\n" || !strings.HasPrefix(errs, "agora logs: ") {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errs)
		}
	})
}

// TestLogsLongOutput: a reply large enough to have been cut short by the
// node's reply limit is read on to the end, without --follow.
func TestLogsLongOutput(t *testing.T) {
	big := strings.Repeat("x", drainThreshold-1) + "\n"
	chunks := []string{big, big, "tail\n"}
	node := newFakeNode(t, func(r fakeReq, n int) (int, string) {
		q, _ := url.ParseQuery(r.Query)
		from := 1
		if f := q.Get("from"); f != "" {
			from, _ = strconv.Atoi(f)
		}
		// Each reply holds at most one chunk, as if the limit were one chunk.
		e := logEntry{Task: "main", Attempt: 1, Node: peerA, Next: uint64(from)}
		if from <= len(chunks) {
			e.Data, e.Next = chunks[from-1], uint64(from+1)
		}
		return 200, logsJSON("succeeded", e)
	})
	out, errs, code := cli(t, "logs", "job-1", "--api", node.api())
	if code != exitOK || out != big+big+"tail\n" {
		t.Fatalf("exit %d, stderr %q, %d bytes of output, want %d", code, errs, len(out), 2*len(big)+5)
	}
	if n := len(node.requests()); n != 3 {
		t.Errorf("%d requests, want 3 (the short reply ends the reading)", n)
	}
}
