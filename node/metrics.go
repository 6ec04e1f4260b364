package node

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/node/buildinfo"
)

// marketMetrics are the node's scheduling series (the gossip plane has
// its own, gossip.Metrics), on the node's own registry. Counters are fed
// by the adapters around the market core (the core stays free of them):
// the loop's effects, the API, the task goroutine, replication and the
// retention sweeps.
type marketMetrics struct {
	rounds       prometheus.Histogram
	submitted    prometheus.Counter
	tasksStarted prometheus.Counter
	tasksEnded   *prometheus.CounterVec
	copiesStored prometheus.Counter
	copiesFailed prometheus.Counter
	forgotten    prometheus.Counter
	expired      *prometheus.CounterVec
	refused      *prometheus.CounterVec
	dropped      prometheus.Counter
}

// refusalReasons are the reasons agora_refused_total counts, as the table
// in docs/security.md lists them (a test holds the two together).
var refusalReasons = []string{
	"no_certificate", "bad_certificate", "revoked", "unadmitted_stream", "unadmitted_advert", "bad_revocation",
	market.RefuseSender, market.RefuseUnbid, market.RefuseTicket, market.RefuseQuota, market.RefuseReport,
	market.RefuseRecord, market.RefuseSteal, market.RefuseClaim, market.RefuseClaimProof, market.RefuseSubmission,
	"record_quota", "manifest_quota", "chunk_quota", "bad_manifest", "bad_credential", "not_allowed", "flood", "bad_accounting", market.RefuseUsage,
}

// newMarketMetrics creates the series and registers them, with gauges
// read from n at each scrape, on reg.
func newMarketMetrics(reg prometheus.Registerer, n *Node) *marketMetrics {
	m := &marketMetrics{
		rounds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "agora_auction_round_seconds",
			Help:    "Auction rounds this node managed that got a bid: CFPs sent to the first award decided.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14)}),
		submitted:    prometheus.NewCounter(prometheus.CounterOpts{Name: "agora_jobs_submitted_total", Help: "Jobs submitted to this node (it manages them)."}),
		tasksStarted: prometheus.NewCounter(prometheus.CounterOpts{Name: "agora_tasks_started_total", Help: "Task attempts this node started as executor."}),
		tasksEnded: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agora_tasks_ended_total",
			Help: "Task attempts this node ran that ended, by outcome: succeeded (exit 0) or failed (any other end, stops included)."}, []string{"outcome"}),
		copiesStored: prometheus.NewCounter(prometheus.CounterOpts{Name: "agora_job_record_copies_stored_total", Help: "Job-record copies this node replicated that a replica peer stored."}),
		copiesFailed: prometheus.NewCounter(prometheus.CounterOpts{Name: "agora_job_record_copies_failed_total", Help: "Job-record copies this node replicated that a replica peer did not store (refused, unreachable or too slow)."}),
		forgotten:    prometheus.NewCounter(prometheus.CounterOpts{Name: "agora_jobs_forgotten_total", Help: "Finished jobs this node managed and deleted after their retention."}),
		expired: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agora_finished_work_expired_total",
			Help: "Finished work deleted after its retention, by kind: replica (a job-record copy held for a peer) or execution (a task attempt's record and log)."}, []string{"kind"}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{Name: "agora_network_input_dropped_total",
			Help: "Messages, adverts and load samples dropped because the event loop was behind (the market recovers by its timeouts)."}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agora_refused_total",
			Help: "Peers, streams and messages this node refused, by reason (docs/security.md)."}, []string{"reason"}),
	}
	// Every label value from the start, so that rates work from the first
	// scrape.
	for _, o := range []string{"succeeded", "failed"} {
		m.tasksEnded.WithLabelValues(o)
	}
	for _, k := range []string{"replica", "execution"} {
		m.expired.WithLabelValues(k)
	}
	for _, r := range refusalReasons {
		m.refused.WithLabelValues(r)
	}
	jobs := prometheus.NewDesc("agora_jobs", "Jobs this node manages, by state (finished ones until their retention passes).", []string{"state"}, nil)
	queued := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "agora_tasks_queued", Help: "Task replicas awarded to this node and waiting to start."},
		func() float64 {
			return float64(n.soft.Load().Queue)
		})
	freeCPU := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "agora_free_cpu_cores", Help: "CPU this node has not committed to tasks, in cores."},
		func() float64 {
			return float64(n.soft.Load().Free.CPU) / 1000
		})
	degraded := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "agora_degraded", Help: "1 while this node cannot store job records (a nearly full disk, a failing store): submissions are refused and its messages wait."},
		func() float64 {
			if n.writable() != nil {
				return 1
			}
			return 0
		})
	bi := buildinfo.Get()
	build := prometheus.NewGauge(prometheus.GaugeOpts{Name: "agora_build_info", Help: "Always 1; the labels say which build of agora this node runs.",
		ConstLabels: prometheus.Labels{"version": bi.Version, "commit": bi.Commit, "build_time": bi.BuildTime, "go_version": bi.GoVersion}})
	build.Set(1)
	reg.MustRegister(build)
	reg.MustRegister(m.rounds, m.submitted, m.tasksStarted, m.tasksEnded, m.copiesStored, m.copiesFailed, m.forgotten, m.expired, m.refused, m.dropped,
		queued, freeCPU, degraded, &jobsCollector{desc: jobs, n: n})
	return m
}

// jobsCollector reports the jobs by state, counted on the loop at each
// scrape.
type jobsCollector struct {
	desc *prometheus.Desc
	n    *Node
}

// Describe implements prometheus.Collector.
func (c *jobsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector. Every state is reported, zeros
// included, so that a series does not vanish between scrapes; nothing is
// reported when the loop does not answer (the node is stopping).
func (c *jobsCollector) Collect(ch chan<- prometheus.Metric) {
	var counts map[market.JobState]int
	if c.n.call(func() { counts = c.n.mkt.JobCounts() }) != nil {
		return
	}
	for _, st := range market.JobStates {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(counts[st]), string(st))
	}
}
