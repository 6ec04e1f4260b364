package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agora-sched/agora/testnet/waitfor"
)

// cdpPage drives one page of a headless Chromium through the DevTools
// protocol, over its websocket on 127.0.0.1: navigate, evaluate script,
// read the result. It is what a user's clicks need that --dump-dom cannot
// do: fill a form, press a button, download a file in the session.
type cdpPage struct {
	t    *testing.T
	conn *websocket.Conn
	next int
}

func newCDPPage(t *testing.T, bin string) *cdpPage {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command(bin, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars",
		"--user-data-dir="+dir, "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0", "about:blank")
	// Its own process group: Chromium's renderer, GPU and utility
	// processes outlive a killed browser process for a moment and write
	// into the profile, which then cannot be removed (CI: "directory not
	// empty"). The whole group is killed, and gone, before the profile's
	// removal (cleanups run last first).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		waitfor.Every(t, 10*time.Second, 20*time.Millisecond, "Chromium's processes to end", func() bool {
			return !groupRuns(cmd.Process.Pid)
		})
	})
	var port string
	waitfor.Every(t, 30*time.Second, 50*time.Millisecond, "Chromium's DevTools port", func() bool {
		b, err := os.ReadFile(filepath.Join(dir, "DevToolsActivePort"))
		if err != nil {
			return false
		}
		port, _, _ = strings.Cut(string(b), "\n")
		return port != ""
	})
	var targets []struct{ Type, WebSocketDebuggerURL string }
	waitfor.Every(t, 10*time.Second, 50*time.Millisecond, "Chromium's page target", func() bool {
		resp, err := http.Get("http://127.0.0.1:" + port + "/json/list")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		if json.NewDecoder(resp.Body).Decode(&targets) != nil {
			return false
		}
		for _, tg := range targets {
			if tg.Type == "page" {
				return true
			}
		}
		return false
	})
	var ws string
	for _, tg := range targets {
		if tg.Type == "page" {
			ws = tg.WebSocketDebuggerURL
			break
		}
	}
	conn, _, err := websocket.DefaultDialer.Dial(ws, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &cdpPage{t: t, conn: conn}
}

// groupRuns says whether a process of process group pgid still runs (a
// zombie, which nobody may reap here, does not).
func groupRuns(pgid int) bool {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp …; comm may hold anything but ")".
		i := strings.LastIndex(string(b), ") ")
		if i < 0 {
			continue
		}
		rest := string(b)[i+2:]
		var state string
		var ppid, pgrp int
		if _, err := fmt.Sscan(rest, &state, &ppid, &pgrp); err == nil && pgrp == pgid && state != "Z" {
			return true
		}
	}
	return false
}

// call sends one command and returns its result, skipping events.
func (p *cdpPage) call(method string, params any) json.RawMessage {
	p.t.Helper()
	raw, err := p.try(method, params)
	if err != nil {
		p.t.Fatalf("DevTools %s: %v", method, err)
	}
	return raw
}

// try is call returning the protocol's error (a page navigating away
// under an evaluation, say) instead of failing the test.
func (p *cdpPage) try(method string, params any) (json.RawMessage, error) {
	p.t.Helper()
	p.next++
	id := p.next
	if err := p.conn.WriteJSON(map[string]any{"id": id, "method": method, "params": params}); err != nil {
		p.t.Fatal(err)
	}
	_ = p.conn.SetReadDeadline(time.Now().Add(60 * time.Second))
	for {
		var m struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := p.conn.ReadJSON(&m); err != nil {
			p.t.Fatalf("DevTools %s: %v", method, err)
		}
		if m.ID != id {
			continue // an event
		}
		if m.Error != nil {
			return nil, fmt.Errorf("%s", m.Error.Message)
		}
		return m.Result, nil
	}
}

// eval evaluates a script expression in the page, awaiting a promise,
// and decodes its value into out (when not nil).
func (p *cdpPage) eval(expr string, out any) {
	p.t.Helper()
	raw := p.call("Runtime.evaluate", map[string]any{"expression": expr, "awaitPromise": true, "returnByValue": true})
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		p.t.Fatal(err)
	}
	if r.ExceptionDetails != nil {
		p.t.Fatalf("script %q: %s %s", expr, r.ExceptionDetails.Text, r.ExceptionDetails.Exception.Description)
	}
	if out != nil && len(r.Result.Value) > 0 {
		if err := json.Unmarshal(r.Result.Value, out); err != nil {
			p.t.Fatalf("script %q: %v: %s", expr, err, r.Result.Value)
		}
	}
}

// str evaluates expr to a string.
func (p *cdpPage) str(expr string) string {
	p.t.Helper()
	var s string
	p.eval(expr, &s)
	return s
}

// open navigates to url and waits until the page at a path starting
// with want (exactly want, when it ends in "/") has loaded.
func (p *cdpPage) open(url, want string) {
	p.t.Helper()
	p.call("Page.navigate", map[string]any{"url": url})
	p.waitPath(want)
}

// waitPath waits until the page at a path starting with want (exactly
// want, when it ends in "/") has loaded.
func (p *cdpPage) waitPath(want string) {
	p.t.Helper()
	waitfor.Every(p.t, 30*time.Second, 50*time.Millisecond, fmt.Sprintf("the page %s to load", want), func() bool {
		path := p.loaded()
		if strings.HasSuffix(want, "/") {
			return path == want
		}
		return strings.HasPrefix(path, want)
	})
}

// loaded is the path of the page once it has loaded, "" before (or while
// it navigates away).
func (p *cdpPage) loaded() string {
	p.t.Helper()
	raw, err := p.try("Runtime.evaluate", map[string]any{"expression": `document.readyState === "complete" ? location.pathname : ""`, "returnByValue": true})
	if err != nil {
		return ""
	}
	var r struct {
		Result struct {
			Value string `json:"value"`
		} `json:"result"`
	}
	_ = json.Unmarshal(raw, &r)
	return r.Result.Value
}

// jsonEncoder is an encoder that leaves <, > and & as they are.
func jsonEncoder(w io.Writer) *json.Encoder {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc
}
