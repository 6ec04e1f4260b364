package market

import (
	"testing"
	"time"
)

// TestResultAcked: an executor repeats a task's final report until its
// manager acknowledges it — once, when the ack arrives, and when every
// ack is lost every second for a lease after the end (4 repeats with the
// defaults, LeaseEvery 1 s and LeaseTimeout 5 s) and then the full
// maxResultRepeats times — and keeps an
// acknowledged report until its repeats would have ended, so that a node
// adopting the job still gets it.
func TestResultAcked(t *testing.T) {
	const leaseRepeats = 4 // at 1, 2, 3 and 4 s after the end: within LeaseTimeout
	for _, tc := range []struct {
		name      string
		loseAcks  bool
		rehome    bool // n2 adopts the job after the ack: the report goes there too
		wantFinal int  // final reports sent by the executor
		wantAcks  int
	}{
		{"acked", false, false, 1, 1},
		{"acks lost", true, false, 1 + leaseRepeats + maxResultRepeats, 1 + leaseRepeats + maxResultRepeats},
		{"acked, then adopted", false, true, 2, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, cpuNode(0), cpuNode(4), cpuNode(0))
			if tc.loseAcks {
				c.drop = func(d delivery) bool { _, ack := d.msg.(ResultAck); return ack }
			}
			c.submit(0, "j", job("f", task("t", 1000)))
			c.until(10*time.Second, "job to succeed", func() bool { return c.job(0, "j").State == JobSucceeded })
			c.until(time.Second, "the report's ack", func() bool { return c.sent["result_ack"] > 0 })
			ex := c.nodes[1]
			if len(ex.con.results) != 1 {
				t.Fatalf("executor keeps %d final reports, want 1 until they would have been repeated", len(ex.con.results))
			}
			if tc.rehome {
				rec := c.job(0, "j")
				c.cut["n0"] = true
				c.nodes[2].adoptAt(c.now, rec)
				ex.rehomeAt(c.now, "j", "n2")
				c.drain()
			}
			c.until(2*time.Minute, "a minute and more", func() bool { return c.now.Sub(t0) > 90*time.Second })
			if got := c.sent["task_status/succeeded"]; got != tc.wantFinal {
				t.Errorf("executor sent %d final reports, want %d", got, tc.wantFinal)
			}
			if got := c.sent["result_ack"]; got != tc.wantAcks {
				t.Errorf("managers sent %d acks, want %d", got, tc.wantAcks)
			}
			if len(ex.con.results) != 0 || len(ex.con.resultOf) != 0 {
				t.Errorf("executor still keeps %d final reports (%d indexed) after their time", len(ex.con.results), len(ex.con.resultOf))
			}
			if tc.rehome && c.job(2, "j").State != JobSucceeded {
				t.Errorf("adopter's record: job %s", c.job(2, "j").State)
			}
			succeededOnce(t, c.job(0, "j"))
		})
	}
}
