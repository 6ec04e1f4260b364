package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestKill9ExactlyOnce (issue 22): a node that manages and runs 20 jobs
// is killed with SIGKILL while their tasks run. Each task appends
// "start", and 4 s later "end", to a file. Restarted after 7 s (the tasks
// finished while it was down), it reports each job succeeded from the
// exit status its tasks' shells left, without running any again: 20
// "end" lines. Restarted after 1 s (the tasks still ran), it kills them
// and runs them again: still 20 "end" lines.
func TestKill9ExactlyOnce(t *testing.T) {
	for _, down := range []time.Duration{7 * time.Second, time.Second} {
		t.Run(fmt.Sprintf("down %v", down), func(t *testing.T) {
			data := t.TempDir()
			// Each start and end leaves a marker file of its own: the
			// tasks run under user IDs of their own (default flags, as
			// root), which cannot append to one another's file.
			marks := sharedDir(t)
			p := startNode(t, data)
			var ids []string
			for i := range 20 {
				cmd := fmt.Sprintf("mktemp %[1]s/start.XXXXXX >/dev/null; sleep 4; mktemp %[1]s/end.XXXXXX >/dev/null", marks)
				spec := writeFile(t, fmt.Sprintf("j%d.json", i), fmt.Sprintf(
					`{"name": "once-%d", "tasks": [{"name": "t", "command": ["sh", "-c", %q], "resources": {"cpu": "50m"}, "retries": 0}]}`, i, cmd))
				o, e, code := agora(t, "submit", "--api", p.api, "--json", spec)
				if code != 0 {
					t.Fatalf("submit: %d %s %s", code, o, e)
				}
				ids = append(ids, jobID(o))
			}
			lines := func(w string) int {
				m, _ := filepath.Glob(filepath.Join(marks, w+".*"))
				return len(m)
			}
			waitFor(t, 15*time.Second, "20 tasks to start", func() bool { return lines("start") == 20 })
			_ = p.cmd.Process.Kill()
			_ = p.cmd.Wait()
			time.Sleep(down)
			p = startNode(t, data)
			waitFor(t, 60*time.Second, "20 jobs to succeed", func() bool {
				for _, id := range ids {
					o, _, code := agora(t, "status", "--api", p.api, "--json", id)
					if code != 0 || !strings.Contains(o, `"state": "succeeded"`) {
						return false
					}
				}
				return true
			})
			time.Sleep(500 * time.Millisecond)
			if n := lines("end"); n != 20 {
				t.Fatalf("%d end lines after a kill -9 and %v down, want 20", n, down)
			}
			if down > 4*time.Second {
				for _, id := range ids {
					o, _, _ := agora(t, "status", "--api", p.api, "--json", id)
					var js struct {
						Tasks []struct{ Attempts int } `json:"tasks"`
					}
					if json.Unmarshal([]byte(o), &js) != nil || len(js.Tasks) != 1 || js.Tasks[0].Attempts != 1 {
						t.Fatalf("job %s ran again after finishing while the node was down: %s", id, o)
					}
				}
			}
		})
	}
}
