package spec

import (
	"bytes"
	"slices"
	"strconv"
	"time"

	"github.com/agora-sched/agora/devices/resource"
)

// quickRead reads a signed spec in the shape Canonical writes for the
// common case, without encoding/json's reflection: every node that bids
// for a job reads its signed spec once, and for a job of many tasks the
// reflecting decoder costs as much as the signature check. It handles a
// strict subset of JSON — no whitespace, field names exactly as the Job
// type writes them and each at most once, integers without fraction or
// exponent, strings of printable ASCII without escapes — and reports
// false for anything else, which decodeSigned then reads with
// encoding/json. Whatever it accepts, encoding/json reads to the same
// Job (FuzzQuickRead).
func quickRead(b []byte) (*Job, bool) {
	q := quick{b: b}
	var j Job
	ok := q.object(func(key []byte) bool {
		switch string(key) {
		case "name":
			j.Name = q.text()
		case "type":
			j.Type = q.text()
		case "priority":
			j.Priority = int(q.integer())
		case "deadline":
			raw, ok := q.rawString()
			if ok && j.Deadline.UnmarshalJSON(raw) != nil {
				q.fail()
			}
		case "pending_timeout_ns":
			j.PendingTimeout = time.Duration(q.integer())
		case "tasks":
			j.Tasks = []Task{}
			q.array(func() {
				j.Tasks = append(j.Tasks, Task{})
				q.task(&j.Tasks[len(j.Tasks)-1])
			})
		default:
			return false
		}
		return true
	})
	if !ok || q.bad || q.i != len(b) {
		return nil, false
	}
	return &j, true
}

// quick is quickRead's cursor; bad is set at the first byte it does not
// take.
type quick struct {
	b   []byte
	i   int
	bad bool
}

func (q *quick) fail() { q.bad = true }

// eat takes c, or fails.
func (q *quick) eat(c byte) bool {
	if q.bad || q.i >= len(q.b) || q.b[q.i] != c {
		q.bad = true
		return false
	}
	q.i++
	return true
}

// peek is the next byte, 0 at the end.
func (q *quick) peek() byte {
	if q.i >= len(q.b) {
		return 0
	}
	return q.b[q.i]
}

// rawString takes a string and returns it with its quotes.
func (q *quick) rawString() ([]byte, bool) {
	start := q.i
	if !q.eat('"') {
		return nil, false
	}
	for q.i < len(q.b) {
		c := q.b[q.i]
		switch {
		case c == '"':
			q.i++
			return q.b[start:q.i], true
		case c < 0x20 || c >= 0x7f || c == '\\':
			q.bad = true
			return nil, false
		}
		q.i++
	}
	q.bad = true
	return nil, false
}

func (q *quick) text() string {
	raw, ok := q.rawString()
	if !ok {
		return ""
	}
	return string(raw[1 : len(raw)-1])
}

// integer takes an integer: an optional minus, then 0 or digits not
// starting with 0, in range.
func (q *quick) integer() int64 {
	start := q.i
	if q.peek() == '-' {
		q.i++
	}
	digits := q.i
	for q.i < len(q.b) && q.b[q.i] >= '0' && q.b[q.i] <= '9' {
		q.i++
	}
	if q.i == digits || (q.b[digits] == '0' && q.i > digits+1) {
		q.bad = true
		return 0
	}
	if c := q.peek(); c == '.' || c == 'e' || c == 'E' {
		q.bad = true
		return 0
	}
	v, err := strconv.ParseInt(string(q.b[start:q.i]), 10, 64)
	if err != nil {
		q.bad = true
	}
	return v
}

func (q *quick) boolean() bool {
	for _, w := range []string{"true", "false"} {
		if len(q.b)-q.i >= len(w) && string(q.b[q.i:q.i+len(w)]) == w {
			q.i += len(w)
			return w == "true"
		}
	}
	q.bad = true
	return false
}

// object takes an object, handing each key to field, which reads the
// value and reports whether it knows the key. A key seen twice fails.
func (q *quick) object(field func(key []byte) bool) bool {
	if !q.eat('{') {
		return false
	}
	if q.peek() == '}' {
		q.i++
		return true
	}
	var seen [][]byte // few keys: a list beats a map
	for !q.bad {
		raw, _ := q.rawString()
		if q.bad || slices.ContainsFunc(seen, func(s []byte) bool { return bytes.Equal(s, raw) }) || !q.eat(':') {
			q.bad = true
			return false
		}
		seen = append(seen, raw)
		if !field(raw[1 : len(raw)-1]) {
			q.bad = true
			return false
		}
		if q.peek() == ',' {
			q.i++
			continue
		}
		return q.eat('}')
	}
	return false
}

// array takes an array, reading each element with elem.
func (q *quick) array(elem func()) {
	if !q.eat('[') {
		return
	}
	if q.peek() == ']' {
		q.i++
		return
	}
	for !q.bad {
		elem()
		if q.peek() == ',' {
			q.i++
			continue
		}
		q.eat(']')
		return
	}
}

func (q *quick) list() []string {
	out := []string{}
	q.array(func() { out = append(out, q.text()) })
	return out
}

func (q *quick) dict() map[string]string {
	out := map[string]string{}
	q.object(func(key []byte) bool {
		out[string(key)] = q.text()
		return true
	})
	return out
}

func (q *quick) task(t *Task) {
	q.object(func(key []byte) bool {
		switch string(key) {
		case "name":
			t.Name = q.text()
		case "command":
			t.Command = q.list()
		case "env":
			t.Env = q.dict()
		case "request":
			q.request(&t.Request)
		case "after":
			t.After = q.list()
		case "estimate_ns":
			t.Estimate = time.Duration(q.integer())
		case "timeout_ns":
			t.Timeout = time.Duration(q.integer())
		case "checkpoint_interval_ns":
			t.CheckpointInterval = time.Duration(q.integer())
		case "retries":
			t.Retries = int(q.integer())
		case "replicas":
			t.Replicas = int(q.integer())
		case "array":
			t.Array = q.text()
		case "array_values":
			t.ArrayValues = q.list()
		case "gang":
			t.Gang = q.boolean()
		case "pack":
			t.Pack = q.boolean()
		case "image":
			t.Image = q.text()
		case "image_id":
			t.ImageID = q.text()
		case "image_size":
			t.ImageSize = q.integer()
		default:
			return false
		}
		return true
	})
}

func (q *quick) request(r *resource.Request) {
	q.object(func(key []byte) bool {
		switch string(key) {
		case "cpu_milli":
			r.CPU = q.integer()
		case "memory":
			r.Memory = q.integer()
		case "disk":
			r.Disk = q.integer()
		case "gpu":
			q.object(func(key []byte) bool {
				switch string(key) {
				case "count":
					r.GPU.Count = int(q.integer())
				case "share_milli":
					r.GPU.Share = q.integer()
				case "memory":
					r.GPU.Memory = q.integer()
				case "model":
					r.GPU.Model = q.text()
				default:
					return false
				}
				return true
			})
		case "devices":
			r.Devices = []resource.DeviceRequest{}
			q.array(func() {
				var d resource.DeviceRequest
				q.object(func(key []byte) bool {
					switch string(key) {
					case "kind":
						d.Kind = q.text()
					case "model":
						d.Model = q.text()
					case "count":
						d.Count = int(q.integer())
					default:
						return false
					}
					return true
				})
				r.Devices = append(r.Devices, d)
			})
		case "labels":
			r.Labels = q.dict()
		case "site":
			r.Site = q.text()
		case "limits":
			if v := q.integer(); v >= 0 && v <= 255 {
				r.Limits = resource.Limits(v)
			} else {
				q.fail() // encoding/json refuses it, saying why
			}
		default:
			return false
		}
		return true
	})
}
