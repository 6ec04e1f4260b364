package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agora-sched/agora/testnet/waitfor"
)

// TestE2EConfigFile (issue 47, done-when 1): a node starts from a
// configuration file alone, with a key for each flag it needs; a flag
// given beside it overrides its key; a bad key stops it, naming the line.
func TestE2EConfigFile(t *testing.T) {
	data := filepath.Join(t.TempDir(), "a")
	traversable(t, data)
	conf := writeFile(t, "agora.yaml", fmt.Sprintf(`# as /etc/agora/agora.yaml would be
data: %s
api: 127.0.0.1:0
listen: [/ip4/127.0.0.1/tcp/0]
site: from-file
label: {zone: a}
advert-interval: 300ms
no-nvml: true
allow-unenforced-limits: true
`, data))
	a, err := launchArgs(t, data, "node", "--config", conf)
	if err != nil {
		t.Fatal(err)
	}
	b := startNode(t, t.TempDir(), "--bootstrap", tcpAddr(t, a.id()))
	aID := a.id().PeerID
	seen := func(site string) {
		t.Helper()
		waitfor.Every(t, 15*time.Second, apiPoll, "B to see A's site "+site, func() bool {
			p, ok := b.peers()[aID]
			return ok && p.Site == site
		})
	}
	seen("from-file")
	out, _, _ := agora(t, "peers", "--api", b.api, "--json")
	if !strings.Contains(out, `"zone": "a"`) {
		t.Fatalf("the label from the file is not advertised:\n%s", out)
	}
	a.kill()

	a, err = launchArgs(t, data, "node", "--config", conf, "--site", "from-flag", "--bootstrap", tcpAddr(t, b.id()))
	if err != nil {
		t.Fatal(err)
	}
	if a.id().PeerID != aID {
		t.Fatal("restarted from the same file, the node has another peer ID")
	}
	seen("from-flag")

	bad := writeFile(t, "bad.yaml", fmt.Sprintf("data: %s\nsite: x\nadvert-intervall: 1s\n", t.TempDir()))
	_, errs, code := agora(t, "node", "--config", bad)
	if code != exitBadUsage || !strings.Contains(errs, "bad.yaml:3: unknown key \"advert-intervall\" (did you mean \"advert-interval\"?)") {
		t.Fatalf("a bad key: exit %d: %s", code, errs)
	}
}
