package store

import (
	"strings"

	logging "github.com/ipfs/go-log/v2"
)

// log is the package logger; badger's own messages go to it as well.
var log = logging.Logger("store")

// badgerLogger adapts go-log to badger's Logger interface. Only warnings
// and errors are forwarded: badger logs routine compaction and flush events
// at Info level, which is noise when dozens of nodes share a process.
type badgerLogger struct {
	l *logging.ZapEventLogger
}

// newBadgerLogger returns the adapter, skipping its own frame in caller
// information.
func newBadgerLogger() badgerLogger {
	return badgerLogger{l: logging.WithSkip(log, 1)}
}

// Errorf forwards a badger error message.
func (b badgerLogger) Errorf(format string, args ...any) {
	b.l.Errorf(trimFormat(format), args...)
}

// Warningf forwards a badger warning message.
func (b badgerLogger) Warningf(format string, args ...any) {
	b.l.Warnf(trimFormat(format), args...)
}

// Infof drops badger's informational messages.
func (badgerLogger) Infof(string, ...any) {}

// Debugf drops badger's debug messages.
func (badgerLogger) Debugf(string, ...any) {}

// trimFormat strips the trailing newline badger puts on many messages.
func trimFormat(format string) string {
	return strings.TrimRight(format, "\n")
}
