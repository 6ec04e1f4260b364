package node

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/agora-sched/agora/gossip"
	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/node/api"
)

// joinTracer is a pubsub.RawTracer that records the topics joined.
type joinTracer struct {
	mu     sync.Mutex
	topics []string
}

func (j *joinTracer) Join(topic string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.topics = append(j.topics, topic)
}

func (j *joinTracer) joined(topic string) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, t := range j.topics {
		if t == topic {
			return true
		}
	}
	return false
}

func (*joinTracer) OnNewOutboundStream(peer.ID, protocol.ID)             {}
func (*joinTracer) OnClosedOutboundStream(peer.ID)                       {}
func (*joinTracer) Leave(string)                                         {}
func (*joinTracer) Graft(peer.ID, string)                                {}
func (*joinTracer) Prune(peer.ID, string)                                {}
func (*joinTracer) ValidateMessage(*pubsub.Message)                      {}
func (*joinTracer) DeliverMessage(*pubsub.Message)                       {}
func (*joinTracer) RejectMessage(*pubsub.Message, string)                {}
func (*joinTracer) DuplicateMessage(*pubsub.Message)                     {}
func (*joinTracer) ThrottlePeer(peer.ID)                                 {}
func (*joinTracer) RecvRPC(*pubsub.RPC)                                  {}
func (*joinTracer) SendRPC(*pubsub.RPC, peer.ID)                         {}
func (*joinTracer) SendRPCCompleted(*pubsub.RPC, peer.ID, time.Duration) {}
func (*joinTracer) DropRPC(*pubsub.RPC, peer.ID)                         {}
func (*joinTracer) UndeliverableMessage(*pubsub.Message)                 {}

// TestTracingHooks: a node passes Config.PubSubOptions to GossipSub (its
// raw tracer sees the adverts topic joined) and reports the auction round
// of a submitted task to Config.OnRoundClosed.
func TestTracingHooks(t *testing.T) {
	tr := &joinTracer{}
	rounds := make(chan market.RoundClosed, 16)
	cfg := Config{DataDir: filepath.Join(t.TempDir(), "data"), Listen: []string{"/ip4/127.0.0.1/tcp/0"},
		API: "127.0.0.1:0", AdvertInterval: 100 * time.Millisecond, DisableNVML: true,
		PubSubOptions: []pubsub.Option{pubsub.WithRawTracer(tr)},
		OnRoundClosed: func(rc market.RoundClosed) {
			select {
			case rounds <- rc:
			default:
			}
		}}
	n, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Kill)
	topic := gossip.AdvertTopic(DefaultNetwork)
	for deadline := time.Now().Add(5 * time.Second); !tr.joined(topic); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the raw tracer passed in PubSubOptions did not see topic %s joined", topic)
		}
	}
	body := []byte(`{"name": "hook", "tasks": [{"name": "t", "command": ["true"], "resources": {"cpu": "100m"}}]}`)
	before := time.Now()
	req, err := http.NewRequest("POST", "http://"+n.APIAddr()+"/v1/jobs", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	tok, _ := os.ReadFile(filepath.Join(n.cfg.DataDir, api.TokenFile))
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("submit: %d", resp.StatusCode)
	}
	select {
	case rc := <-rounds:
		if rc.Auction.Key.Task != "t" || rc.Bids < 1 || rc.Opened.Before(before) || rc.Closed.Before(rc.Opened) || time.Since(rc.Closed) < 0 {
			t.Fatalf("round %+v (submitted at %v)", rc, before)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("OnRoundClosed was not called within 10s")
	}
}
