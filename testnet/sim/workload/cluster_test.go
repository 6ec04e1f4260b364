package workload

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agora-sched/agora/devices/resource"
)

func TestReadCluster(t *testing.T) {
	const file = `
nodes:
  - count: 3
    site: eu
    latency: 20ms
    failure_rate: 0.01
    repair: 5m
    bandwidth: 1Gbit/s
    join: 1h
    leave: 30h
    resources: &gpu
      cpu: 32
      memory: 256GiB
      disk: 1TiB
      gpus:
        - {model: A100, memory: 40GiB}
        - {model: A100, memory: 40GiB}
      devices: [{kind: fpga, model: u250, count: 2}]
  - site: us
    latency: 0
    resources: *gpu
  - count: 10
    bandwidth: 1000000
    join: 0
    resources: {cpu: "500m", memory: 1073741824}
`
	c, err := ReadCluster(strings.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Nodes) != 3 || c.Size() != 14 {
		t.Fatalf("%d classes, %d nodes, want 3, 14", len(c.Nodes), c.Size())
	}
	eu, us, small := c.Nodes[0], c.Nodes[1], c.Nodes[2]
	if eu.Count != 3 || eu.Site != "eu" || eu.Latency != 20*time.Millisecond || eu.FailureRate != 0.01 {
		t.Errorf("eu class %+v", eu)
	}
	r := eu.Resources
	if r.CPU != 32000 || r.Memory != 256<<30 || r.Disk != 1<<40 || len(r.GPUs) != 2 || r.GPUs[1].Index != 1 ||
		r.GPUs[1].Free != resource.WholeGPU || r.GPUs[0].Memory != 40<<30 || r.DeviceCount("fpga", "u250") != 2 {
		t.Errorf("eu resources %+v", r)
	}
	if eu.Repair != 5*time.Minute || eu.Bandwidth != 125_000_000 || eu.Join != time.Hour || eu.Leave != 30*time.Hour {
		t.Errorf("eu class churn and network %+v", eu)
	}
	if us.Repair != 0 || us.Bandwidth != 0 || us.Join != 0 || us.Leave != 0 || small.Bandwidth != 1_000_000 {
		t.Errorf("defaults: us %+v, small bandwidth %d", us, small.Bandwidth)
	}
	if us.Count != 1 || us.Site != "us" || us.Latency != 0 || len(us.Resources.GPUs) != 2 {
		t.Errorf("us class (resources by alias) %+v", us)
	}
	if small.Resources.CPU != 500 || small.Resources.Memory != 1<<30 || small.Resources.GPUs != nil {
		t.Errorf("small class %+v", small)
	}
	total := c.Total()
	if total.CPU != 4*32000+10*500 || len(total.GPUs) != 8 || total.GPUs[7].Index != 7 || total.DeviceCount("fpga", "") != 8 {
		t.Errorf("total %s, %d GPUs, devices %+v", total, len(total.GPUs), total.Devices)
	}
}

func TestReadClusterErrors(t *testing.T) {
	const res = "resources: {cpu: 4, memory: 8GiB}"
	cases := []struct{ name, input, field, msg string }{
		{"empty", "", "nodes", "required"},
		{"unknown top key", "nodes: [{" + res + "}]\nnode: []", "node", "unknown key (want nodes)"},
		{"nodes not a list", "nodes: {}", "nodes", "want a non-empty list"},
		{"empty nodes", "nodes: []", "nodes", "want a non-empty list"},
		{"unknown node key", "nodes:\n  - " + res + "\n  - lattency: 1ms\n    " + res, "nodes[1].lattency", "unknown key"},
		{"repeated key", "nodes:\n  - count: 1\n    count: 2\n    " + res, "nodes[0].count", "duplicate key (first at line 2)"},
		{"no resources", "nodes: [{count: 2}]", "nodes[0].resources", "required"},
		{"zero count", "nodes: [{count: 0, " + res + "}]", "nodes[0].count", "out of range"},
		{"count not a number", "nodes: [{count: many, " + res + "}]", "nodes[0].count", "want a whole number"},
		{"bad latency", "nodes: [{latency: fast, " + res + "}]", "nodes[0].latency", "invalid duration"},
		{"latency without unit", "nodes: [{latency: 20, " + res + "}]", "nodes[0].latency", "with a unit"},
		{"negative failure rate", "nodes: [{failure_rate: -1, " + res + "}]", "nodes[0].failure_rate", "out of range"},
		{"failure rate text", "nodes: [{failure_rate: often, " + res + "}]", "nodes[0].failure_rate", "want failures per hour"},
		{"repair zero", "nodes: [{repair: 0s, " + res + "}]", "nodes[0].repair", "out of range"},
		{"repair without unit", "nodes: [{repair: 10, " + res + "}]", "nodes[0].repair", "with a unit"},
		{"bad bandwidth unit", "nodes: [{bandwidth: 1Gbps, " + res + "}]", "nodes[0].bandwidth", "want bytes per second"},
		{"zero bandwidth", "nodes: [{bandwidth: 0, " + res + "}]", "nodes[0].bandwidth", "out of range"},
		{"negative join", "nodes: [{join: -1h, " + res + "}]", "nodes[0].join", "out of range"},
		{"leave at once", "nodes: [{leave: 0, " + res + "}]", "nodes[0].leave", "has no nodes"},
		{"leave before join", "nodes: [{join: 2h, leave: 1h, " + res + "}]", "nodes[0].leave", "not after join"},
		{"resources not a mapping", "nodes: [{resources: 4}]", "nodes[0].resources", "want a mapping"},
		{"no cpu", "nodes: [{resources: {memory: 8GiB}}]", "nodes[0].resources.cpu", "required"},
		{"unknown resources key", "nodes: [{resources: {cpu: 4, gpu: []}}]", "nodes[0].resources.gpu", "unknown key"},
		{"bad GPU memory", "nodes: [{resources: {cpu: 4, gpus: [{model: A100, memory: lots}]}}]",
			"nodes[0].resources.gpus[0].memory", `invalid size "lots"`},
		{"GPU without model", "nodes:\n - count: 1\n   resources: {cpu: 4}\n - resources: {cpu: 4, gpus: [{memory: 16GiB}]}",
			"nodes[1].resources.gpus[0].model", "missing"},
		{"not YAML", "nodes: [", "", "invalid YAML"},
		{"two documents", "nodes: [{" + res + "}]\n---\nnodes: []", "", "more than one YAML document"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadCluster(strings.NewReader(c.input))
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v, want a *ParseError", err)
			}
			t.Log(err)
			if pe.Field != c.field || !strings.Contains(pe.Err.Error(), c.msg) {
				t.Errorf("error %q (field %q), want field %q and %q", err, pe.Field, c.field, c.msg)
			}
		})
	}
}
