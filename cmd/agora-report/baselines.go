package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agora-sched/agora/testnet/sim"
	"github.com/agora-sched/agora/testnet/sim/metrics"
	"github.com/agora-sched/agora/testnet/sim/refeasy"
	"github.com/agora-sched/agora/testnet/sim/workload"
)

// wide is the width group the starvation target is about: jobs of more
// than 64 processors.
const wide = "65+"

func group(x metrics.Report, label string) metrics.Group {
	for _, g := range x.ByWidth {
		if g.Label == label {
			return g
		}
	}
	return metrics.Group{}
}

// easyAlt is the report's name for the other textbook EASY variant
// (testnet/sim backfill.go): a run past its estimate is not counted free
// at the head's shadow time, and the scheduler makes a pass after every
// arrival and every job's end. A target against EASY is met only when
// the auction beats both it and `easy`.
const easyAlt = "easy-alt"

// simConfig is the simulator configuration of a report schedule name.
func simConfig(name string, cfg sim.Config) sim.Config {
	cfg.Scheduler = name
	if name == easyAlt {
		cfg.Scheduler, cfg.EASYOverrun, cfg.EASYPass = "easy", sim.OverrunNever, sim.PassEvent
	}
	return cfg
}

// baselines replays each whole SWF log under the backfilling baselines,
// the reference EASY and conservative backfilling (package refeasy) and, with -whole-auction, the
// auction, beside the production schedule the log records.
func (r *report) baselines() {
	o := r.o
	r.p("## Whole SWF logs: the auction against textbook backfilling and the logs' own schedules")
	r.p("")
	r.p("Each log whole on its machine (one-processor nodes). `easy` is textbook EASY on the users' estimates (a run past its estimate counted as ending now, one pass per instant); `easy-alt` the other textbook variant (such a run not counted free at the shadow time, a pass after every arrival and every job's end), and a target against EASY is met only when the auction beats both; `conservative` is conservative backfilling on the same estimates; `reference EASY` and `reference conservative` are second implementations on a processor count (package `testnet/sim/refeasy`, Mu'alem and Feitelson's description), required within 2 %% of `easy` and `conservative` by `TestEASYMatchesReference` and `TestConservativeMatchesReference`; `production` is the schedule the log records (field 3, the wait on the real machine) for the same jobs. `%s` columns are the jobs wider than 64 processors. Seed %d.", wide, o.seed)
	r.p("")
	for _, name := range []string{"KTH-SP2-1996-2.1-cln.swf.gz", "SDSC-SP2-1998-4.2-cln.swf.gz"} {
		path := filepath.Join(o.traces, name)
		if _, err := os.Stat(path); err != nil {
			continue
		}
		c, err := sim.SWFCluster(path)
		if err != nil {
			fail("%v", err)
		}
		w, err := workload.OpenSWF(path, workload.SWFOptions{})
		if err != nil {
			fail("%v", err)
		}
		scheds := []string{"easy", easyAlt, "easy-predicted", "conservative", "sjf-backfill", "sjf-oracle"}
		if o.wholeAuction {
			scheds = append([]string{"auction"}, scheds...)
		}
		r.p("### %s, all %d jobs kept (%d skipped), %d processors", name, len(w.Jobs), w.Skipped, c.Size())
		r.p("")
		r.p("| schedule | mean wait s | p99 wait s | max wait s | bounded slowdown | utilization | unfinished | %s jobs | %s mean wait s | %s max wait s | wall s |", wide, wide, wide)
		r.p("|---|---|---|---|---|---|---|---|---|---|---|")
		var easy, alt, auction metrics.Report
		var recorded *metrics.Group
		for _, s := range scheds {
			in, x := r.run(simConfig(s, sim.Config{Cluster: c, Workload: w, Seed: o.seed}))
			g := group(x, wide)
			r.p("| %s | %.0f | %.0f | %.0f | %.2f | %.3f | %d | %d | %.0f | %.0f | %.1f |", s, x.MeanWait, x.P99Wait, x.MaxWait, x.MeanBoundedSlowdown, x.Utilization, x.Unfinished, g.Jobs, g.MeanWait, g.MaxWait, x.Wall)
			switch s {
			case "easy":
				easy, recorded = x, x.Recorded
				r.referenceRow("EASY", refeasy.Run, in, w, c.Size(), x)
			case easyAlt:
				alt = x
			case "conservative":
				r.referenceRow("conservative", refeasy.Conservative, in, w, c.Size(), x)
			case "auction":
				auction = x
			}
		}
		if recorded != nil {
			r.p("| production (recorded) | %.0f | %.0f | %.0f | %.2f | | | | | | |", recorded.MeanWait, recorded.P99Wait, recorded.MaxWait, recorded.MeanBoundedSlowdown)
		}
		r.p("")
		if o.wholeAuction {
			ew, lw, aw := group(easy, wide), group(alt, wide), group(auction, wide)
			r.p("Targets (each against easy / easy-alt): auction bounded slowdown %.2f vs %.2f / %.2f (%s); mean wait %.0f s vs %.0f / %.0f s (%s); p99 wait %.0f s vs %.0f / %.0f s (%s); jobs wider than 64 processors wait %.0f s vs %.0f / %.0f s = %.2f× / %.2f× (%s, want ≤ 1.5×); utilization %.3f vs %.3f / %.3f (%s).",
				auction.MeanBoundedSlowdown, easy.MeanBoundedSlowdown, alt.MeanBoundedSlowdown, okWord(auction.MeanBoundedSlowdown <= min(easy.MeanBoundedSlowdown, alt.MeanBoundedSlowdown)),
				auction.MeanWait, easy.MeanWait, alt.MeanWait, okWord(auction.MeanWait <= min(easy.MeanWait, alt.MeanWait)),
				auction.P99Wait, easy.P99Wait, alt.P99Wait, okWord(auction.P99Wait <= min(easy.P99Wait, alt.P99Wait)),
				aw.MeanWait, ew.MeanWait, lw.MeanWait, aw.MeanWait/ew.MeanWait, aw.MeanWait/lw.MeanWait, okWord(aw.MeanWait <= 1.5*min(ew.MeanWait, lw.MeanWait)),
				auction.Utilization, easy.Utilization, alt.Utilization, okWord(auction.Utilization >= max(easy.Utilization, alt.Utilization)))
			r.p("")
		}
	}
}

// referenceRow replays the jobs the simulator kept under a reference
// scheduler and prints its row, with how far it is from the simulator's
// run of the same policy, own.
func (r *report) referenceRow(name string, run func([]refeasy.Job, int) []time.Duration, in metrics.Input, w *workload.Workload, machine int, own metrics.Report) {
	byID := map[string]workload.Job{}
	for _, j := range w.Jobs {
		byID[j.ID] = j
	}
	jobs := make([]refeasy.Job, 0, len(in.Jobs))
	for _, rec := range in.Jobs {
		j := byID[rec.ID]
		t := j.Spec.Tasks[0]
		est := t.Estimate
		if est <= 0 {
			est = sim.NoEstimate
		}
		jobs = append(jobs, refeasy.Job{Submit: j.Submit, Runtime: j.Runtimes[t.Name], Estimate: est, Procs: max(t.Replicas, 1)})
	}
	starts := run(jobs, machine)
	var waits, slow []float64
	for i, j := range jobs {
		wait := starts[i] - j.Submit
		waits = append(waits, wait.Seconds())
		slow = append(slow, max(1, (wait+j.Runtime).Seconds()/max(j.Runtime, metrics.Tau).Seconds()))
	}
	mw, ms := metrics.Mean(waits), metrics.Mean(slow)
	r.p("| reference %s (%+.2f %% wait, %+.2f %% slowdown vs %s) | %.0f | %.0f | | %.2f | | | | | | |", name, 100*(mw/own.MeanWait-1), 100*(ms/own.MeanBoundedSlowdown-1), strings.ToLower(name), mw, metrics.Percentile(waits, 99), ms)
}

// loadSweep runs the synthetic mix on hetero:100 at each offered load of
// -sweep, warm-up and drain left out of the measurement, and prints the
// achieved bottleneck busy fraction beside each scheduler's waits.
func (r *report) loadSweep() {
	o := r.o
	if len(o.sweep) == 0 {
		return
	}
	const nodes = 100
	c := sim.HeteroCluster(nodes)
	scheds := []string{"auction", "easy", easyAlt, "easy-predicted", "conservative", "sjf-backfill", "sjf-oracle"}
	r.p("## Load sweep: the synthetic mix on %d nodes", nodes)
	r.p("")
	r.p("`synthetic:%d,jobs=%d,load=L` on `hetero:%d`: arrivals span days, far past the longest jobs, and only the jobs submitted in the middle eight tenths of the span are measured (warm-up and drain left out); `busy` is the achieved busy fraction of the bottleneck resource (GPU or CPU) over that window, under the auction. Waits in seconds: mean / p99.", o.seed, o.sweepJobs, nodes)
	r.p("")
	hdr, sep := "| offered load | busy | oracle wait / mean runtime |", "|---|---|---|"
	for _, s := range scheds {
		hdr += " " + s + " |"
		sep += "---|"
	}
	r.p("%s", hdr)
	r.p("%s", sep)
	type point struct {
		load  float64
		ratio float64
		reps  map[string]metrics.Report
	}
	var pts []point
	for _, l := range o.sweep {
		src := workload.Source{Kind: workload.KindSynthetic, Seed: o.seed, Jobs: o.sweepJobs, Load: l}
		w, err := src.Open(c.Total(), sim.LargestNode(c))
		if err != nil {
			fail("%v", err)
		}
		pt := point{load: l, reps: map[string]metrics.Report{}}
		row := ""
		for _, s := range scheds {
			_, x := r.run(simConfig(s, sim.Config{Cluster: c, Workload: w, Seed: o.seed}))
			pt.reps[s] = x
			row += fmt.Sprintf(" %.0f / %.0f |", x.MeanWait, x.P99Wait)
		}
		or := pt.reps["sjf-oracle"]
		if rt := or.MeanResponse - or.MeanWait; rt > 0 {
			pt.ratio = or.MeanWait / rt
		}
		pts = append(pts, pt)
		r.p("| %.2f | %.3f | %.2f |%s", l, pt.reps["auction"].BottleneckBusy, pt.ratio, row)
	}
	r.p("")
	for _, pt := range pts {
		if pt.ratio < 0.10 {
			continue
		}
		a, e, ea, ep, or := pt.reps["auction"], pt.reps["easy"], pt.reps[easyAlt], pt.reps["easy-predicted"], pt.reps["sjf-oracle"]
		r.p("Targets at offered load %.2f (busy %.3f; oracle wait %.0f %% of mean runtime): auction mean wait %.0f s ≤ easy %.0f, easy-alt %.0f and easy-predicted %.0f (%s); p99 %.0f s ≤ %.0f, %.0f and %.0f (%s); mean wait %.2f× sjf-oracle's (%s, want ≤ 1.5×).",
			pt.load, a.BottleneckBusy, 100*pt.ratio, a.MeanWait, e.MeanWait, ea.MeanWait, ep.MeanWait, okWord(a.MeanWait <= min(e.MeanWait, ea.MeanWait, ep.MeanWait)),
			a.P99Wait, e.P99Wait, ea.P99Wait, ep.P99Wait, okWord(a.P99Wait <= min(e.P99Wait, ea.P99Wait, ep.P99Wait)),
			a.MeanWait/or.MeanWait, okWord(a.MeanWait <= 1.5*or.MeanWait))
		r.p("")
	}
}
