package main

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestE2ERenew (issue 47): a node whose certificate expires within a
// week says so in its log and exports the expiry on /metrics; agora admit
// --renew certifies it anew, and restarted with the new certificate it no
// longer warns. A user's credential close to expiry draws a warning from
// every command; agora user renew gives the same key a new certificate
// that the node accepts.
func TestE2ERenew(t *testing.T) {
	ca := newCA(t)
	data := t.TempDir()
	out, errs, code := agora(t, "node", "--data", data, "--init")
	if code != 0 {
		t.Fatalf("node --init: %s", errs)
	}
	cert := filepath.Join(t.TempDir(), "node.crt")
	if _, errs, code := agora(t, "admit", "--authority", ca, strings.TrimSpace(out), "--site", "lab", "--valid", "100h", "--out", cert); code != 0 {
		t.Fatalf("admit: %s", errs)
	}
	flags := []string{"--trust", filepath.Join(ca, "authority.pub"), "--cert", cert}
	n := startNode(t, data, flags...)
	if !strings.Contains(n.log.String(), "certificate expires soon") {
		t.Errorf("the node does not warn of its certificate's expiry in 100 h:\n%s", n.log.String())
	}
	exp := func() time.Time {
		v, err := strconv.ParseFloat(metric(t, n.api, "agora_certificate_expiry_timestamp_seconds"), 64)
		if err != nil {
			t.Fatalf("agora_certificate_expiry_timestamp_seconds: %v", err)
		}
		return time.Unix(int64(v), 0)
	}
	if left := time.Until(exp()); left < 99*time.Hour || left > 101*time.Hour {
		t.Errorf("/metrics says the certificate expires in %v, want 100 h", left)
	}

	_, errs, code = agora(t, "admit", "--authority", ca, "--renew", cert, "--out", cert)
	if code != 0 || !strings.Contains(errs, "renewed until") {
		t.Fatalf("admit --renew: exit %d: %s", code, errs)
	}
	n.kill()
	n = startNode(t, data, flags...)
	if strings.Contains(n.log.String(), "certificate expires soon") {
		t.Errorf("the renewed node still warns:\n%s", n.log.String())
	}
	if left := time.Until(exp()); left < 719*time.Hour {
		t.Errorf("the renewed certificate expires in %v, want 720 h", left)
	}
	if _, errs, code := agora(t, "admit", "--authority", ca, "--renew", cert, "--site", "other"); code != exitBadUsage {
		t.Errorf("--renew with --site: exit %d: %s", code, errs)
	}

	cred := filepath.Join(t.TempDir(), "alice.cred")
	if _, errs, code := agora(t, "user", "add", "--authority", ca, "--valid", "48h", "--out", cred, "alice"); code != 0 {
		t.Fatalf("user add: %s", errs)
	}
	_, errs, code = agora(t, "jobs", "--api", n.api, "--credential", cred)
	if code != 0 || !strings.Contains(errs, "warning: credential") || !strings.Contains(errs, "agora user renew") {
		t.Fatalf("a credential expiring in 2 days: exit %d, no warning: %q", code, errs)
	}
	if _, errs, code := agora(t, "user", "renew", "--authority", ca, "--out", cred, cred); code != 0 {
		t.Fatalf("user renew: %s", errs)
	}
	_, errs, code = agora(t, "jobs", "--api", n.api, "--credential", cred)
	if code != 0 || strings.Contains(errs, "warning") {
		t.Fatalf("the renewed credential: exit %d: %q", code, errs)
	}
	other := newCA(t)
	if _, errs, code := agora(t, "user", "renew", "--authority", other, cred); code != exitBadUsage || !strings.Contains(errs, "not issued by") {
		t.Errorf("another authority renewed alice: exit %d: %s", code, errs)
	}
}
