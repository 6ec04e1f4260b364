package wire

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/agora-sched/agora/market"
)

// FuzzDecode checks that Decode never panics, and that whatever it
// accepts encodes again to a message that decodes to the same value.
func FuzzDecode(f *testing.F) {
	for _, tc := range roundTrips() {
		b, err := Encode(tc.msg)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add(invalidUTF8())
	// Gang and stealing messages at the edges: a commit with the most
	// peers, a steal request for the most tasks, and envelopes holding
	// each message added after the first seven with no fields set.
	peers := make([]market.NodeID, MaxPeers)
	for i := range peers {
		peers[i] = market.NodeID(fmt.Sprintf("n%d", i))
	}
	b, err := Encode(market.Commit{Key: key, Epoch: 1, Rank: MaxRank, Peers: peers})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	b, err = Encode(market.StealRequest{Thief: bidder, Room: fullOffer().Request, Max: MaxStealTasks})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	for tag := byte(9); tag <= 15; tag++ {
		f.Add([]byte{0x08, 0x01, tag<<3 | 2, 0x00})
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Decode(b)
		if err != nil {
			if m != nil {
				t.Fatalf("Decode returned %T with error %v", m, err)
			}
			return
		}
		again, err := Encode(m)
		if errors.Is(err, ErrTooLarge) {
			return // the input may have been more compact than our encoding
		}
		if err != nil {
			t.Fatalf("Encode of a decoded %T: %v", m, err)
		}
		m2, err := Decode(again)
		if err != nil {
			t.Fatalf("Decode of re-encoded %T: %v", m, err)
		}
		if !reflect.DeepEqual(m, m2) {
			t.Fatalf("re-encoded message differs:\n%#v\n%#v", m, m2)
		}
	})
}

// FuzzDecodeQuery checks that DecodeQuery and DecodeQueryReply never
// panic and that what they accept round-trips.
func FuzzDecodeQuery(f *testing.F) {
	for _, q := range []Query{{Kind: QueryStatus, Job: "j"}, {Kind: QueryLogs, Job: "j", Task: "t", Replica: 1, Attempt: 2, From: 3, MaxBytes: 4}} {
		b, err := EncodeQuery(q)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	b, err := EncodeQueryReply(QueryReply{Found: true, Error: "e", Body: []byte(`{"a":1}`)})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		if q, err := DecodeQuery(b); err == nil {
			again, err := EncodeQuery(q)
			if err != nil {
				t.Fatalf("EncodeQuery of a decoded query: %v", err)
			}
			if q2, err := DecodeQuery(again); err != nil || !reflect.DeepEqual(q2, q) {
				t.Fatalf("query round trip: %v", err)
			}
		}
		if r, err := DecodeQueryReply(b); err == nil {
			again, err := EncodeQueryReply(r)
			if err != nil {
				t.Fatalf("EncodeQueryReply of a decoded reply: %v", err)
			}
			if r2, err := DecodeQueryReply(again); err != nil || !reflect.DeepEqual(r, r2) {
				t.Fatalf("reply round trip: %v", err)
			}
		}
	})
}

// FuzzReadFrame checks that ReadFrame never panics or returns more than
// max bytes, and that frames it reads write back identically.
func FuzzReadFrame(f *testing.F) {
	f.Add([]byte{0x03, 1, 2, 3, 0x00})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Add([]byte{0x81, 0x00})
	f.Fuzz(func(t *testing.T, in []byte) {
		const max = 64
		r := bufio.NewReader(bytes.NewReader(in))
		var out bytes.Buffer
		for {
			b, err := ReadFrame(r, max)
			if err != nil {
				break
			}
			if len(b) > max {
				t.Fatalf("frame of %d bytes with max %d", len(b), max)
			}
			if err := WriteFrame(&out, b); err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.HasPrefix(in, out.Bytes()) {
			t.Fatalf("frames read do not write back as a prefix of the input")
		}
	})
}
