package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agora-sched/agora/testnet/waitfor"
)

// TestE2EWaitForNode (issue 47, done-when 4): a job needing a device no
// node has waits, saying why, for as long as it takes; a node with the
// device joins 20 s later and runs it. With pending_timeout: 5s the same
// kind of job fails, naming the timeout.
func TestE2EWaitForNode(t *testing.T) {
	a := startNode(t, t.TempDir())
	spec := writeFile(t, "fpga.yaml", `name: needs-fpga
tasks:
  - name: t
    command: [echo, ran]
    resources: {cpu: 1, devices: [{kind: fpga, model: u250, count: 1}]}
`)
	out, errs, code := agora(t, "submit", "--api", a.api, "--json", spec)
	if code != 0 {
		t.Fatalf("submit: exit %d: %s", code, errs)
	}
	id := jobID(out)
	submitted := time.Now()

	// 20 s of waiting: the job stays pending, its task naming the device.
	var waiting string
	waitfor.Every(t, 40*time.Second, apiPoll, "20 s of waiting", func() bool {
		st := e2eStatus(t, a.api, id)
		if terminal(st.State) {
			t.Fatalf("the job ended while no node had the device: %s (%s)", st.State, st.Reason)
		}
		waiting = st.Tasks[0].Waiting
		return time.Since(submitted) >= 20*time.Second
	})
	if !strings.Contains(waiting, "device") {
		t.Fatalf("the waiting task says %q, not the missing device", waiting)
	}
	human, _, _ := agora(t, "status", "--api", a.api, id)
	if !strings.Contains(human, "pending") || !strings.Contains(human, "device") {
		t.Errorf("agora status does not show the task pending for the device:\n%s", human)
	}

	res := writeFile(t, "fpga-node.yaml", "cpu: 2\nmemory: 2GiB\ngpus: []\ndevices:\n  - {kind: fpga, model: u250, count: 1}\n")
	b := startNode(t, t.TempDir(), "--resources", res, "--bootstrap", tcpAddr(t, a.id()))
	joined := time.Now()
	waitfor.Every(t, 60*time.Second, apiPoll, "the job to run on the node that joined", func() bool { return terminal(e2eStatus(t, a.api, id).State) })
	st := e2eStatus(t, a.api, id)
	if st.State != "succeeded" || st.Tasks[0].Node != b.id().PeerID {
		t.Fatalf("job %s on %s (%s), want succeeded on the FPGA node", st.State, st.Tasks[0].Node, st.Reason)
	}
	t.Logf("ran %v after the FPGA node started, %v after submission", time.Since(joined).Round(time.Millisecond), time.Since(submitted).Round(time.Second))
	out, errs, code = agora(t, "logs", "--api", a.api, "--json", id)
	var line struct{ Task, Node, Stream, Data string }
	if code != 0 || json.Unmarshal([]byte(out), &line) != nil || line.Task != "t" || line.Node != b.id().PeerID || line.Stream != "stdout" || line.Data != "ran\n" {
		t.Fatalf("logs --json: exit %d: %q %s", code, out, errs)
	}

	bounded := writeFile(t, "npu.yaml", `name: needs-npu
pending_timeout: 5s
tasks:
  - name: t
    command: [echo, ran]
    resources: {cpu: 1, devices: [{kind: npu, count: 1}]}
`)
	out, errs, code = agora(t, "submit", "--api", a.api, "--json", bounded)
	if code != 0 {
		t.Fatalf("submit: exit %d: %s", code, errs)
	}
	id = jobID(out)
	start := time.Now()
	waitfor.Every(t, 30*time.Second, apiPoll, "the bounded job to fail", func() bool { return terminal(e2eStatus(t, a.api, id).State) })
	took := time.Since(start)
	st = e2eStatus(t, a.api, id)
	if st.State != "failed" || !strings.Contains(st.Reason, "pending_timeout (5s)") || !strings.Contains(st.Reason, "device") {
		t.Fatalf("job %s (%q), want failed naming the pending timeout and the device", st.State, st.Reason)
	}
	if took < 5*time.Second {
		t.Fatalf("failed after %v, before its 5 s pending timeout", took)
	}
}
