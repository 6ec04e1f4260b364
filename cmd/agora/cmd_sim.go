package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/testnet/sim"
	"github.com/agora-sched/agora/testnet/sim/metrics"
	"github.com/agora-sched/agora/testnet/sim/workload"
)

func init() {
	register("sim", "simulate a workload on a cluster under a scheduler (no network)", cmdSim)
}

func cmdSim(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("sim", stdout, stderr)
	clusterArg := fs.String("cluster", "", "cluster: a YAML file (nodes: [{count, site, latency, failure_rate, repair, bandwidth, join, leave, resources}]), an Alibaba node-list CSV, hetero:N, or hetero-devices:N (GPU servers of three models, FPGAs and NPUs); default: an SWF log's machine (MaxProcs one-CPU nodes), else 12 GPU + 8 CPU nodes")
	workloadArg := fs.String("workload", "", "workload: synthetic:SEED[,jobs=N,load=L], an SWF log (.swf, .swf.gz), an Alibaba pod-list CSV, or a job-spec list (.yaml/.json); a file may be followed by ,jobs=N (its first N jobs), ,from=D and ,to=D (the jobs submitted in [D, D'), e.g. from=30d)")
	scheduler := fs.String("scheduler", "auction", "scheduler: "+strings.Join(sim.Schedulers, ", "))
	seed := fs.Int64("seed", 1, "seed of every random choice of the run")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	users := fs.Bool("users", false, "submit every job as its trace's user (a network with an authority), so that the fair share charges and orders them (docs/scheduling.md)")
	weights := fs.String("weights", "", "auction: bid score weights urgency,match,efficiency (default 0.4,0.3,0.3)")
	d := fs.Int("d", 0, "auction: candidates invited per call for bids (default 3)")
	scorer := fs.String("scorer", "", "auction: bid scorer, one of "+strings.Join(market.DefaultScorers().Names(), ", ")+" (default weighted)")
	view := fs.Int("view", 0, "auction: peers each node sees (default: all up to 1,024 nodes, else 128)")
	inflate := fs.Float64("inflate", 0, "sample the workload's tasks with replacement, one a second and never departing, until their GPU requests reach this multiple of the cluster's GPUs (the fragmentation experiment; stops just after)")
	gpuModels := fs.Float64("gpu-models", 0, "pin this fraction of the GPU tasks to a GPU model of the cluster, drawn in proportion to its GPUs of each model that could hold the task (after --inflate)")
	horizon := fs.Duration("horizon", 0, "stop the simulation at this virtual time (0: when every job has ended)")
	loss := fs.Float64("loss", 0, "auction: probability in [0, 1) that a market message is lost (seeded)")
	failureRate := fs.Float64("failure-rate", -1, "failures per node per hour for every node class, overriding the cluster's failure_rate (-1: keep it)")
	repair := fs.Duration("repair", 0, "repair time of a failed node for every node class, overriding the cluster's repair (0: keep it; default 10m)")
	easyOverrun := fs.String("easy-overrun", sim.OverrunNow, "easy, easy-predicted, sjf-backfill: a run past its planned runtime counts at the head's shadow time as ending now, or never")
	easyPass := fs.String("easy-pass", sim.PassInstant, "easy, easy-predicted, sjf-backfill: schedule once per instant, after all its arrivals and ends, or after every arrival and every job's end (event)")
	progress := fs.Duration("progress", 0, "print how far the run has got to stderr about this often, in wall time, e.g. 30s (0: never); a whole SWF log takes minutes to half an hour")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return flagExit(err)
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "agora sim: "+format+"\n", a...)
		return exitBadUsage
	}
	if len(pos) > 0 {
		return fail("unexpected argument %q", pos[0])
	}
	if *workloadArg == "" {
		return fail("--workload is required (e.g. synthetic:1,jobs=1000)")
	}
	if !validScheduler(*scheduler) {
		return fail("--scheduler: unknown scheduler %q (have %s)", *scheduler, strings.Join(sim.Schedulers, ", "))
	}
	cfg := sim.Config{Scheduler: *scheduler, Seed: *seed, D: *d, ViewSize: *view, Horizon: *horizon, Scorer: *scorer, EASYOverrun: *easyOverrun, EASYPass: *easyPass, Users: *users}
	switch *easyOverrun {
	case sim.OverrunNow, sim.OverrunNever:
	default:
		return fail("--easy-overrun: unknown rule %q (have %s, %s)", *easyOverrun, sim.OverrunNow, sim.OverrunNever)
	}
	switch *easyPass {
	case sim.PassInstant, sim.PassEvent:
	default:
		return fail("--easy-pass: unknown pass %q (have %s, %s)", *easyPass, sim.PassInstant, sim.PassEvent)
	}
	if _, ok := market.DefaultScorers()[*scorer]; *scorer != "" && !ok {
		return fail("--scorer: unknown scorer %q (have %s)", *scorer, strings.Join(market.DefaultScorers().Names(), ", "))
	}
	if *d < 0 {
		return fail("--d: %d is negative", *d)
	}
	if *view < 0 {
		return fail("--view: %d is negative", *view)
	}
	if *horizon < 0 {
		return fail("--horizon: %v is negative", *horizon)
	}
	if math.IsNaN(*loss) || *loss < 0 || *loss >= 1 {
		return fail("--loss: %g is out of range [0, 1)", *loss)
	}
	cfg.Loss = *loss
	if *failureRate != -1 && (math.IsNaN(*failureRate) || *failureRate < 0 || *failureRate > 3600) {
		return fail("--failure-rate: %g is out of range 0..3600 per hour", *failureRate)
	}
	if *repair < 0 {
		return fail("--repair: %v is negative", *repair)
	}
	if *progress < 0 {
		return fail("--progress: %v is negative", *progress)
	}
	if *progress > 0 {
		cfg.ProgressEvery = *progress
		cfg.Progress = func(p sim.Progress) {
			rate := 0.0
			if p.Wall > 0 {
				rate = float64(p.JobsDone) / p.Wall.Seconds()
			}
			fmt.Fprintf(stderr, "agora sim: %s virtual, %d of %d jobs ended (%.1f jobs/s), %d tasks running, %s wall\n",
				p.Virtual.Round(time.Second), p.JobsDone, p.Jobs, rate, p.Running, p.Wall.Round(time.Second))
		}
	}
	if *gpuModels < 0 || *gpuModels > 1 {
		return fail("--gpu-models: %g is out of range [0, 1]", *gpuModels)
	}
	if *inflate < 0 || *inflate > 100 {
		return fail("--inflate: %g is out of range (0, 100]", *inflate)
	}
	if *weights != "" {
		w, err := parseWeights(*weights)
		if err != nil {
			return fail("--weights: %v", err)
		}
		cfg.Weights = &w
	}
	src, err := workload.ParseSpec(*workloadArg)
	if err != nil {
		return fail("--workload: %v", err)
	}
	cluster, err := simCluster(*clusterArg, src)
	if err != nil {
		if *clusterArg == "" { // the machine an SWF log declares
			return fail("--workload: %v", err)
		}
		return fail("--cluster: %v", err)
	}
	for i := range cluster.Nodes {
		if *failureRate >= 0 {
			cluster.Nodes[i].FailureRate = *failureRate
		}
		if *repair > 0 {
			cluster.Nodes[i].Repair = *repair
		}
	}
	cfg.Cluster = cluster
	w, err := src.Open(cluster.Total(), sim.LargestNode(cluster))
	if err != nil {
		return fail("--workload: %v", err)
	}
	if *inflate > 0 {
		gpus := float64(len(cluster.Total().GPUs))
		if w, err = sim.Inflate(w, gpus, *inflate, *seed, time.Second); err != nil {
			return fail("--inflate: %v", err)
		}
		if cfg.Horizon == 0 {
			cfg.Horizon = time.Duration(len(w.Jobs))*time.Second + time.Minute
		}
	}
	if *gpuModels > 0 {
		if w, _, err = workload.PinGPUModels(w, cluster, *gpuModels, *seed); err != nil {
			return fail("--gpu-models: %v", err)
		}
	}
	cfg.Workload = w
	in, err := sim.Simulate(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "agora sim: %v\n", err)
		return exitFailed
	}
	r := metrics.Compute(in)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			fmt.Fprintf(stderr, "agora sim: %v\n", err)
			return exitFailed
		}
		return exitOK
	}
	printReport(stdout, w.Name, r)
	return exitOK
}

func validScheduler(s string) bool {
	for _, x := range sim.Schedulers {
		if x == s {
			return true
		}
	}
	return false
}

// simCluster reads --cluster, or picks the default for the workload.
func simCluster(arg string, src workload.Source) (*workload.Cluster, error) {
	switch {
	case strings.HasPrefix(arg, "hetero-devices:"):
		n, err := strconv.Atoi(strings.TrimPrefix(arg, "hetero-devices:"))
		if err != nil || n < 10 || n > workload.MaxClusterNodes {
			return nil, fmt.Errorf("%q: want hetero-devices:N with N from 10 to %d", arg, workload.MaxClusterNodes)
		}
		return sim.HeteroDevicesCluster(n), nil
	case strings.HasPrefix(arg, "hetero:"):
		n, err := strconv.Atoi(strings.TrimPrefix(arg, "hetero:"))
		if err != nil || n < 10 || n > workload.MaxClusterNodes {
			return nil, fmt.Errorf("%q: want hetero:N with N from 10 to %d", arg, workload.MaxClusterNodes)
		}
		return sim.HeteroCluster(n), nil
	case strings.HasSuffix(strings.ToLower(arg), ".csv"), strings.HasSuffix(strings.ToLower(arg), ".csv.gz"):
		classes, err := workload.OpenAlibabaNodes(arg)
		if err != nil {
			return nil, err
		}
		return &workload.Cluster{Nodes: classes}, nil
	case arg != "":
		return workload.LoadCluster(arg)
	case src.Kind == workload.KindSWF:
		return sim.SWFCluster(src.Path)
	}
	return sim.DefaultCluster(), nil
}

func printReport(w io.Writer, name string, r metrics.Report) {
	fmt.Fprintf(w, "workload            %s\n", name)
	fmt.Fprintf(w, "scheduler           %s\n", r.Scheduler)
	fmt.Fprintf(w, "nodes, jobs, tasks  %d, %d, %d\n", r.Nodes, r.Jobs, r.Tasks)
	fmt.Fprintf(w, "makespan            %.0f s\n", r.Makespan)
	fmt.Fprintf(w, "mean wait           %.1f s (p99 %.1f s)\n", r.MeanWait, r.P99Wait)
	fmt.Fprintf(w, "mean response       %.1f s\n", r.MeanResponse)
	fmt.Fprintf(w, "bounded slowdown    %.3f (mean, 10 s threshold)\n", r.MeanBoundedSlowdown)
	fmt.Fprintf(w, "utilization         %.3f\n", r.Utilization)
	fmt.Fprintf(w, "gpu allocation      %.3f\n", r.GPUAllocationRatio)
	fmt.Fprintf(w, "jain fairness       %.3f\n", r.JainFairness)
	fmt.Fprintf(w, "messages, bytes     %d, %d\n", r.Messages, r.Bytes)
	fmt.Fprintf(w, "prediction mape     %.3f (user estimates %.3f)\n", r.PredictionMAPE, r.UserEstimateMAPE)
	if r.NodeFailures > 0 || r.TasksRestarted > 0 || r.DuplicateRuns > 0 {
		fmt.Fprintf(w, "node failures       %d (%d runs restarted, %.0f task-s lost, %d duplicate runs)\n",
			r.NodeFailures, r.TasksRestarted, r.LostTaskSeconds, r.DuplicateRuns)
	}
	if r.MessagesLost > 0 {
		fmt.Fprintf(w, "messages lost       %d\n", r.MessagesLost)
	}
	fmt.Fprintf(w, "wall                %.2f s\n", r.Wall)
}
