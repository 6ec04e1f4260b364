package market

import (
	"slices"
	"testing"
	"time"
)

func jobIDs(js []JobRecord) []string {
	var out []string
	for _, j := range js {
		out = append(out, j.ID)
	}
	return out
}

// TestJobRetention: a finished job is kept for JobRetention after it
// finished, then forgotten once (ForgetJob), in finish order; unfinished
// jobs are never forgotten; a negative retention keeps everything.
func TestJobRetention(t *testing.T) {
	for _, tc := range []struct {
		name      string
		retention time.Duration
		forgotten []string // after "old" finished a retention ago
	}{
		{"one minute", time.Minute, []string{"n0/old"}},
		{"forever", -1, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, cpuNode(4), cpuNode(4))
			for _, m := range c.nodes {
				m.cfg.JobRetention = tc.retention
			}
			c.submit(0, "old", job("old", task("a", 1000)))
			c.until(time.Minute, "old to finish", func() bool { return c.job(0, "old").State == JobSucceeded })
			finished := c.job(0, "old").Finished
			// A job that runs past the retention, and one that finishes
			// later than "old".
			c.run = func(ts TaskSpec, _ NodeID) (int, time.Duration) {
				if ts.Key.Job == "long" {
					return 0, 10 * time.Minute
				}
				return 0, time.Second
			}
			c.submit(0, "long", job("long", task("a", 1000)))
			c.until(30*time.Second, "30 s more", func() bool { return c.now.Sub(finished) >= 30*time.Second })
			c.submit(0, "young", job("young", task("a", 1000)))
			c.until(time.Minute, "young to finish", func() bool { return c.job(0, "young").State == JobSucceeded })
			if len(c.forgotten) != 0 {
				t.Fatalf("forgotten before the retention passed: %v", c.forgotten)
			}
			if _, ok := c.nodes[0].Job("old"); !ok {
				t.Fatal("old forgotten before its retention passed")
			}
			c.until(2*time.Minute, "a retention after old finished", func() bool { return c.now.Sub(finished) >= time.Minute+time.Second })
			if !slices.Equal(c.forgotten, tc.forgotten) {
				t.Fatalf("forgotten %v, want %v", c.forgotten, tc.forgotten)
			}
			want := []string{"old", "long", "young"}
			if tc.retention > 0 {
				want = want[1:]
				if _, ok := c.nodes[0].Job("old"); ok {
					t.Fatal("old still known after its retention")
				}
			}
			if got := jobIDs(c.nodes[0].Jobs()); !slices.Equal(got, want) {
				t.Fatalf("jobs %v, want %v", got, want)
			}
			if tc.retention < 0 {
				return
			}
			// "young" goes a retention after it finished; "long" (still
			// running) stays.
			c.until(2*time.Minute, "young forgotten", func() bool { return len(c.forgotten) == 2 })
			if c.forgotten[1] != "n0/young" || c.job(0, "long").State.Terminal() {
				t.Fatalf("forgotten %v; long %s", c.forgotten, c.job(0, "long").State)
			}
			if got := jobIDs(c.nodes[0].Jobs()); !slices.Equal(got, []string{"long"}) {
				t.Fatalf("jobs %v, want [long]", got)
			}
		})
	}
}

// TestJobRetentionRestore: restored finished records are forgotten a
// retention after they finished, oldest first, whatever their submission
// order; a record without a finish time gets a full retention from the
// restore.
func TestJobRetentionRestore(t *testing.T) {
	m, err := New(Config{Self: "n0", Capacity: cpuNode(4), JobRetention: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	rec := func(id string, submitted, finished time.Duration, st JobState) JobRecord {
		r := JobRecord{ID: id, Manager: "n0", Spec: job(id, task("a", 100)), Submitted: t0.Add(submitted), State: st}
		if finished != 0 {
			r.Finished = t0.Add(finished)
		}
		return r
	}
	m.restoreAt(t0.Add(2*time.Hour), []JobRecord{
		rec("a", 0, 90*time.Minute, JobSucceeded),        // due at 2h30
		rec("b", time.Minute, 30*time.Minute, JobFailed), // due at 1h30: at once
		rec("c", 2*time.Minute, 0, JobCancelled),         // no finish time: 3h
	})
	m.Ready()
	forgotten := func(at time.Duration) []string {
		m.Tick(t0.Add(at))
		var out []string
		for _, e := range m.Ready() {
			if f, ok := e.(ForgetJob); ok {
				out = append(out, f.Job)
			}
		}
		return out
	}
	for _, step := range []struct {
		at   time.Duration
		want []string
	}{
		{2 * time.Hour, []string{"b"}},
		{2*time.Hour + 29*time.Minute, nil},
		{2*time.Hour + 30*time.Minute, []string{"a"}},
		{3*time.Hour - time.Second, nil},
		{3 * time.Hour, []string{"c"}},
		{4 * time.Hour, nil},
	} {
		if nt := m.NextTick(); len(step.want) > 0 && nt.After(t0.Add(step.at)) {
			t.Fatalf("at %v NextTick %v is after a due forget", step.at, nt.Sub(t0))
		}
		if got := forgotten(step.at); !slices.Equal(got, step.want) {
			t.Fatalf("at %v forgot %v, want %v", step.at, got, step.want)
		}
	}
	if js := m.Jobs(); len(js) != 0 {
		t.Fatalf("jobs left: %v", jobIDs(js))
	}
}
