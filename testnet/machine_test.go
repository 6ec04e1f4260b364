package testnet

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// userHZ is the unit of /proc/stat's counters: clock ticks of 1/100 s on
// every Linux architecture Go supports.
const userHZ = 100

// machineSample is the machine's CPU counters (clock ticks summed over
// all CPUs, from /proc/stat) and this process's CPU time, for telling a
// noisy benchmark repetition from a slow build.
type machineSample struct {
	ok                 bool
	busy, steal, total uint64
	self               time.Duration
}

// sampleMachine reads the machine's CPU counters, summed over all CPUs,
// and the CPU time of this process and of its children it waited for.
func sampleMachine() machineSample {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return machineSample{}
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return machineSample{}
	}
	var v [8]uint64 // user nice system idle iowait irq softirq steal
	for i := range v {
		if v[i], err = strconv.ParseUint(f[i+1], 10, 64); err != nil {
			return machineSample{}
		}
	}
	// This process and its children (the tasks it ran and waited for).
	var self time.Duration
	for _, who := range []int{syscall.RUSAGE_SELF, syscall.RUSAGE_CHILDREN} {
		var ru syscall.Rusage
		if syscall.Getrusage(who, &ru) != nil {
			return machineSample{}
		}
		self += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	s := machineSample{ok: true, steal: v[7], self: self}
	s.busy = v[0] + v[1] + v[2] + v[5] + v[6]
	for _, x := range v {
		s.total += x
	}
	return s
}

// machineShare is what happened on the machine between two samples:
// the share of all CPUs' time that other processes used (busy, not
// counting this process and its tasks) and that the hypervisor took from this machine
// (steal).
func machineShare(s0, s1 machineSample) (other, steal float64, ok bool) {
	if !s0.ok || !s1.ok || s1.total <= s0.total {
		return 0, 0, false
	}
	total := float64(s1.total - s0.total)
	self := (s1.self - s0.self).Seconds() * userHZ
	other = max(0, (float64(s1.busy-s0.busy)-self)/total)
	steal = float64(s1.steal-s0.steal) / total
	return other, steal, true
}

// reportMachine reports, for the span since s0, other_busy_frac and
// steal_frac (see machineShare), where the counters exist.
func reportMachine(b *testing.B, s0 machineSample) {
	if other, steal, ok := machineShare(s0, sampleMachine()); ok {
		b.ReportMetric(other, "other_busy_frac")
		b.ReportMetric(steal, "steal_frac")
	}
}

// TestMachineShare: other processes' share excludes this process's own
// CPU time, and a sample that could not be read reports nothing.
func TestMachineShare(t *testing.T) {
	s0 := machineSample{ok: true, busy: 1000, steal: 10, total: 4000, self: 2 * time.Second}
	s1 := machineSample{ok: true, busy: 1500, steal: 30, total: 6000, self: 5 * time.Second}
	// 500 busy ticks, 300 of them this process's (3 s): 200 of 2,000.
	other, steal, ok := machineShare(s0, s1)
	if !ok || other < 0.0999 || other > 0.1001 || steal < 0.0099 || steal > 0.0101 {
		t.Fatalf("other %v steal %v ok %v; want 0.1, 0.01", other, steal, ok)
	}
	if _, _, ok := machineShare(machineSample{}, s1); ok {
		t.Fatal("an unread sample reported a share")
	}
	if s := sampleMachine(); s.ok && (s.total == 0 || s.busy > s.total) {
		t.Fatalf("implausible sample %+v", s)
	}
}
