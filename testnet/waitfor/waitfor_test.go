package waitfor

import (
	"strings"
	"testing"
	"time"
)

// fakeT records a failure instead of ending the test.
type fakeT struct {
	testing.TB
	failed string
}

func (f *fakeT) Helper() {}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.failed = format
	panic(f)
}

func TestCond(t *testing.T) {
	n := 0
	Cond(t, time.Second, "three polls", func() bool { n++; return n == 3 })
	if n != 3 {
		t.Fatalf("polled %d times, want 3", n)
	}
	f := &fakeT{TB: t}
	func() {
		defer func() { _ = recover() }()
		Every(f, 30*time.Millisecond, time.Millisecond, "never", func() bool { return false })
	}()
	if !strings.Contains(f.failed, "timed out") {
		t.Fatalf("a condition that never holds did not fail the test: %q", f.failed)
	}
}
