package api

import (
	"context"
	"crypto/subtle"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// Guard is what the API asks of every request before a handler sees it,
// so that nothing but the node's own users drives it: not a web page the
// node's user has open (a cross-origin form post, DNS rebinding), not
// another local user without the token.
type Guard struct {
	// Token, when set, is the local API token (WriteToken): every request
	// but GET /v1/id and GET /metrics must carry it as a bearer token.
	// Empty in a network with an authority, where requests carry signed
	// credentials that the Backend checks.
	Token string
	// Hosts are the host names a request's Host header may name besides
	// the loopback ones (localhost, 127.0.0.0/8, ::1): the configured
	// API address's host.
	Hosts []string
	// AnyIP lets a Host header name any IP address (an API listening on
	// all interfaces, with --insecure): DNS rebinding needs a name.
	AnyIP bool
	// Sessions are the dashboard's sign-ins (session.go): a session's
	// cookie lets a browser read /ui/ pages, and only those.
	Sessions *Sessions
}

// GuardFor is the guard of an API listening on addr (host:port) with
// the local token (empty: none required).
func GuardFor(addr, token string) Guard {
	g := Guard{Token: token}
	if host, _, err := net.SplitHostPort(addr); err == nil {
		ip := net.ParseIP(host)
		g.Hosts, g.AnyIP = []string{host}, ip != nil && ip.IsUnspecified()
	}
	return g
}

// CheckExposure refuses an API address beyond loopback unless insecure:
// whoever reaches the API drives the node.
func CheckExposure(addr string, insecure bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--api %s: %v", addr, err)
	}
	if ip := net.ParseIP(host); insecure || strings.EqualFold(host, "localhost") || (ip != nil && ip.IsLoopback()) {
		return nil
	}
	return fmt.Errorf("--api %s listens beyond loopback, where anyone who reaches it drives this node: use a loopback address, or give --insecure to allow it", addr)
}

// TokenHeader carries the local API token.
const TokenHeader = "Authorization"

// mutating methods change state; a browser sends POST cross-origin
// without asking first, the others only after a preflight this API never
// allows.
func mutating(method string) bool {
	return method != http.MethodGet && method != http.MethodHead && method != http.MethodOptions
}

// bodyTypes are the content types a request that changes state may
// carry. None is one a web page can send cross-origin without a
// preflight (text/plain, application/x-www-form-urlencoded,
// multipart/form-data).
var bodyTypes = map[string]bool{
	"application/json":         true,
	"application/yaml":         true,
	"application/x-yaml":       true,
	TicketType:                 true,
	"application/octet-stream": true,
}

// check refuses a request the guard does not let through, with its
// status and a message naming the rule.
func (g *Guard) check(r *http.Request) (int, string) {
	if code, msg := g.checkHost(r); code != 0 {
		return code, msg
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || !strings.EqualFold(u.Host, r.Host) {
			return http.StatusForbidden, "Origin " + quote(o) + " is another site: the API does not take requests from web pages"
		}
	}
	if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
		return http.StatusForbidden, "a cross-site request: the API does not take requests from web pages"
	}
	if mutating(r.Method) {
		mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if err != nil || !bodyTypes[mt] {
			return http.StatusUnsupportedMediaType, "Content-Type " + quote(r.Header.Get("Content-Type")) + " is not taken for " + r.Method + ": send application/json (a job spec may also be application/yaml)"
		}
	}
	if uiRead(r) && r.URL.Path != "/ui/login" && (g.Token == "" || !strings.HasPrefix(r.Header.Get(TokenHeader), "Bearer ")) {
		// A dashboard page without the bearer token (a browser): it needs
		// a session (guarded), in every network.
		return http.StatusSeeOther, "/ui/login"
	}
	if g.Token != "" && !open(r) {
		got, ok := strings.CutPrefix(r.Header.Get(TokenHeader), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(g.Token)) != 1 {
			return http.StatusUnauthorized, "missing or wrong API token: the agora command reads it on the node's machine (" + TokenFileHint + "); other clients send it as Authorization: Bearer TOKEN"
		}
	}
	return 0, ""
}

// open says whether a request needs no token: the node's identity, for
// health checks, its metrics, for a local scraper, the dashboard's
// sign-in page, and the trade of a sign-in code for a session (the code
// is the proof).
func open(r *http.Request) bool {
	return r.Method == http.MethodGet && (r.URL.Path == "/v1/id" || r.URL.Path == "/metrics" || r.URL.Path == "/ui/login") ||
		r.Method == http.MethodPost && r.URL.Path == "/ui/session"
}

// uiAct says whether r is a dashboard action (POST /ui/act/...): a
// form the dashboard's own pages send, with a session that acts.
func uiAct(r *http.Request) bool {
	return r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/ui/act/")
}

// uiRead says whether r reads a dashboard page (GET /, GET /ui/...): with
// uiAct, the only requests a session lets in.
func uiRead(r *http.Request) bool {
	return (r.Method == http.MethodGet || r.Method == http.MethodHead) && (r.URL.Path == "/" || strings.HasPrefix(r.URL.Path, "/ui/"))
}

func (g *Guard) hostAllowed(host string) bool {
	h := strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	if ip != nil && (ip.IsLoopback() || g.AnyIP) {
		return true
	}
	for _, a := range g.Hosts {
		if strings.EqualFold(strings.Trim(a, "[]"), h) {
			return true
		}
	}
	return false
}

func quote(s string) string {
	if len(s) > 100 {
		s = s[:100] + "…"
	}
	return "\"" + strings.ReplaceAll(s, "\"", "'") + "\""
}

// guarded runs g's checks before h. A dashboard page read with a live
// session goes on as its user: with the credential that stands for the
// user's reads (none in an open network).
func guarded(g Guard, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if (uiRead(r) || uiAct(r)) && g.Sessions != nil {
			if se, ok := g.Sessions.fromRequest(r); ok {
				if uiAct(r) && !se.acts {
					writeError(w, http.StatusForbidden, "this dashboard session reads only: in a network with an authority, submit and cancel with the agora command and your credential")
					return
				}
				ctx := context.WithValue(r.Context(), viewerKey{}, se.user)
				ctx = context.WithValue(ctx, actsKey{}, se.acts)
				if se.cred != nil {
					ctx = WithCredential(ctx, se.cred)
				}
				r = r.WithContext(ctx)
				g := g
				g.Token = "" // the session stands for it
				if code, msg := g.checkSession(r); code != 0 {
					writeError(w, code, msg)
					return
				}
				h.ServeHTTP(w, r)
				return
			}
		}
		if code, msg := g.check(r); code == http.StatusSeeOther {
			http.Redirect(w, r, msg, code) // a dashboard page without the token: sign in
			return
		} else if code != 0 {
			writeError(w, code, msg)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// checkHost refuses a request whose Host is not this node's API
// address.
func (g *Guard) checkHost(r *http.Request) (int, string) {
	host, _, err := net.SplitHostPort(r.Host)
	if err != nil {
		host = r.Host
	}
	if !g.hostAllowed(host) {
		return http.StatusMisdirectedRequest, "Host " + quote(r.Host) + " is not this node's API address (use 127.0.0.1 or the address the node was given with --api)"
	}
	return 0, ""
}

// checkSession is check for a dashboard read that came with a session:
// the host and origin rules, no token.
func (g *Guard) checkSession(r *http.Request) (int, string) {
	if code, msg := g.checkHost(r); code != 0 {
		return code, msg
	}
	// Cookies are not kept apart by port: a page on another port of this
	// host is same-site, and its requests carry the session. Take only
	// the dashboard's own pages' requests and the user's own navigation.
	// The pages' Referrer-Policy (no-referrer) makes a browser send
	// Origin: null with their forms; Sec-Fetch-Site, which no page can
	// set, then says where the request came from.
	o, sfs := r.Header.Get("Origin"), r.Header.Get("Sec-Fetch-Site")
	sameOrigin := false
	if o != "" && o != "null" {
		if u, err := url.Parse(o); err != nil || !strings.EqualFold(u.Host, r.Host) {
			return http.StatusForbidden, "Origin " + quote(o) + " is another origin (another port or site): the dashboard's session serves its own pages only"
		}
		sameOrigin = true
	}
	if sfs != "" && sfs != "same-origin" && sfs != "none" {
		return http.StatusForbidden, "a request from another origin (Sec-Fetch-Site: " + sfs + "): the dashboard's session serves its own pages only; open the address directly"
	}
	if uiAct(r) && !sameOrigin && sfs != "same-origin" {
		// A browser says where every POST comes from: an action that
		// does not say it came from this origin is refused.
		return http.StatusForbidden, "a dashboard action that did not come from the dashboard's own page (no same-origin Origin or Sec-Fetch-Site): send it from the dashboard"
	}
	return 0, ""
}
