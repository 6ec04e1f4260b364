package api

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Dashboard sessions. A browser never holds the API token or a user's
// credential: `agora dashboard` asks the node for a one-time sign-in code
// (POST /v1/ui/code/NODE, with the API token, or in a network with an
// authority a session credential the user signed for node NODE), and the
// sign-in page trades the code for a session (POST /ui/session). The
// session is a cookie that script cannot read (HttpOnly), sent to this
// node's pages only (its name is the node's, SameSite=Strict, Path
// /ui/), which lets the browser read /ui/ pages, for at most SessionTTL,
// as the user who signed in. A session bought with the API token (an open
// network's: its holder may do anything through the API) also acts:
// submit, cancel and re-run through POST /ui/act/... (web). One bought
// with a user's session credential only reads: acting on a network with
// an authority takes the user's own signature on each request, which a
// browser does not hold.

// SessionTTL is how long a dashboard session lasts (a user's signed
// session credential lasts as long: market/auth.SessionTTL).
const SessionTTL = 12 * time.Hour

// codeTTL is how long a sign-in code may wait for its browser.
const codeTTL = time.Minute

// Bounds of what a node keeps for sessions.
const (
	maxCodes    = 64
	maxSessions = 1024
)

// session is a signed-in browser: the user, the credential that stands
// for their reads (nil in an open network: the token holder reads all),
// and when it lapses.
type session struct {
	user    string
	cred    []byte
	acts    bool // may submit, cancel and re-run (POST /ui/act/...)
	expires time.Time
	code    time.Time // a code's: until when it opens the session
}

// Sessions are a node's dashboard sign-ins.
type Sessions struct {
	name   string // the cookie's name: the node's
	secret []byte // MACs the session IDs, so a forged cookie costs no lookup
	now    func() time.Time
	rnd    io.Reader

	mu    sync.Mutex
	codes map[string]session
	live  map[string]session
}

// NewSessions makes the session store of the node with peer ID node;
// rnd is a cryptographic source.
func NewSessions(node string, rnd io.Reader, now func() time.Time) (*Sessions, error) {
	secret := make([]byte, 32)
	if _, err := io.ReadFull(rnd, secret); err != nil {
		return nil, err
	}
	h := sha256.Sum256([]byte(node))
	return &Sessions{name: "agora_ui_" + base64.RawURLEncoding.EncodeToString(h[:9]), secret: secret, now: now, rnd: rnd,
		codes: map[string]session{}, live: map[string]session{}}, nil
}

// CookieName is the name of this node's session cookie.
func (s *Sessions) CookieName() string { return s.name }

func (s *Sessions) random(n int) (string, error) {
	b := make([]byte, n)
	if _, err := io.ReadFull(s.rnd, b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// code makes a one-time sign-in code for user, whose reads cred stands
// for until expires.
func (s *Sessions) code(user string, cred []byte, expires time.Time) (string, error) {
	c, err := s.random(24)
	if err != nil {
		return "", err
	}
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, v := range s.codes {
		if !now.Before(v.code) {
			delete(s.codes, k)
		}
	}
	if len(s.codes) >= maxCodes {
		return "", errors.New("too many sign-in codes waiting for their browsers")
	}
	s.codes[c] = session{user: user, cred: cred, acts: cred == nil, expires: expires, code: now.Add(codeTTL)}
	return c, nil
}

// trade takes a one-time code and returns the session ID it opens.
func (s *Sessions) trade(code string) (string, session, bool) {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	se, ok := s.codes[code]
	delete(s.codes, code)
	if !ok || !now.Before(se.code) {
		return "", session{}, false
	}
	id, err := s.random(24)
	if err != nil {
		return "", session{}, false
	}
	if len(s.live) >= maxSessions {
		for k, v := range s.live {
			if !now.Before(v.expires) {
				delete(s.live, k)
			}
		}
		if len(s.live) >= maxSessions {
			return "", session{}, false
		}
	}
	s.live[id] = se
	return s.seal(id, se.expires), se, true
}

// seal is a session ID as its cookie carries it: the ID, its expiry and
// their MAC.
func (s *Sessions) seal(id string, expires time.Time) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(expires.Unix()))
	body := id + "." + base64.RawURLEncoding.EncodeToString(b[:])
	m := hmac.New(sha256.New, s.secret)
	m.Write([]byte(body))
	return body + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// lookup returns the live session a cookie value names.
func (s *Sessions) lookup(value string) (session, bool) {
	i := strings.LastIndexByte(value, '.')
	if i < 0 {
		return session{}, false
	}
	body, mac := value[:i], value[i+1:]
	m := hmac.New(sha256.New, s.secret)
	m.Write([]byte(body))
	want := base64.RawURLEncoding.EncodeToString(m.Sum(nil))
	if !hmac.Equal([]byte(mac), []byte(want)) {
		return session{}, false
	}
	id, _, _ := strings.Cut(body, ".")
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	se, ok := s.live[id]
	if !ok || !now.Before(se.expires) {
		delete(s.live, id)
		return session{}, false
	}
	return se, true
}

// fromRequest is the live session r's cookie names.
func (s *Sessions) fromRequest(r *http.Request) (session, bool) {
	c, err := r.Cookie(s.name)
	if err != nil {
		return session{}, false
	}
	return s.lookup(c.Value)
}

type viewerKey struct{}

type actsKey struct{}

// SessionActs says whether the dashboard session a request came with may
// act (submit, cancel, re-run): one bought with the API token.
func SessionActs(r *http.Request) bool {
	v, _ := r.Context().Value(actsKey{}).(bool)
	return v
}

// Viewer is the user of the dashboard session a request came with
// ("" in an open network, or for a request without a session), and
// whether it came with one.
func Viewer(r *http.Request) (string, bool) {
	v, ok := r.Context().Value(viewerKey{}).(string)
	return v, ok
}

// CodeResponse is the answer of POST /v1/ui/code/NODE.
type CodeResponse struct {
	Code    string    `json:"code"`
	User    string    `json:"user,omitempty"`
	Expires time.Time `json:"expires"` // of the session it opens
}

// handleCode makes a sign-in code: for the API token's holder in an
// open network (the guard checked the token), for the user whose signed
// session credential the request carries in one with an authority.
func (s *Server) handleCode(w http.ResponseWriter, r *http.Request) {
	if self, _ := s.b.Identity(); r.PathValue("node") != self {
		writeError(w, http.StatusBadRequest, "this is node "+self+", not "+quote(r.PathValue("node")))
		return
	}
	user, err := s.b.SignIn(r.Context())
	if err != nil {
		if errors.Is(err, ErrForbidden) {
			writeError(w, http.StatusForbidden, err.Error())
		} else {
			writeError(w, http.StatusServiceUnavailable, err.Error())
		}
		return
	}
	expires := s.sessions.now().Add(SessionTTL)
	c, err := s.sessions.code(user, Credential(r.Context()), expires)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, CodeResponse{Code: c, User: user, Expires: expires})
}

// handleSession trades a sign-in code for the session cookie.
func (s *Server) handleSession(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Code string `json:"code"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1024)).Decode(&req); err != nil || req.Code == "" {
		writeError(w, http.StatusBadRequest, "want {\"code\": CODE} from agora dashboard")
		return
	}
	value, se, ok := s.sessions.trade(req.Code)
	if !ok {
		writeError(w, http.StatusForbidden, "sign-in code unknown, used or expired: run agora dashboard again")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: s.sessions.name, Value: value, Path: "/ui/", Expires: se.expires,
		MaxAge: int(se.expires.Sub(s.sessions.now()).Seconds()), HttpOnly: true, SameSite: http.SameSiteStrictMode})
	writeJSON(w, http.StatusOK, map[string]string{"user": se.user})
}
