package acct

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/agora-sched/agora/market"
)

// testProver signs as node self: a hash of the node and the message,
// which only a prover of that node makes.
type testProver struct{ self market.NodeID }

func (p testProver) Sign(msg []byte) []byte { return sig(p.self, msg) }
func (testProver) Verify(node market.NodeID, msg, s []byte) bool {
	return bytes.Equal(s, sig(node, msg))
}

func sig(node market.NodeID, msg []byte) []byte {
	h := sha256.Sum256(append([]byte(node+"\x00"), msg...))
	return h[:]
}

var t0 = time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)

func usage(job string, started, secs float64, cpu float64) Record {
	r := Record{Kind: KindUsage, Job: job, Task: "main", Epoch: 1, Attempt: 1, Node: "exec", Signer: "exec",
		Owner: "alice", Site: "lab", CPUMilli: 1000, Started: t0.Add(time.Duration(started * float64(time.Second))),
		Finished: t0.Add(time.Duration((started + secs) * float64(time.Second))), State: "succeeded",
		CPUSeconds: cpu, MemPeak: 1 << 20, Source: SourceCgroup}
	r.Sign(testProver{"exec"})
	return r
}

func schedule(u Record, ready time.Time) Record {
	s := Record{Kind: KindSchedule, Job: u.Job, Task: u.Task, Replica: u.Replica, Epoch: u.Epoch, Attempt: u.Attempt,
		Node: u.Node, Signer: "mgr", Owner: u.Owner, Name: "n", CPUMilli: u.CPUMilli, Submitted: ready, Ready: ready,
		Awarded: ready, Started: u.Started, Finished: u.Finished.Add(time.Millisecond), State: u.State}
	s.Sign(testProver{"mgr"})
	return s
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(r *Record)
		want string
	}{
		{"good", func(*Record) {}, ""},
		{"kind", func(r *Record) { r.Kind = "bill" }, "kind"},
		{"usage signed by another", func(r *Record) { r.Signer = "mgr" }, "signer"},
		{"no job", func(r *Record) { r.Job = "" }, "job: required"},
		{"slash in job", func(r *Record) { r.Job = "a/b" }, "no '/'"},
		{"long owner", func(r *Record) { r.Owner = strings.Repeat("x", MaxText+1) }, "owner"},
		{"newline in site", func(r *Record) { r.Site = "a\nb" }, "site"},
		{"state", func(r *Record) { r.State = "running" }, "state"},
		{"source", func(r *Record) { r.Source = "guess" }, "source"},
		{"nan cpu", func(r *Record) { r.CPUSeconds = math.NaN() }, "cpu_seconds"},
		{"negative cpu", func(r *Record) { r.CPUSeconds = -1 }, "cpu_seconds"},
		{"started after finished", func(r *Record) { r.Started = r.Finished.Add(time.Second) }, "started"},
		{"no end", func(r *Record) { r.Finished = time.Time{} }, "finished"},
		{"gpu time over its gpus", func(r *Record) { r.GPUs = 1; r.GPUSeconds = 100 }, "gpu_seconds"},
		{"use without a start", func(r *Record) { r.Started = time.Time{} }, "never started"},
		{"schedule with use", func(r *Record) { r.Kind = KindSchedule }, "source"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := usage("j1", 0, 10, 9)
			tc.edit(&r)
			err := r.Check()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want an error naming %q", err, tc.want)
			}
		})
	}
}

// TestAccept: a node keeps a pushed record only from the node that
// signed it, with a signature that checks, within the retention.
func TestAccept(t *testing.T) {
	now := t0.Add(time.Hour)
	p := testProver{}
	good := usage("j1", 0, 10, 9)
	if err := Accept(&good, "exec", now, 24*time.Hour, time.Minute, p); err != nil {
		t.Fatalf("good record refused: %v", err)
	}
	forged := good
	forged.CPUSeconds = 1 // changed after signing
	relayed := good
	future := usage("j1", 7200, 10, 9)
	old := usage("j1", -48*3600, 10, 9)
	unsigned := good
	unsigned.Sig = nil
	bySelf := good
	bySelf.Signer, bySelf.Node = "mgr", "mgr" // signed as mgr by exec's key
	bySelf.Sig = testProver{"exec"}.Sign(bySelf.SignedBytes())
	for _, tc := range []struct {
		name string
		r    Record
		from market.NodeID
		want error
	}{
		{"changed after signing", forged, "exec", ErrBadSig},
		{"relayed by another node", relayed, "other", ErrNotSigner},
		{"ends in the future", future, "exec", ErrStale},
		{"past the retention", old, "exec", ErrStale},
		{"unsigned", unsigned, "exec", ErrBadSig},
		{"signed with another key", bySelf, "mgr", ErrBadSig},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := Accept(&tc.r, tc.from, now, 24*time.Hour, time.Minute, p); !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}

// TestJoin: the two records of an attempt make one row; wait comes from
// the manager's ready time and the executor's start; either alone still
// makes a row that says which it is.
func TestJoin(t *testing.T) {
	u1 := usage("j1", 30, 10, 9.5)
	s1 := schedule(u1, t0)
	u2 := usage("j2", 50, 5, 4) // its manager's record was lost
	s3 := schedule(usage("j3", 20, 5, 0), t0.Add(10*time.Second))
	rows := Join([]Record{u1, s1, u2, s3, u1}) // a duplicate from a second holder
	if len(rows) != 3 {
		t.Fatalf("%d rows, want 3: %+v", len(rows), rows)
	}
	byJob := map[string]Attempt{}
	for _, r := range rows {
		byJob[r.Job] = r
	}
	if a := byJob["j1"]; a.Attested != "both" || a.Wait != 30 || a.CPUSeconds != 9.5 || a.Elapsed != 10 || a.Site != "lab" || a.Manager != "mgr" {
		t.Fatalf("joined row %+v", a)
	}
	if a := byJob["j2"]; a.Attested != "executor" || a.Wait != -1 || a.CPUSeconds != 4 {
		t.Fatalf("executor-only row %+v", a)
	}
	if a := byJob["j3"]; a.Attested != "manager" || a.Wait != 10 || a.CPUSeconds != 0 || a.Source != "" {
		t.Fatalf("manager-only row %+v", a)
	}
	if rows[0].Job != "j3" || rows[2].Job != "j2" {
		t.Fatalf("rows not in end order: %s %s %s", rows[0].Job, rows[1].Job, rows[2].Job)
	}
	if got := Select([]Record{u1, s1, u2}, Filter{Since: t0.Add(45 * time.Second)}); len(got) != 1 || got[0].Job != "j2" {
		t.Fatalf("since filter: %+v", got)
	}
	if got := Select([]Record{u1, s1, u2}, Filter{Node: "ex", State: "succeeded", User: "alice"}); len(got) != 2 {
		t.Fatalf("node prefix, state and user filter: %+v", got)
	}
	if got := Select([]Record{u1, s1, u2}, Filter{User: "bob"}); len(got) != 0 {
		t.Fatalf("bob has no rows: %+v", got)
	}
}

// TestReport: hours add up, waits and turnarounds average, Jain's index
// is 1 for equal use and 1/n when one user took all.
func TestReport(t *testing.T) {
	a1 := usage("j1", 0, 3600, 1800)
	a2 := usage("j2", 0, 1800, 900)
	b1 := usage("j3", 0, 3600, 3600)
	b1.Owner = "bob"
	b1.Sign(testProver{"exec"})
	rows := Join([]Record{a1, schedule(a1, t0), a2, b1, schedule(b1, t0.Add(-time.Hour))})
	rep := MakeReport(rows, t0, t0.Add(2*time.Hour), 4, nil)
	if len(rep.Users) != 2 || rep.Users[0].Name != "alice" || rep.Users[1].Name != "bob" {
		t.Fatalf("users %+v", rep.Users)
	}
	al, bo := rep.Users[0], rep.Users[1]
	if al.CPUHours != 0.75 || al.AllocCPUHours != 1.5 || al.Jobs != 2 || al.Attempts != 2 || bo.CPUHours != 1 {
		t.Fatalf("alice %+v bob %+v", al, bo)
	}
	if al.MeanWait != 0 || bo.MeanWait != 3600 || bo.MeanTurnaround != 7200 {
		t.Fatalf("waits: alice %+v bob %+v", al, bo)
	}
	if rep.Total.CPUHours != 1.75 || rep.Throughput != 1.5 || rep.Utilization != 2.5/8 {
		t.Fatalf("total %+v throughput %v utilization %v", rep.Total, rep.Throughput, rep.Utilization)
	}
	// alice 1.5 allocated CPU-hours, bob 1: (2.5)² / (2 × 3.25).
	if want := 6.25 / 6.5; math.Abs(rep.Jain-want) > 1e-12 {
		t.Fatalf("jain %v, want %v", rep.Jain, want)
	}
	if j := Jain([]float64{1, 1, 1}); j != 1 {
		t.Fatalf("equal use: %v", j)
	}
	if j := Jain([]float64{5, 0, 0, 0}); j != 0.25 {
		t.Fatalf("one took all of 4: %v", j)
	}
	// Shares: bob's share of 2 halves his normalized use.
	rep = MakeReport(rows, t0, t0.Add(2*time.Hour), 0, map[string]float64{"bob": 2})
	if rep.Users[1].Normalized != 0.5 || rep.Utilization != -1 {
		t.Fatalf("shares: %+v utilization %v", rep.Users[1], rep.Utilization)
	}
}
