package testnet

import (
	"fmt"
	"testing"
	"time"

	"github.com/agora-sched/agora/node"
	"github.com/agora-sched/agora/testnet/waitfor"
)

// TestDataLocality (issue 23, done-when 4): of two idle nodes, the one
// that already holds a task's 50 MiB input runs it, in at least 18 of 20
// runs; the test reports the bytes moved. Outputs are kept by their maker
// only (no copies), so exactly one node holds each input.
func TestDataLocality(t *testing.T) {
	net := New(t, 2, Options{Configure: func(_ int, c *node.Config) { c.Market.DataReplicas = -1 }})
	net.WaitConverged(10 * time.Second)
	const runs = 20
	local := 0
	for r := range runs {
		maker := r % 2
		spec := fmt.Sprintf(`{"name": "loc-%d", "tasks": [
			{"name": "prep", "command": "head -c 52428800 /dev/urandom > in.bin", "outputs": ["in.bin"], "resources": {"site": "site-%d"}},
			{"name": "use", "after": ["prep"], "inputs": [{"from": "prep"}], "command": "test -s in.bin"}]}`, r, maker)
		nd := net.Node(r % 2)
		id, err := nd.Submit(spec)
		if err != nil {
			t.Fatal(err)
		}
		waitfor.Cond(t, 60*time.Second, fmt.Sprint("run ", r), func() bool {
			st, err := nd.Status(id)
			return err == nil && (st.State == "succeeded" || st.State == "failed")
		})
		st, _ := nd.Status(id)
		if st.State != "succeeded" {
			t.Fatalf("run %d: %s: %s", r, st.State, st.Reason)
		}
		nodeOf := map[string]string{}
		for _, tk := range st.Tasks {
			nodeOf[tk.Name] = tk.Node
		}
		if nodeOf["use"] == nodeOf["prep"] {
			local++
		}
	}
	var moved int64
	for i := range 2 {
		moved += net.Node(i).Data().Fetched.Load()
	}
	t.Logf("the task ran where its input was in %d of %d runs; %.1f MiB of %d MiB moved", local, runs, float64(moved)/(1<<20), runs*50)
	if local < 18 {
		t.Fatalf("the task ran where its 50 MiB input was in %d of %d runs, want at least 18", local, runs)
	}
}
