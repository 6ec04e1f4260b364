package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/node/api"
)

func init() {
	register("id", "print the node's peer ID and addresses", cmdID)
	register("peers", "list the live peers and their resources", cmdPeers)
	register("devices", "print the node's resource vector", cmdDevices)
}

// readCmd is the shape shared by simple read commands: flags --api and
// --json, no positional arguments, one GET.
func readCmd(name string, args []string, stdout, stderr io.Writer, path string, out any, human func(io.Writer)) int {
	fs := newFlagSet(name, stdout, stderr)
	api := apiFlag(fs)
	cred := credentialFlag(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "agora %s: unexpected argument %q\n", name, pos[0])
		return exitBadUsage
	}
	if code := loadCredential(*cred, name, stderr); code != exitOK {
		return code
	}
	var raw json.RawMessage
	if err := newClient(*api).do("GET", path, nil, &raw); err != nil {
		fmt.Fprintf(stderr, "agora %s: %v\n", name, err)
		return exitFailed
	}
	if *asJSON {
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			fmt.Fprintf(stderr, "agora %s: bad answer from node: %v\n", name, err)
			return exitFailed
		}
		printJSON(stdout, v)
		return exitOK
	}
	if err := json.Unmarshal(raw, out); err != nil {
		fmt.Fprintf(stderr, "agora %s: bad answer from node: %v\n", name, err)
		return exitFailed
	}
	human(stdout)
	return exitOK
}

func cmdID(args []string, stdout, stderr io.Writer) int {
	var r api.IDResponse
	return readCmd("id", args, stdout, stderr, "/v1/id", &r, func(w io.Writer) {
		fmt.Fprintln(w, r.PeerID)
		for _, a := range r.Addrs {
			fmt.Fprintln(w, "  "+a)
		}
		if r.Drained {
			fmt.Fprintln(w, "drained: takes no work until agora undrain")
		}
	})
}

func gpuSummary(v resource.Vector) string {
	if len(v.GPUs) == 0 {
		return "-"
	}
	models := map[string]int{}
	for _, g := range v.GPUs {
		models[fmt.Sprintf("%s/%s", g.Model, resource.FormatSize(g.Memory))]++
	}
	var parts []string
	for m, c := range models {
		parts = append(parts, fmt.Sprintf("%d×%s", c, m))
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

func cmdPeers(args []string, stdout, stderr io.Writer) int {
	var peers []api.PeerResponse
	return readCmd("peers", args, stdout, stderr, "/v1/peers", &peers, func(w io.Writer) {
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "PEER\tSITE\tSTATE\tCPU FREE/CAP\tMEMORY FREE/CAP\tGPUS\tDEVICES\tCONTAINERS\tQUEUE\tLIMITS\tLAST SEEN")
		now := time.Now()
		for _, p := range peers {
			limits := strings.ReplaceAll(p.Enforces, " ", "")
			if p.RunsUnenforced {
				limits += "(+unenforced)"
			}
			state := "open"
			if p.Drained {
				state = "drained"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%g/%g\t%s/%s\t%s\t%s\t%s\t%d\t%s\t%s\n", p.PeerID, dash(p.Site), state,
				resource.CoresFromMilli(p.Free.CPU), resource.CoresFromMilli(p.Capacity.CPU),
				resource.FormatSize(p.Free.Memory), resource.FormatSize(p.Capacity.Memory),
				gpuSummary(p.Capacity), deviceSummary(p.Capacity, p.Free), containerSummary(p.Labels),
				p.Queue, limits, ago(p.LastSeen, now))
		}
		_ = tw.Flush()
	})
}

func cmdDevices(args []string, stdout, stderr io.Writer) int {
	var v resource.Vector
	return readCmd("devices", args, stdout, stderr, "/v1/devices", &v, func(w io.Writer) {
		fmt.Fprintf(w, "cpu:     %g cores\nmemory:  %s\ndisk:    %s\n", resource.CoresFromMilli(v.CPU), resource.FormatSize(v.Memory), resource.FormatSize(v.Disk))
		for _, g := range v.GPUs {
			fmt.Fprintf(w, "gpu %d:   %s %s %s\n", g.Index, g.Model, resource.FormatSize(g.Memory), g.UUID)
		}
		for _, d := range v.Devices {
			fmt.Fprintf(w, "device:  %d× %s %s\n", d.Count, d.Kind, d.Model)
		}
	})
}

// containerSummary is a peer's engine, and whether its GPUs pass into
// containers when its start-up check said they do not.
func containerSummary(labels map[string]string) string {
	e := labels[resource.ContainerLabel+".engine"]
	if e != "" && labels[resource.ContainerGPULabel] == "no" {
		e += "(no-gpus)"
	}
	return dash(e)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// deviceSummary lists declared devices as "2/4×fpga u250" (free of
// total), or "-".
func deviceSummary(capacity, free resource.Vector) string {
	var parts []string
	for _, d := range capacity.Devices {
		left := 0
		for _, f := range free.Devices {
			if f.Kind == d.Kind && f.Model == d.Model {
				left = f.Count
			}
		}
		parts = append(parts, strings.TrimSpace(fmt.Sprintf("%d/%d×%s %s", left, d.Count, d.Kind, d.Model)))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ",")
}
