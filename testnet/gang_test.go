package testnet

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agora-sched/agora/node/api"
	"github.com/agora-sched/agora/testnet/waitfor"
)

func fourCPU(int) string { return "cpu: 4\nmemory: 8GiB\ngpus: []\n" }

// TestGangOnRealNodes: a gang of 3 × 2 CPU on three 4-CPU nodes starts
// its replicas within 1 s of each other on distinct nodes, each seeing
// its rank, world size 3 and the same peer list.
func TestGangOnRealNodes(t *testing.T) {
	net := New(t, 3, Options{Resources: fourCPU})
	net.WaitConverged(10 * time.Second)
	dir := t.TempDir()
	cmd := fmt.Sprintf(`date +%%s%%N > %s/$AGORA_RANK.start; echo "$AGORA_RANK $AGORA_WORLD_SIZE $AGORA_PEERS $AGORA_MASTER_ADDR" > %s/$AGORA_RANK.env`, dir, dir)
	id, err := net.Node(0).Submit(fmt.Sprintf(`{"name": "gang", "tasks": [{"name": "w", "replicas": 3, "gang": true, "command": ["sh", "-c", %q], "resources": {"cpu": 2}}]}`, cmd))
	if err != nil {
		t.Fatal(err)
	}
	s := waitJob(t, net.Node(0), id, 30*time.Second)
	if s.State != "succeeded" {
		t.Fatalf("gang job %s: %s", s.State, s.Reason)
	}
	nodes := map[string]bool{}
	for _, tk := range s.Tasks {
		nodes[tk.Node] = true
	}
	if len(nodes) != 3 {
		t.Fatalf("replicas ran on %d distinct nodes: %+v", len(nodes), s.Tasks)
	}
	var starts []int64
	var peers string
	for r := 0; r < 3; r++ {
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%d.start", r)))
		if err != nil {
			t.Fatal(err)
		}
		ns, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		starts = append(starts, ns)
		env, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%d.env", r)))
		if err != nil {
			t.Fatal(err)
		}
		f := strings.Fields(string(env))
		if len(f) != 4 || f[0] != strconv.Itoa(r) || f[1] != "3" || len(strings.Split(f[2], ",")) != 3 {
			t.Fatalf("rank %d env %q", r, env)
		}
		if peers == "" {
			peers = f[2]
		} else if f[2] != peers {
			t.Fatalf("peer lists differ: %q vs %q", f[2], peers)
		}
	}
	lo, hi := starts[0], starts[0]
	for _, s := range starts {
		lo, hi = min(lo, s), max(hi, s)
	}
	t.Logf("replicas started within %v", time.Duration(hi-lo))
	if time.Duration(hi-lo) > time.Second {
		t.Fatalf("replicas started %v apart", time.Duration(hi-lo))
	}
}

// TestCompetingGangsOnRealNodes: two gangs of 3 × 4 CPU submitted at the
// same moment on different nodes of a three-node cluster with room for
// one at a time both complete, one after the other.
func TestCompetingGangsOnRealNodes(t *testing.T) {
	net := New(t, 3, Options{Resources: fourCPU})
	net.WaitConverged(10 * time.Second)
	spec := `{"name": "g%d", "tasks": [{"name": "w", "replicas": 3, "gang": true, "command": ["sleep", "1"], "resources": {"cpu": 4}}]}`
	type res struct {
		id  string
		err error
	}
	ch := make(chan res, 2)
	for i := 0; i < 2; i++ {
		go func(i int) {
			id, err := net.Node(i).Submit(fmt.Sprintf(spec, i))
			ch <- res{id, err}
		}(i)
	}
	ids := map[int]string{}
	for i := 0; i < 2; i++ {
		r := <-ch
		if r.err != nil {
			t.Fatal(r.err)
		}
		ids[len(ids)] = r.id
	}
	var spans [][2]time.Time
	for _, id := range ids {
		var s = waitJobAnywhere(t, net, id, 40*time.Second)
		if s.State != "succeeded" {
			t.Fatalf("gang %s: %s %s", id, s.State, s.Reason)
		}
		lo, hi := time.Time{}, time.Time{}
		for _, tk := range s.Tasks {
			st, _ := time.Parse(time.RFC3339Nano, tk.Started)
			fi, _ := time.Parse(time.RFC3339Nano, tk.Finished)
			if lo.IsZero() || st.Before(lo) {
				lo = st
			}
			if fi.After(hi) {
				hi = fi
			}
		}
		spans = append(spans, [2]time.Time{lo, hi})
	}
	if spans[0][0].Before(spans[1][1]) && spans[1][0].Before(spans[0][1]) {
		t.Fatalf("gangs overlapped: %v and %v", spans[0], spans[1])
	}
}

// waitJobAnywhere waits for a job through whichever node answers.
func waitJobAnywhere(t *testing.T, net *Net, id string, d time.Duration) (s api.JobStatus) {
	t.Helper()
	waitfor.Cond(t, d, "job "+id+" to finish", func() bool {
		for _, nd := range net.Up() {
			st, err := nd.Status(id)
			if err == nil && (st.State == "succeeded" || st.State == "failed" || st.State == "cancelled") {
				s = st
				return true
			}
		}
		return false
	})
	return s
}

// TestGangMemberFailure: replica 1 exits 5; the others are stopped, the
// gang is retried as a whole, and ends failed naming rank 1.
func TestGangMemberFailure(t *testing.T) {
	net := New(t, 3, Options{Resources: fourCPU, Configure: fastRetries})
	net.WaitConverged(10 * time.Second)
	id, err := net.Node(0).Submit(`{"name": "bad-gang", "tasks": [{"name": "w", "replicas": 3, "gang": true, "retries": 1, "command": ["sh", "-c", "if [ $AGORA_RANK = 1 ]; then sleep 0.3; exit 5; fi; sleep 30"], "resources": {"cpu": 1}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	s := waitJob(t, net.Node(0), id, 40*time.Second)
	if s.State != "failed" || !strings.Contains(s.Reason, "rank 1") || !strings.Contains(s.Reason, "code 5") {
		t.Fatalf("state %s reason %q", s.State, s.Reason)
	}
	for _, tk := range s.Tasks {
		if tk.Attempts != 2 {
			t.Fatalf("replica %d attempts %d, want 2 (retried as a whole)", tk.Replica, tk.Attempts)
		}
	}
}

// TestGangTooLargeOnRealNodes: a gang needing more nodes than the cluster
// has is refused with a reason at its job's pending timeout.
func TestGangTooLargeOnRealNodes(t *testing.T) {
	net := New(t, 3, Options{Resources: fourCPU})
	net.WaitConverged(10 * time.Second)
	start := time.Now()
	id, err := net.Node(0).Submit(`{"name": "huge-gang", "pending_timeout": "10s", "tasks": [{"name": "w", "replicas": 4, "gang": true, "command": ["true"], "resources": {"cpu": 3}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	s := waitJob(t, net.Node(0), id, 20*time.Second)
	t.Logf("refused after %v: %s", time.Since(start).Round(time.Millisecond), s.Reason)
	if s.State != "failed" || !strings.Contains(s.Reason, "gang of 4") {
		t.Fatalf("state %s reason %q", s.State, s.Reason)
	}
}

// TestGangNotStarvedOnRealNodes: a gang of 3 × 4 CPU submitted into a
// stream of 1-CPU tasks that keeps three 4-CPU nodes busy starts within
// the bound of docs/scheduling.md (GangReserveAfter + the stream tasks'
// runtime + one back-off round: 5 s + 1 s + 4 s), while the stream keeps
// running.
func TestGangNotStarvedOnRealNodes(t *testing.T) {
	net := New(t, 3, Options{Resources: fourCPU})
	net.WaitConverged(10 * time.Second)
	stop := make(chan struct{})
	done := make(chan int)
	go func() {
		n := 0
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				done <- n
				return
			case <-tick.C:
				for i := 0; i < 3; i++ {
					if _, err := net.Node(i).Submit(`{"name": "stream", "tasks": [{"name": "s", "command": ["sleep", "1"], "resources": {"cpu": 1}}]}`); err == nil {
						n++
					}
				}
			}
		}
	}()
	time.Sleep(2 * time.Second) // let the stream fill the cluster
	start := time.Now()
	id, err := net.Node(0).Submit(`{"name": "big-gang", "tasks": [{"name": "w", "replicas": 3, "gang": true, "command": ["sleep", "1"], "resources": {"cpu": 4}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	var waited time.Duration
	waitfor.Cond(t, 20*time.Second, "the gang to start", func() bool {
		s, err := net.Node(0).Status(id)
		if err != nil {
			return false
		}
		for _, tk := range s.Tasks {
			if tk.State != "running" && tk.State != "succeeded" {
				return false
			}
		}
		waited = time.Since(start)
		return true
	})
	close(stop)
	submitted := <-done
	t.Logf("gang started after %v; %d stream tasks submitted meanwhile", waited.Round(time.Millisecond), submitted)
	if bound := 10 * time.Second; waited > bound {
		t.Fatalf("gang waited %v, bound %v", waited, bound)
	}
	ran := 0
	for _, nd := range net.Up() {
		code, body, err := nd.API("GET", "/v1/jobs", nil)
		if err == nil && code == 200 {
			ran += strings.Count(string(body), `"state": "succeeded"`)
		}
	}
	if ran < 10 {
		t.Fatalf("only %d stream tasks succeeded; the stream should keep running", ran)
	}
	if s := waitJob(t, net.Node(0), id, 20*time.Second); s.State != "succeeded" {
		t.Fatalf("gang %s: %s", s.State, s.Reason)
	}
}
