package gossip

// LargeChangeFraction is the share of capacity by which free CPU or memory
// must move for the node to publish an advert at once instead of waiting
// for the next interval.
const LargeChangeFraction = 0.10

// LargeChange reports whether cur differs from the last published advert
// prev enough to publish at once: free CPU or memory moved by at least
// LargeChangeFraction of capacity, the free GPU share or device counts
// changed, the queue length changed, the gang reservation honoured first
// changed, or the capacity itself changed.
func LargeChange(prev, cur Advert) bool {
	if prev.ReservedGang != cur.ReservedGang {
		return true
	}
	pc, cc := prev.Capacity, cur.Capacity
	if pc.CPU != cc.CPU || pc.Memory != cc.Memory || len(pc.GPUs) != len(cc.GPUs) || len(pc.Devices) != len(cc.Devices) {
		return true
	}
	if moved(prev.Free.CPU, cur.Free.CPU, cc.CPU) || moved(prev.Free.Memory, cur.Free.Memory, cc.Memory) {
		return true
	}
	if prev.Free.GPUShare() != cur.Free.GPUShare() || prev.Queue != cur.Queue {
		return true
	}
	for i := range prev.Free.Devices {
		if i >= len(cur.Free.Devices) || prev.Free.Devices[i].Count != cur.Free.Devices[i].Count {
			return true
		}
	}
	return len(prev.Free.Devices) != len(cur.Free.Devices)
}

func moved(a, b, capacity int64) bool {
	d := a - b
	if d < 0 {
		d = -d
	}
	if capacity <= 0 {
		return d != 0
	}
	return float64(d) >= LargeChangeFraction*float64(capacity)
}
