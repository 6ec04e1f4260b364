package testnet

import (
	"sync"
	"time"
)

// latencies holds injected one-way delays between node pairs.
type latencies struct {
	mu sync.RWMutex
	d  map[[2]string]time.Duration
}

func (l *latencies) get(from, to string) time.Duration {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.d[[2]string{from, to}]
}

// SetLatency delays every market message between nodes i and j (both
// directions) by d; 0 removes the delay.
func (net *Net) SetLatency(i, j int, d time.Duration) {
	a, b := net.Node(i).ID().String(), net.Node(j).ID().String()
	net.lat.mu.Lock()
	defer net.lat.mu.Unlock()
	if net.lat.d == nil {
		net.lat.d = map[[2]string]time.Duration{}
	}
	net.lat.d[[2]string{a, b}], net.lat.d[[2]string{b, a}] = d, d
}

// delayFor is the SendDelay hook installed in every testnet node.
func (net *Net) delayFor(nd *Node) func(to string) time.Duration {
	return func(to string) time.Duration {
		self, _ := nd.self.Load().(string)
		if self == "" {
			return 0 // not started yet: no latency set for it either
		}
		return net.lat.get(self, to)
	}
}

// Action is a scripted fault.
type Action int

// Scripted faults.
const (
	ActStop    Action = iota // graceful stop (drain, leave advert)
	ActKill                  // abrupt stop, as kill -9
	ActRestart               // start again on the same data dir
)

// Step is one scripted fault: at At after the script starts, do Action to
// node Node.
type Step struct {
	At     time.Duration
	Node   int
	Action Action
}

// Script is a churn schedule. It has no goroutine of its own: the test
// calls Run from its polling loop and the due steps are carried out then.
type Script struct {
	net   *Net
	start time.Time
	steps []Step
	done  int
}

// Script starts a schedule of faults, ordered by time.
func (net *Net) Script(steps ...Step) *Script {
	return &Script{net: net, start: time.Now(), steps: steps}
}

// Churn builds a schedule where each of the given nodes leaves every
// period (alternately gracefully and killed) and comes back after down.
func Churn(nodes []int, period, down time.Duration, rounds int) []Step {
	var steps []Step
	for r := 0; r < rounds; r++ {
		for k, n := range nodes {
			at := time.Duration(r*len(nodes)+k) * period
			act := ActStop
			if (r+k)%2 == 1 {
				act = ActKill
			}
			steps = append(steps, Step{At: at + period/2, Node: n, Action: act}, Step{At: at + period/2 + down, Node: n, Action: ActRestart})
		}
	}
	return steps
}

// Run carries out every step that is due and returns how many steps have
// been done in all.
func (s *Script) Run() int {
	for s.done < len(s.steps) && time.Since(s.start) >= s.steps[s.done].At {
		st := s.steps[s.done]
		switch st.Action {
		case ActStop:
			s.net.Stop(st.Node)
		case ActKill:
			s.net.Kill(st.Node)
		case ActRestart:
			if s.net.Node(st.Node).Node == nil {
				s.net.Restart(st.Node)
			}
		}
		s.done++
	}
	return s.done
}

// Done reports whether every step has been carried out.
func (s *Script) Done() bool { return s.done == len(s.steps) }
