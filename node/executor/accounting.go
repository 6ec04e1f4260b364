package executor

import (
	"time"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/market/acct"
	"github.com/agora-sched/agora/market/wire"
	"github.com/agora-sched/agora/runtime"
)

// usageRecord is what this node attests of an attempt that ended with
// result r: when it ran, what it was given and used, how it ended.
func usageRecord(ts market.TaskSpec, alloc resource.Allocation, r runtime.Result) acct.Record {
	rec := acct.Record{Kind: acct.KindUsage, Job: ts.Key.Job, Task: ts.Key.Task, Replica: ts.Key.Replica,
		Epoch: ts.Epoch, Attempt: ts.Attempt, Owner: ts.Owner, Type: ts.Type, Image: ts.Image != "",
		CPUMilli: ts.Request.CPU, Memory: ts.Request.Memory, GPUs: len(alloc.GPUs),
		Started: r.Started, Finished: r.Finished, ExitCode: r.ExitCode, Reason: wire.ClipText(r.Reason, acct.MaxReason)}
	if rec.Finished.IsZero() {
		rec.Finished = time.Now()
	}
	if !rec.Started.IsZero() && rec.Started.After(rec.Finished) {
		rec.Started = rec.Finished
	}
	switch {
	case r.ExitCode == 0 && !r.Cancelled && !r.TimedOut:
		rec.State = string(market.TaskSucceeded)
	case r.Cancelled:
		rec.State = string(market.TaskCancelled)
	default:
		rec.State = string(market.TaskFailed)
	}
	if !rec.Started.IsZero() {
		if r.Usage.Source != runtime.UsageNone {
			rec.CPUSeconds, rec.MemPeak, rec.Source = r.Usage.CPU.Seconds(), r.Usage.MemPeak, r.Usage.Source
		}
		rec.GPUSeconds = float64(rec.GPUs) * rec.Finished.Sub(rec.Started).Seconds()
	}
	return rec
}
