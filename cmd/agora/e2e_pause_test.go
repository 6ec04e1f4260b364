package main

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agora-sched/agora/testnet/waitfor"
)

// TestE2EManagerPaused: the manager of an array stands still — its
// process stopped with SIGSTOP, as a starved or suspended machine's
// is — three times, for 2, 5 and 8 s, while its elements run on it and
// on its peer. Its executors' reports wait in the network meanwhile.
// Silence it could not hear is not its peers' (docs/resilience.md, "A
// node that stood still"): on waking it judges no lease lapsed and drops
// no peer, and the peer, which hears nothing from it for up to 8 s,
// does not take its job over (lifeSign: 11 s). No element runs twice, as
// the tasks' own stamps show, and none was given up.
func TestE2EManagerPaused(t *testing.T) {
	const elements, throttle = 600, 50
	a, _, stamps := arrayPair(t)
	script := fmt.Sprintf(`sleep 1.5; touch %s/$AGORA_ARRAY_INDEX.$AGORA_ATTEMPT.$$`, stamps)
	id := submitArray(t, a, fmt.Sprintf("0-%d%%%d", elements-1, throttle), script, "")
	var st jobStatus
	for _, pause := range []time.Duration{2 * time.Second, 5 * time.Second, 8 * time.Second} {
		// Some elements started and some ran since the last pause: the
		// pause catches reports and awards in flight.
		before := e2eStatus(t, a.api, id).Counts["el"]["succeeded"]
		waitfor.Every(t, 2*time.Minute, apiPoll, "elements to run before the pause", func() bool {
			st = e2eStatus(t, a.api, id)
			return st.Counts["el"]["succeeded"] >= before+2*throttle/5 || terminal(st.State)
		})
		if terminal(st.State) {
			t.Fatalf("the array ended before the %v pause: %s %s", pause, st.State, st.Reason)
		}
		if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		stopped := time.Now()
		for time.Since(stopped) < pause {
			time.Sleep(time.Until(stopped.Add(pause))) // the pause is the test's fault, not a wait for a state
		}
		if err := a.cmd.Process.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		t.Logf("manager stopped %v with %d of %d elements done", pause, st.Counts["el"]["succeeded"], elements)
	}
	waitfor.Every(t, 8*time.Minute, apiPoll, "the array to finish", func() bool {
		st = e2eStatus(t, a.api, id)
		return terminal(st.State)
	})
	if st.State != "succeeded" {
		t.Fatalf("array %s: %s", st.State, st.Reason)
	}
	files, _ := os.ReadDir(stamps)
	runs := map[string][]string{}
	for _, f := range files {
		idx, _, _ := strings.Cut(f.Name(), ".")
		runs[idx] = append(runs[idx], f.Name())
	}
	twice := 0
	for idx, r := range runs {
		if len(r) > 1 {
			if twice++; twice <= 5 {
				t.Errorf("element %s ran %d times: %v", idx, len(r), r)
			}
		}
	}
	if twice > 0 || len(runs) != elements {
		t.Errorf("%d elements ran more than once; %d of %d ran", twice, len(runs), elements)
	}
	// An element stolen before it started moved, and was not given up.
	for _, ts := range st.Tasks {
		for _, h := range ts.History {
			if h.State != "succeeded" && !strings.HasPrefix(h.Reason, "stolen by") {
				t.Errorf("element %d had an attempt given up: %+v", ts.Replica, ts.History)
				break
			}
		}
	}
	// The peer heard nothing for 8 s and may drop the manager from its
	// view (6 s), but takes nothing over (11 s); the manager, on waking,
	// drops no one.
	if strings.Contains(a.log.String(), "peer gone") {
		t.Errorf("the manager dropped its peer on waking:\n%s", a.log.String())
	}
	if want := a.id().PeerID; st.Manager != want {
		t.Errorf("the job is managed by %s, not by the manager that stood still (%s): taken over", st.Manager, want)
	}
	if !strings.Contains(a.log.String(), "the loop stood still") {
		t.Errorf("the manager did not notice it stood still:\n%s", a.log.String())
	}
}
