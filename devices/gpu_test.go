package devices

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeBackend is a scripted GPU backend.
type fakeBackend struct {
	mu        sync.Mutex
	openErr   error
	usageErr  error
	panicOpen bool
	gpus      []GPUUsage
	opens     int
	closes    int
}

func (f *fakeBackend) open() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.opens++
	if f.panicOpen {
		panic("boom")
	}
	return f.openErr
}

func (f *fakeBackend) usage() ([]GPUUsage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gpus, f.usageErr
}

func (f *fakeBackend) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closes++
}

// fakeClock is a settable time source.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func TestGPUMonitorRetriesAfterFailure(t *testing.T) {
	b := &fakeBackend{openErr: errors.New("nvml: no driver")}
	clk := &fakeClock{t: time.Unix(1000, 0)}
	m := newGPUMonitor(b, clk.now)

	if u := m.Usage(); u == nil || len(u) != 0 {
		t.Fatalf("Usage with failing NVML = %#v, want empty", u)
	}
	if m.Err() != "nvml: no driver" {
		t.Errorf("Err() = %q", m.Err())
	}
	clk.advance(gpuRetryInterval / 2)
	m.Usage()
	if b.opens != 1 {
		t.Errorf("opened %d times within the retry interval, want 1", b.opens)
	}

	clk.advance(gpuRetryInterval)
	b.openErr = nil
	b.gpus = []GPUUsage{{Index: 0, Utilization: 0.5}}
	if u := m.Usage(); len(u) != 1 || u[0].Utilization != 0.5 {
		t.Errorf("Usage after recovery = %+v", u)
	}
	if b.opens != 2 || m.Err() != "" {
		t.Errorf("opens %d, err %q", b.opens, m.Err())
	}
	m.Usage()
	if b.opens != 2 {
		t.Errorf("reopened a working backend: %d opens", b.opens)
	}

	// A failed read closes NVML and waits before opening it again.
	b.usageErr = errors.New("nvml: gpu lost")
	if u := m.Usage(); len(u) != 0 {
		t.Errorf("Usage on read failure = %+v", u)
	}
	if b.closes != 1 || m.Err() != "nvml: gpu lost" {
		t.Errorf("closes %d, err %q", b.closes, m.Err())
	}
	b.usageErr = nil
	m.Usage()
	if b.opens != 2 {
		t.Errorf("reopened within the retry interval: %d opens", b.opens)
	}
	clk.advance(gpuRetryInterval)
	if u := m.Usage(); len(u) != 1 || b.opens != 3 {
		t.Errorf("after the interval: %+v, %d opens", u, b.opens)
	}

	m.Close()
	m.Close()
	if b.closes != 2 {
		t.Errorf("Close closed %d times in all, want 2", b.closes)
	}
	if u := m.Usage(); len(u) != 1 || b.opens != 4 {
		t.Errorf("Usage after Close = %+v, %d opens", u, b.opens)
	}
}

func TestGPUMonitorRecoversPanics(t *testing.T) {
	b := &fakeBackend{panicOpen: true}
	m := newGPUMonitor(b, time.Now)
	if u := m.Usage(); len(u) != 0 {
		t.Errorf("Usage = %+v", u)
	}
	if !strings.Contains(m.Err(), "panic: boom") {
		t.Errorf("Err() = %q", m.Err())
	}
}

func TestGPUMonitorConcurrent(t *testing.T) {
	b := &fakeBackend{gpus: []GPUUsage{{Index: 0}, {Index: 1}}}
	m := newGPUMonitor(b, time.Now)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				if u := m.Usage(); len(u) != 2 {
					t.Errorf("Usage = %+v", u)
				}
			}
		}()
	}
	wg.Wait()
	m.Close()
	if b.opens != 1 || b.closes != 1 {
		t.Errorf("opens %d closes %d, want 1 and 1", b.opens, b.closes)
	}
}

func TestGPUMonitorSystem(t *testing.T) {
	// On a machine without NVIDIA GPUs this reports none and says why; on
	// one with GPUs it reports them. Either way it must not fail.
	m := NewGPUMonitor()
	defer m.Close()
	u := m.Usage()
	if u == nil || (len(u) == 0 && m.Err() == "") {
		t.Errorf("Usage = %#v with Err %q", u, m.Err())
	}
	for _, g := range u {
		if g.Utilization < 0 || g.Utilization > 1 || g.MemUsed > g.MemTotal {
			t.Errorf("implausible %+v", g)
		}
	}
	t.Logf("gpus %+v, err %q", u, m.Err())
}
