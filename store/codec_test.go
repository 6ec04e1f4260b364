package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// recordCodec stores a record as "R<n>:<name>", and reads that or JSON.
// It counts its calls, so that a test can tell it was used.
type recordCodec struct{ enc, dec int }

func (c *recordCodec) encode(r record) ([]byte, error) {
	c.enc++
	if r.Name == "refuse" {
		return nil, errors.New("refused by the codec")
	}
	if r.Name == "nul" {
		return []byte{0, 'x'}, nil
	}
	return fmt.Appendf(nil, "R%d:%s", r.N, r.Name), nil
}

func (c *recordCodec) decode(data []byte, r *record) error {
	c.dec++
	if len(data) > 0 && data[0] == '{' {
		return json.Unmarshal(data, r)
	}
	n, name, ok := strings.Cut(string(data), ":")
	if !ok || !strings.HasPrefix(n, "R") {
		return fmt.Errorf("not a coded record: %q", data)
	}
	v, err := strconv.Atoi(n[1:])
	if err != nil {
		return err
	}
	*r = record{Name: name, N: v}
	return nil
}

func TestBucketCodec(t *testing.T) {
	eachMode(t, func(t *testing.T, s *Store) {
		// A value stored as JSON before the codec was set.
		if err := NewBucket[record](s, "coded").Put("old", record{Name: "json", N: 1}); err != nil {
			t.Fatal(err)
		}
		c := &recordCodec{}
		b := NewBucket[record](s, "coded").WithCodec(c.encode, c.decode)
		if err := b.Put("a", record{Name: "alpha", N: 2}); err != nil {
			t.Fatal(err)
		}
		if err := b.PutAll([]Entry[record]{{Key: "b", Value: record{Name: "beta", N: 3}}}); err != nil {
			t.Fatal(err)
		}
		if err := b.Update("c", func(v *record, exists bool) (bool, error) {
			*v = record{Name: "gamma", N: 4}
			return !exists, nil
		}); err != nil {
			t.Fatal(err)
		}
		if err := s.Batch(func(bt *Batch) error { return BatchPut(bt, b, "d", record{Name: "delta", N: 5}) }); err != nil {
			t.Fatal(err)
		}
		if c.enc != 4 {
			t.Fatalf("codec encoded %d values, want 4", c.enc)
		}
		// The bytes under a key are the codec's.
		raw := NewBucket[json.RawMessage](s, "coded")
		if _, _, err := raw.Get("a"); err == nil {
			t.Fatal("the coded value read as JSON: the codec was not used")
		}
		got, err := b.List("")
		if err != nil {
			t.Fatal(err)
		}
		want := []Entry[record]{{"a", record{"alpha", 2}}, {"b", record{"beta", 3}}, {"c", record{"gamma", 4}}, {"d", record{"delta", 5}}, {"old", record{"json", 1}}}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("List = %v, want %v", got, want)
		}
		if v, ok, err := b.Get("old"); err != nil || !ok || v != (record{"json", 1}) {
			t.Fatalf("Get(old) = %v, %v, %v", v, ok, err)
		}
		if c.dec < 6 {
			t.Fatalf("codec decoded %d values, want at least 6", c.dec)
		}
		// A value the codec refuses is not stored, and says why.
		if err := b.Put("e", record{Name: "refuse"}); err == nil || !strings.Contains(err.Error(), "refused by the codec") {
			t.Fatalf("Put of a refused value: %v", err)
		}
		// Output that would read as a large value's stub is refused.
		if err := b.Put("f", record{Name: "nul"}); err == nil || !strings.Contains(err.Error(), "NUL") {
			t.Fatalf("Put of NUL-led output: %v", err)
		}
		if n, err := b.Count(""); err != nil || n != 5 {
			t.Fatalf("Count = %d, %v; want 5", n, err)
		}
	})
}

func TestBucketCodecLargeValues(t *testing.T) {
	s := openMem(t)
	c := &recordCodec{}
	b := NewBucket[record](s, "bigcoded").AllowLarge(4*MaxValueSize).WithCodec(c.encode, c.decode)
	big := record{Name: strings.Repeat("x", 2*MaxValueSize), N: 7}
	if err := b.Put("k", big); err != nil {
		t.Fatal(err)
	}
	v, ok, err := b.Get("k")
	if err != nil || !ok || v != big {
		t.Fatalf("Get of a large coded value: ok %v, err %v, equal %v", ok, err, v == big)
	}
}
