package testnet

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/node"
	"github.com/agora-sched/agora/runtime"
	"github.com/agora-sched/agora/testnet/waitfor"
)

// unenforcing runs tasks as the process runtime does but says it can
// enforce no limit, as a node without writable cgroups does.
type unenforcing struct{ *runtime.Runner }

func (unenforcing) Enforces() resource.Limits { return 0 }

// TestUnenforcedLimits (issue 22): a node that cannot enforce limits says
// so in its advert; by default it neither runs nor is asked to run a
// task asking for a limit, which fails naming the limit and the node; a
// node told to run such tasks unenforced (--allow-unenforced-limits)
// runs them; a task asking for no limit runs anywhere.
func TestUnenforcedLimits(t *testing.T) {
	net := New(t, 2, Options{Configure: func(i int, c *node.Config) {
		c.Runner = unenforcing{runtime.NewRunner(runtime.Options{})}
		c.Sandbox.AllowUnenforcedLimits = i == 1
		c.Market.SchedulingTimeout = 3 * time.Second
	}})
	strict, lax := net.Node(0), net.Node(1)
	waitfor.Cond(t, 10*time.Second, "each node to see the other's limits in its advert", func() bool {
		return seesLimits(strict, lax, resource.Enforcement{Missing: resource.AllLimits, Unenforced: true}) &&
			seesLimits(lax, strict, resource.Enforcement{Missing: resource.AllLimits})
	})
	job := func(name, site, resources string) string {
		return fmt.Sprintf(`{"name": %q, "tasks": [{"name": "t", "command": ["true"], "resources": {"site": %q %s}}]}`, name, site, resources)
	}
	only0, err := lax.Submit(job("mem-on-0", "site-0", `, "memory": "64MiB"`))
	if err != nil {
		t.Fatal(err)
	}
	anywhere, err := strict.Submit(job("mem", "", `, "memory": "64MiB", "cpu": "500m"`))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := lax.Submit(job("plain-on-0", "site-0", ""))
	if err != nil {
		t.Fatal(err)
	}
	waitfor.Cond(t, 30*time.Second, "the jobs to end", func() bool {
		a, err1 := lax.Status(only0)
		b, err2 := strict.Status(anywhere)
		c, err3 := lax.Status(plain)
		return err1 == nil && err2 == nil && err3 == nil && a.State == "failed" && b.State == "succeeded" && c.State == "succeeded"
	})
	st, _ := lax.Status(only0)
	want := fmt.Sprintf("limits: memory not enforced on this node (closest peer %s;", strict.ID())
	if !strings.Contains(st.Reason, want) {
		t.Fatalf("reason %q, want it to say %q", st.Reason, want)
	}
	for _, c := range []struct {
		id   string
		ran  *Node
		none *Node
	}{{anywhere, lax, strict}, {plain, strict, lax}} {
		if exs, err := c.none.Executions(c.id); err != nil || len(exs) != 0 {
			t.Errorf("job %s ran on node %d: %v %v", c.id, c.none.Index, exs, err)
		}
		if exs, err := c.ran.Executions(c.id); err != nil || len(exs) != 1 {
			t.Errorf("job %s did not run on node %d: %v %v", c.id, c.ran.Index, exs, err)
		}
	}
}

// seesLimits reports whether from's view holds of's advert with limits e.
func seesLimits(from, of *Node, e resource.Enforcement) bool {
	for _, m := range from.Peers() {
		if m.Advert.Peer == of.ID() {
			return m.Advert.Limits == e
		}
	}
	return false
}
