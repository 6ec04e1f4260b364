// Package waitfor is how every test in the project waits for something
// to happen: it polls a condition until it holds or a deadline passes,
// then fails the test naming what it waited for. A sleep is never the
// synchronisation; this is the one place that sleeps between polls. It
// imports nothing of the project, so that any package's tests can use
// it.
package waitfor

import (
	"testing"
	"time"
)

// Poll is how often Cond polls.
const Poll = 25 * time.Millisecond

// Cond polls cond every Poll until it holds or d passes, then fails the
// test naming what it waited for.
func Cond(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	Every(t, d, Poll, what, cond)
}

// Every is Cond polling every interval: a test or benchmark whose
// condition asks running nodes (API calls that run on their event loops)
// polls less often, so that waiting takes less of the machine it times.
func Every(t testing.TB, d, interval time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(interval)
	}
}
