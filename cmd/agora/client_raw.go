package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/agora-sched/agora/node/api"
)

// send is do for a body that is already encoded, such as a YAML job spec
// sent as the user wrote it: it posts body with the given content type and
// decodes a JSON answer into out (when not nil), errors as *apiError.
func (c *client) send(method, path, contentType string, body []byte, out any) error {
	sg, err := sign(method, path, contentType, body)
	if err != nil {
		return err
	}
	contentType, body = sg.ContentType, sg.Body
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		return err
	}
	if body != nil || (method != http.MethodGet && method != http.MethodHead) {
		req.Header.Set("Content-Type", contentType)
	}
	if sg.Token != "" {
		req.Header.Set(api.CredentialHeader, sg.Token)
	}
	if c.token != "" {
		req.Header.Set(api.TokenHeader, "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("cannot reach agora node at %s: %w", strings.TrimPrefix(c.base, "http://"), err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(data, &e) == nil && e.Error != "" {
			return &apiError{Status: resp.StatusCode, Msg: e.Error}
		}
		return &apiError{Status: resp.StatusCode, Msg: fmt.Sprintf("%s %s: %s", method, path, resp.Status)}
	}
	if out == nil {
		return nil
	}
	if raw, ok := out.(*json.RawMessage); ok {
		*raw = append((*raw)[:0], data...)
		return nil
	}
	return json.Unmarshal(data, out)
}

// pollTimeout bounds one request of a polling loop (submit --wait, logs
// --follow), so that a hung node counts as unreachable and is retried
// rather than stalling the loop for the default client timeout.
const pollTimeout = 5 * time.Second

// newPollClient is newClient with the shorter per-request timeout that
// polling loops use.
func newPollClient(api string) *client {
	c := newClient(api)
	c.http = &http.Client{Timeout: pollTimeout}
	return c
}
