package names

// Length bounds of the names, in bytes.
const (
	MaxTaskName   = 64
	MaxNodeID     = 128
	MaxDeviceKind = 64
	MaxLabelKey   = 128
)

// isAlnum reports whether c is an ASCII letter or digit.
func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// chars reports whether s is minLen..maxLen bytes long (maxLen < 0: no
// bound) and every byte is an ASCII letter, a digit or one of extra; with
// alnumFirst the first byte must be a letter or a digit.
func chars(s string, minLen, maxLen int, alnumFirst bool, extra string) bool {
	if len(s) < minLen || maxLen >= 0 && len(s) > maxLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isAlnum(c) {
			continue
		}
		if i == 0 && alnumFirst {
			return false
		}
		ok := false
		for j := 0; j < len(extra); j++ {
			if c == extra[j] {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// TaskName reports whether s is made of 1 to 64 letters, digits, '_', '.'
// and '-' (callers also refuse "." and "..", which name directories).
func TaskName(s string) bool { return chars(s, 1, MaxTaskName, false, "_.-") }

// JobID reports whether s is made of 1 to 128 letters, digits, '_', '.'
// and '-'.
func JobID(s string) bool { return chars(s, 1, 128, false, "_.-") }

// NodeID reports whether s is made of 1 to 128 letters, digits, '.', '_'
// and '-' (a peer ID in text form).
func NodeID(s string) bool { return chars(s, 1, MaxNodeID, false, "._-") }

// EnvName reports whether s is a portable environment variable name: a
// letter or '_', then letters, digits and '_'.
func EnvName(s string) bool {
	if s == "" || '0' <= s[0] && s[0] <= '9' {
		return false
	}
	return chars(s, 1, -1, false, "_")
}

// DeviceKind reports whether s is a device kind: a letter or digit, then
// up to 63 letters, digits, '_', '.' and '-'.
func DeviceKind(s string) bool { return chars(s, 1, MaxDeviceKind, true, "_.-") }

// LabelKey reports whether s is a label key: a letter or digit, then up
// to 127 letters, digits, '_', '.', '/' and '-'.
func LabelKey(s string) bool { return chars(s, 1, MaxLabelKey, true, "_./-") }
