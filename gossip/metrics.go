package gossip

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the gossip plane's Prometheus series. Each node registers its
// own set on its own registry, so one process can host many nodes.
type Metrics struct {
	Sent     prometheus.Counter
	Received prometheus.Counter
	Dropped  *prometheus.CounterVec
	Peers    prometheus.Gauge
}

// NewMetrics creates the series and registers them on reg (when not nil).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Sent:     prometheus.NewCounter(prometheus.CounterOpts{Name: "agora_adverts_sent_total", Help: "Resource adverts this node published."}),
		Received: prometheus.NewCounter(prometheus.CounterOpts{Name: "agora_adverts_received_total", Help: "Valid resource adverts received from other peers."}),
		Dropped:  prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agora_adverts_dropped_total", Help: "Adverts dropped by the validator, by reason."}, []string{"reason"}),
		Peers:    prometheus.NewGauge(prometheus.GaugeOpts{Name: "agora_peers_known", Help: "Live peers in the membership view."}),
	}
	for _, r := range []string{"flood", "malformed", "misattributed", "stale", "unadmitted"} {
		m.Dropped.WithLabelValues(r) // every reason from the start: rates work from the first scrape
	}
	if reg != nil {
		reg.MustRegister(m.Sent, m.Received, m.Dropped, m.Peers)
	}
	return m
}
