package node

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/testnet/waitfor"
)

// TestExitsSurviveANetworkFlood: while network input floods the loop far
// past its queue (and is dropped, counted), every task exit still
// reaches the market: every job ends succeeded. Exits wait for room on
// their own channel; only network input is ever dropped.
func TestExitsSurviveANetworkFlood(t *testing.T) {
	n := startNodes(t, 1)[0]
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var sent, dropped atomic.Int64
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				sent.Add(1)
				// Each input costs the loop some work, as a message does.
				if !n.input(func() { spin(20 * time.Microsecond) }) {
					dropped.Add(1)
				}
			}
		}()
	}
	defer func() {
		close(stop)
		wg.Wait()
	}()
	waitfor.Cond(t, 30*time.Second, "the flood to overflow the loop's queue", func() bool { return dropped.Load() > 0 })

	const jobs = 30
	var ids []string
	for i := range jobs {
		ids = append(ids, submitOnLoop(t, n, fmt.Sprintf(`{"name": "flood-%d", "tasks": [{"name": "t", "command": ["sh", "-c", "sleep 0.%d"], "resources": {"cpu": "100m"}}]}`, i, i%5)))
	}
	states := func() (done int, failed []string) {
		_ = n.call(func() {
			for _, id := range ids {
				j, ok := n.mkt.Job(id)
				switch {
				case !ok:
					failed = append(failed, id+": gone")
				case j.State == market.JobSucceeded:
					done++
				case j.State.Terminal():
					failed = append(failed, fmt.Sprintf("%s: %s", id, j.State))
				}
			}
		})
		return done, failed
	}
	waitfor.Cond(t, 2*time.Minute, "every job to succeed under the flood", func() bool {
		done, failed := states()
		if len(failed) > 0 {
			t.Fatalf("jobs ended badly under the flood: %v", failed)
		}
		return done == jobs
	})
	var m dto.Metric
	if err := n.met.dropped.Write(&m); err != nil || m.GetCounter().GetValue() == 0 {
		t.Fatalf("agora_network_input_dropped_total is 0 after %d drops", dropped.Load())
	}
	t.Logf("%d network inputs sent, %d dropped; %d jobs succeeded", sent.Load(), dropped.Load(), jobs)
}

// spin busies the goroutine for d without sleeping.
func spin(d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
	}
}
