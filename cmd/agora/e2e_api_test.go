package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLocalAPIGuard (issue 22): what a web page or another local user can
// send to a node's API is refused with 4xx and runs nothing; the agora
// command on the same machine works unchanged; an API beyond loopback
// needs --insecure.
func TestLocalAPIGuard(t *testing.T) {
	data := t.TempDir()
	p := startNode(t, data)
	marker := filepath.Join(sharedDir(t), "ran") // a task that ran, under an ID of its own, could write it
	job := `{"name": "web", "tasks": [{"name": "t", "command": ["touch", "` + marker + `"]}]}`
	token, err := os.ReadFile(filepath.Join(data, "api.token"))
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(filepath.Join(data, "api.token")); st.Mode().Perm() != 0o600 {
		t.Fatalf("api.token mode %v", st.Mode().Perm())
	}
	bearer := "Bearer " + strings.TrimSpace(string(token))
	for _, tc := range []struct {
		name               string
		method, path, body string
		header             map[string]string
		host               string
		code               int
	}{
		{"a cross-origin text/plain post", "POST", "/v1/jobs", job, map[string]string{"Content-Type": "text/plain", "Origin": "http://evil.example", "Authorization": bearer}, "", 403},
		{"text/plain with the token", "POST", "/v1/jobs", job, map[string]string{"Content-Type": "text/plain", "Authorization": bearer}, "", 415},
		{"a foreign Host (DNS rebinding)", "POST", "/v1/jobs", job, map[string]string{"Content-Type": "application/json", "Authorization": bearer}, "evil.example", 421},
		{"a foreign Origin", "POST", "/v1/jobs", job, map[string]string{"Content-Type": "application/json", "Origin": "http://evil.example", "Authorization": bearer}, "", 403},
		{"no token", "POST", "/v1/jobs", job, map[string]string{"Content-Type": "application/json"}, "", 401},
		{"a drain without the token", "POST", "/v1/drain", "", map[string]string{"Content-Type": "application/json"}, "", 401},
		{"a read without the token", "GET", "/v1/jobs", "", nil, "", 401},
	} {
		req, err := http.NewRequest(tc.method, "http://"+p.api+tc.path, strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range tc.header {
			req.Header.Set(k, v)
		}
		if tc.host != "" {
			req.Host = tc.host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.code {
			t.Errorf("%s: %d %s, want %d", tc.name, resp.StatusCode, b, tc.code)
		}
	}
	// Nothing ran, and the node is not drained: the agora command, which
	// finds the token itself, still submits and runs.
	out, errOut, code := agora(t, "run", "--api", p.api, "--wait", "--", "true")
	if code != 0 {
		t.Fatalf("agora run: exit %d\n%s\n%s", code, out, errOut)
	}
	if out, _, code := agora(t, "jobs", "--api", p.api, "--json"); code != 0 || strings.Count(out, `"id"`) != 1 {
		t.Fatalf("agora jobs: exit %d, want the one job run by the command:\n%s", code, out)
	}
	time.Sleep(300 * time.Millisecond)
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a refused request ran its command")
	}

	// An API beyond loopback needs --insecure. An address of no local
	// interface: were the check broken, nothing would bind beyond
	// loopback (the unspecified ones are checked without a node, node
	// TestCheckAPIExposure).
	_, errs, code := agora(t, "node", "--data", t.TempDir(), "--api", "10.1.2.3:7700", "--listen", "/ip4/127.0.0.1/tcp/0", "--no-nvml")
	if code != 2 || !strings.Contains(errs, "--insecure") {
		t.Fatalf("--api 10.1.2.3:7700: exit %d, stderr %q; want 2 naming --insecure", code, errs)
	}
}
