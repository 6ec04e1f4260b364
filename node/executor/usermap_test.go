package executor

import (
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
)

// TestUserMap: the mapping file's shape is checked line by line; owners
// map by name or through the file; no owner, an unknown account, an
// unmapped user and a root account are refused, each saying why.
func TestUserMap(t *testing.T) {
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Skip("no account nobody on this host")
	}
	write := func(body string) string {
		p := filepath.Join(t.TempDir(), "map")
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, bad := range []struct{ body, want string }{
		{"alice nobody extra\n", ":1: want `CERTIFICATE_USER LOCAL_ACCOUNT`"},
		{"# header\nalice nobody\nalice daemon\n", ":3: user alice mapped twice"},
	} {
		if _, err := NewUserMap(write(bad.body)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: %v, want %q", bad.body, err, bad.want)
		}
	}
	m, err := NewUserMap(write("# cert user → account\nalice nobody   # mapped\nboss root\n\n"))
	if err != nil {
		t.Fatal(err)
	}
	a, err := m.Account("alice")
	if err != nil || a.Name != "nobody" || a.Home != nobody.HomeDir || a.ID.UID == 0 {
		t.Fatalf("alice: %+v %v", a, err)
	}
	for owner, want := range map[string]string{
		"":       "has no owner",
		"bob":    "no local account for user bob (--task-user map: not in the mapping file)",
		"boss":   "a root account: refused",
		"nobody": "not in the mapping file",
	} {
		if why := m.Refusal(owner); !strings.Contains(why, want) {
			t.Errorf("%q: %q, want %q", owner, why, want)
		}
	}
	byName, _ := NewUserMap("")
	if why := byName.Refusal("nobody"); why != "" {
		t.Errorf("nobody by name: %s", why)
	}
	if why := byName.Refusal("no-such-account-here"); !strings.Contains(why, "no local account for user no-such-account-here") {
		t.Errorf("an unknown account: %q", why)
	}
	if why := byName.Refusal("root"); !strings.Contains(why, "root account") {
		t.Errorf("root by name: %q", why)
	}
}
