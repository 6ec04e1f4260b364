package wire

import (
	"strings"
	"unicode/utf8"
)

// ClipText returns s made fit for a free-text field of at most max bytes
// (such as a reason, with MaxReasonLen, or a QueryReply error, with
// MaxErrorLen): invalid UTF-8 is replaced by U+FFFD and the text is cut on
// a character boundary, ending in "…" when it was cut. Encode refuses
// over-long or invalid text rather than altering a message, so a sender
// whose text comes from elsewhere (a process's exit reason, an error)
// clips it first.
func ClipText(s string, max int) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if len(s) <= max {
		return s
	}
	const ellipsis = "…"
	if max < len(ellipsis) {
		return ""
	}
	cut := max - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
}
