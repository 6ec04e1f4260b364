package api

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const testToken = "0123456789abcdef0123456789abcdef0123456789abcdef"

// TestGuard: what a web page or another local user can send is refused
// with 4xx naming the rule, before any handler runs; the node's own
// client gets through.
func TestGuard(t *testing.T) {
	f := &fake{}
	srv := httptest.NewServer(New(f, http.NotFoundHandler(), Guard{Token: testToken, Hosts: []string{"sched.example"}}).srv.Handler)
	defer srv.Close()
	job := `{"name": "x", "tasks": [{"name": "a", "command": ["true"]}]}`
	good := func(r *http.Request) {
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set(TokenHeader, "Bearer "+testToken)
	}
	for _, tc := range []struct {
		name         string
		method, path string
		edit         func(*http.Request)
		code         int
		want         string
	}{
		{"the node's client", "POST", "/v1/jobs", good, 201, `"id"`},
		{"YAML spec", "POST", "/v1/jobs", func(r *http.Request) { good(r); r.Header.Set("Content-Type", "application/yaml") }, 201, `"id"`},
		{"a form post of a web page", "POST", "/v1/jobs", func(r *http.Request) { good(r); r.Header.Set("Content-Type", "text/plain") }, 415, "Content-Type"},
		{"urlencoded", "POST", "/v1/drain", func(r *http.Request) {
			good(r)
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}, 415, "Content-Type"},
		{"no content type", "POST", "/v1/drain", func(r *http.Request) { good(r); r.Header.Del("Content-Type") }, 415, "Content-Type"},
		{"DNS rebinding", "POST", "/v1/jobs", func(r *http.Request) { good(r); r.Host = "evil.example:7700" }, 421, "Host"},
		{"rebinding a read", "GET", "/v1/jobs", func(r *http.Request) { good(r); r.Host = "evil.example" }, 421, "Host"},
		{"the configured host", "GET", "/v1/jobs", func(r *http.Request) { good(r); r.Host = "sched.example:7700" }, 200, "j-1"},
		{"localhost", "GET", "/v1/jobs", func(r *http.Request) { good(r); r.Host = "localhost:7700" }, 200, "j-1"},
		{"foreign origin", "POST", "/v1/jobs", func(r *http.Request) { good(r); r.Header.Set("Origin", "https://evil.example") }, 403, "Origin"},
		{"null origin", "POST", "/v1/jobs", func(r *http.Request) { good(r); r.Header.Set("Origin", "null") }, 403, "Origin"},
		{"same origin", "GET", "/v1/jobs", func(r *http.Request) { good(r); r.Header.Set("Origin", "http://"+r.Host) }, 200, "j-1"},
		{"cross-site fetch", "GET", "/v1/jobs", func(r *http.Request) { good(r); r.Header.Set("Sec-Fetch-Site", "cross-site") }, 403, "cross-site"},
		{"no token", "POST", "/v1/jobs", func(r *http.Request) { good(r); r.Header.Del(TokenHeader) }, 401, "API token"},
		{"wrong token", "DELETE", "/v1/jobs/j-1", func(r *http.Request) { good(r); r.Header.Set(TokenHeader, "Bearer x") }, 401, "API token"},
		{"read without token", "GET", "/v1/jobs", func(r *http.Request) { good(r); r.Header.Del(TokenHeader) }, 401, "API token"},
		{"identity without token", "GET", "/v1/id", func(*http.Request) {}, 200, "peer_id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(f.submitted)
			req, err := http.NewRequest(tc.method, srv.URL+tc.path, strings.NewReader(job))
			if err != nil {
				t.Fatal(err)
			}
			tc.edit(req)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.code || !bytes.Contains(b, []byte(tc.want)) {
				t.Fatalf("%d %s, want %d with %q", resp.StatusCode, b, tc.code, tc.want)
			}
			if tc.code >= 400 && len(f.submitted) != before {
				t.Fatal("a refused request reached the backend")
			}
		})
	}
	if len(f.cancelled) != 0 || f.drained {
		t.Fatalf("refused requests ran: cancels %v, drained %v", f.cancelled, f.drained)
	}
}

// TestToken: a node's token is made once and kept, readable by its owner
// only; published by port for a loopback API, it is what the client
// finds.
func TestToken(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("AGORA_TOKEN_DIR", filepath.Join(t.TempDir(), "tokens"))
	t.Setenv("AGORA_API_TOKEN", "")
	tok, err := LoadOrCreateToken(dir, strings.NewReader(strings.Repeat("k", 32)))
	if err != nil || len(tok) != 64 {
		t.Fatalf("token %q: %v", tok, err)
	}
	again, err := LoadOrCreateToken(dir, strings.NewReader(strings.Repeat("z", 32)))
	if err != nil || again != tok {
		t.Fatalf("second load: %q %v", again, err)
	}
	st, err := os.Stat(filepath.Join(dir, TokenFile))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode %v %v", st.Mode(), err)
	}
	path, err := PublishToken("127.0.0.1:7712", tok)
	if err != nil || filepath.Base(path) != "api-7712.token" {
		t.Fatalf("published at %s: %v", path, err)
	}
	for _, addr := range []string{"127.0.0.1:7712", "localhost:7712", "[::1]:7712"} {
		if got := FindToken(addr); got != tok {
			t.Errorf("client of %s found %q", addr, got)
		}
	}
	if got := FindToken("10.1.2.3:7712"); got != "" {
		t.Errorf("another host's API found the loopback token")
	}
	UnpublishToken("127.0.0.1:7712", "another")
	if FindToken("127.0.0.1:7712") != tok {
		t.Fatal("unpublished another node's token")
	}
	UnpublishToken("127.0.0.1:7712", tok)
	if FindToken("127.0.0.1:7712") != "" {
		t.Fatal("token still published")
	}
	t.Setenv("AGORA_API_TOKEN", "from-env")
	if FindToken("127.0.0.1:7712") != "from-env" {
		t.Fatal("$AGORA_API_TOKEN not preferred")
	}
	if err := os.WriteFile(filepath.Join(dir, TokenFile), []byte("short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreateToken(dir, strings.NewReader(strings.Repeat("k", 32))); err == nil {
		t.Fatal("a broken token file was taken")
	}
}

// TestCheckExposure: an API address beyond loopback is refused unless
// insecure, naming --insecure; checked without binding anything.
func TestCheckExposure(t *testing.T) {
	any4 := net.JoinHostPort(net.IPv4zero.String(), "7700")
	for _, tc := range []struct {
		addr     string
		insecure bool
		ok       bool
	}{
		{"127.0.0.1:7700", false, true},
		{"localhost:0", false, true},
		{"[::1]:7700", false, true},
		{any4, false, false},
		{"[::]:7700", false, false},
		{"10.1.2.3:7700", false, false},
		{"example.com:7700", false, false},
		{any4, true, true},
		{"nonsense", false, false},
	} {
		err := CheckExposure(tc.addr, tc.insecure)
		if (err == nil) != tc.ok {
			t.Errorf("%s insecure=%v: %v", tc.addr, tc.insecure, err)
		}
		if err != nil && tc.addr != "nonsense" && !strings.Contains(err.Error(), "--insecure") {
			t.Errorf("%s: %v does not name --insecure", tc.addr, err)
		}
	}
}

// TestUISession: the API token (not the cookie) buys a one-time sign-in
// code; the code buys an HttpOnly session cookie named for the node;
// the cookie opens GET /ui/ pages only, until it lapses, and drives
// nothing else; another node's cookie, a used code, a tampered cookie
// or the old token cookie open nothing.
func TestUISession(t *testing.T) {
	now := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	sessions, err := NewSessions("12D3KooWSelf", rand.Reader, clock)
	if err != nil {
		t.Fatal(err)
	}
	s := New(&fake{}, http.NotFoundHandler(), Guard{Token: testToken, Sessions: sessions})
	s.ServeUI(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "page "+r.URL.Path) }))
	srv := httptest.NewServer(s.srv.Handler)
	defer srv.Close()
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	do := func(method, path, body string, header map[string]string, cookie *http.Cookie) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		for k, v := range header {
			req.Header.Set(k, v)
		}
		if cookie != nil {
			req.AddCookie(cookie)
		}
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	jsonType := map[string]string{"Content-Type": "application/json"}
	if resp, _ := do("POST", "/v1/ui/code/12D3KooWSelf", "", jsonType, nil); resp.StatusCode != 401 {
		t.Fatalf("a code without the token: %d", resp.StatusCode)
	}
	code := func() string {
		resp, body := do("POST", "/v1/ui/code/12D3KooWSelf", "", map[string]string{"Content-Type": "application/json", TokenHeader: "Bearer " + testToken}, nil)
		var c CodeResponse
		if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &c) != nil || c.Code == "" {
			t.Fatalf("a code with the token: %d %s", resp.StatusCode, body)
		}
		return c.Code
	}
	c := code()
	resp, body := do("POST", "/ui/session", `{"code": "`+c+`"}`, jsonType, nil)
	if resp.StatusCode != 200 || len(resp.Cookies()) != 1 {
		t.Fatalf("trading the code: %d %s %v", resp.StatusCode, body, resp.Cookies())
	}
	ck := resp.Cookies()[0]
	if ck.Name != sessions.CookieName() || !strings.HasPrefix(ck.Name, "agora_ui_") || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/ui/" || strings.Contains(ck.Value, testToken) {
		t.Fatalf("session cookie %+v: want HttpOnly, SameSite=Strict, Path /ui/, named for the node, without the token", ck)
	}
	if resp, _ := do("POST", "/ui/session", `{"code": "`+c+`"}`, jsonType, nil); resp.StatusCode != 403 {
		t.Errorf("a code used twice: %d", resp.StatusCode)
	}
	other, _ := NewSessions("12D3KooWOther", rand.Reader, clock)
	theirs, _ := other.code("", nil, now.Add(time.Hour))
	theirValue, _, _ := other.trade(theirs)
	tampered := *ck
	tampered.Value = ck.Value[:len(ck.Value)-2] + "xx"
	for _, tc := range []struct {
		name, method, path string
		cookie             *http.Cookie
		code               int
		want               string
	}{
		{"a page with the session", "GET", "/ui/", ck, 200, "page /ui/"},
		{"a job page with the session", "GET", "/ui/jobs/j-1", ck, 200, "page /ui/jobs/j-1"},
		{"a page without it", "GET", "/ui/jobs/j-1", nil, 303, ""},
		{"a tampered session", "GET", "/ui/", &tampered, 303, ""},
		{"another node's session under this node's name", "GET", "/ui/", &http.Cookie{Name: ck.Name, Value: theirValue}, 303, ""},
		{"the old token cookie", "GET", "/ui/", &http.Cookie{Name: "agora_token", Value: testToken}, 303, ""},
		{"the sign-in page", "GET", "/ui/login", nil, 200, "page /ui/login"},
		{"a page from another port of the host", "GET", "/ui/", ck, 403, "another origin"},
		{"the API with the session", "GET", "/v1/jobs", ck, 401, "API token"},
		{"a change with the session", "DELETE", "/v1/jobs/j-1", ck, 415, "Content-Type"},
	} {
		var header map[string]string
		if strings.Contains(tc.name, "another port") {
			header = map[string]string{"Sec-Fetch-Site": "same-site"}
		}
		resp, body := do(tc.method, tc.path, "", header, tc.cookie)
		if resp.StatusCode != tc.code || !strings.Contains(body, tc.want) {
			t.Errorf("%s: %d %s, want %d %q", tc.name, resp.StatusCode, body, tc.code, tc.want)
		}
		if tc.code == 303 && resp.Header.Get("Location") != "/ui/login" {
			t.Errorf("%s: sent to %q, want /ui/login", tc.name, resp.Header.Get("Location"))
		}
	}
	late := code()
	now = now.Add(codeTTL + time.Second)
	if resp, _ := do("POST", "/ui/session", `{"code": "`+late+`"}`, jsonType, nil); resp.StatusCode != 403 {
		t.Errorf("a code traded after %v: %d", codeTTL, resp.StatusCode)
	}
	now = now.Add(SessionTTL)
	if resp, _ := do("GET", "/ui/", "", nil, ck); resp.StatusCode != 303 {
		t.Errorf("a session past %v: %d", SessionTTL, resp.StatusCode)
	}
}
