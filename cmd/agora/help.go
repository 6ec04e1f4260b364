package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
)

// One help format for every command: a usage line, what the command does,
// its flags, and examples (helpFor). The text lives here, in one table, so
// that every command reads alike and shell completion (cmd_completion.go)
// is generated from the same table.

// helpText is a command's help, beyond its summary and flags.
type helpText struct {
	usage    string   // after "usage: agora "
	about    string   // a sentence or two beyond the summary; may be empty
	examples []string // command lines, at least one
}

// helps holds every command's help, by flag-set name ("jobs", "authority
// init"); a test checks that every command has one with an example.
var helps = map[string]helpText{
	"acct": {usage: "acct [--job J] [--user U] [--site S] [--node N] [--state S] [--since T] [--until T] [--format F | --json | --csv] [flags]",
		about:    "one row per task attempt, joined from the record its executor signed (CPU-seconds and memory peak from its cgroup or rusage) and the one its manager signed (submission, eligible and start times); kept --accounting-retention (90 days) whatever the job retention. Owners see their own, admins all.",
		examples: []string{"agora acct", "agora acct --user alice --since 24h", "agora acct --job j-1a2b3c --format all --csv", "agora acct --json"}},
	"admit": {usage: "admit --authority DIR [flags] PEER_ID | admit --authority DIR --renew CERT [flags]",
		about:    "with --renew it certifies the same node (peer ID, site, roles) anew, before the old certificate expires (30 days by default; the node logs a warning 7 days before and exports agora_certificate_expiry_timestamp_seconds); restart the node to use it.",
		examples: []string{"agora admit --authority ./auth --site lab 12D3KooW... > node.crt", "agora admit --authority ./auth --renew node.crt --out node.crt"}},
	"authority": {usage: "authority init DIR | authority delegate --authority DIR --site S --out DIR2 NAME",
		about:    "init creates an offline cluster authority; delegate signs a site delegate that may admit nodes and users at its site.",
		examples: []string{"agora authority init ./auth", "agora authority delegate --authority ./auth --site edge-1 --out ./edge1 edge-admin"}},
	"authority init": {usage: "authority init [flags] DIR",
		examples: []string{"agora authority init ./auth"}},
	"authority delegate": {usage: "authority delegate --authority DIR --site S --out DIR2 [flags] NAME",
		examples: []string{"agora authority delegate --authority ./auth --site edge-1 --out ./edge1 edge-admin"}},
	"cancel": {usage: "cancel [flags] JOB",
		examples: []string{"agora cancel j-1a2b3c"}},
	"completion": {usage: "completion bash|zsh",
		about:    "prints a shell completion script for the commands and their flags.",
		examples: []string{"agora completion bash > /etc/bash_completion.d/agora", "agora completion zsh > \"${fpath[1]}/_agora\"", "source <(agora completion bash)"}},
	"dashboard": {usage: "dashboard [flags]",
		about:    "open the address it prints, within a minute, in a browser on the node's machine (or through an SSH tunnel to its API port): it carries a one-time sign-in code, bought with the node's API token (or with --credential, in a network with an authority), that opens a read-only session for 12 hours.",
		examples: []string{"agora dashboard", "xdg-open \"$(agora dashboard)\"", "agora dashboard --credential alice.cred"}},
	"devices": {usage: "devices [flags]",
		examples: []string{"agora devices", "agora devices --json"}},
	"drain": {usage: "drain [--json] [flags]",
		about:    "queued tasks go back to their managers at once, running ones after SIGTERM and their grace (a checkpointing task snapshots first), each placed elsewhere without counting a failure. The node keeps serving, and stays drained across restarts; `agora id` and peers' `agora peers` show it.",
		examples: []string{"agora drain", "agora drain --api 127.0.0.1:7700 --json"}},
	"undrain": {usage: "undrain [--json] [flags]",
		about:    "the node bids for tasks and steals again; what the drain handed back stays where it was placed.",
		examples: []string{"agora undrain", "agora undrain --json"}},
	"get": {usage: "get [flags] JOB",
		examples: []string{"agora get --out ./results j-1a2b3c", "agora get --task train --out ./model j-1a2b3c"}},
	"id": {usage: "id [flags]",
		about:    "with --json it also names the node's build (version, commit, build time, Go version).",
		examples: []string{"agora id", "agora id --json"}},
	"version": {usage: "version [--json]",
		about:    "the commit is the one the binary was built from (+modified: with uncommitted changes); the same is in `agora id --json` and /metrics (agora_build_info).",
		examples: []string{"agora version", "agora version --json"}},
	"jobs": {usage: "jobs [--all [--state S] [--user U] [--node N] [--format F]] [flags]",
		about:    "with --all the node asks every live peer and prints one row per job: owner, state, tasks done/total, where it runs, submitted and started as relative times.",
		examples: []string{"agora jobs", "agora jobs --all", "agora jobs --all --state pending,running --user alice", "agora jobs --all --format '%i %u %t %N'", "agora jobs --all --json"}},
	"logs": {usage: "logs [flags] JOB",
		examples: []string{"agora logs j-1a2b3c", "agora logs --follow --task train j-1a2b3c"}},
	"man": {usage: "man [COMMAND] | man --out DIR",
		about:    "without --out it prints one page (agora(1) without a command); with --out it writes them all, for /usr/share/man/man1 (make release puts them in dist/man).",
		examples: []string{"agora man jobs | man -l -", "agora man --out /usr/local/share/man/man1"}},
	"node": {usage: "node [flags]",
		about:    "runs a node in the foreground until interrupted; unless told otherwise it listens on 127.0.0.1 only.",
		examples: []string{"agora node --data ./data", "agora node --listen /ip4/0.0.0.0/tcp/4001 --bootstrap /ip4/10.0.0.1/tcp/4001/p2p/12D3KooW..."}},
	"peers": {usage: "peers [flags]",
		examples: []string{"agora peers", "agora peers --json"}},
	"report": {usage: "report [--since T] [--until T] [filters as acct] [--json] [flags]",
		about:    "per user and per site over the period: jobs, attempts, measured and allocated CPU-hours, GPU-hours, mean wait and turnaround; the network's throughput and CPU utilization, and Jain's fairness index over the users' usage per share.",
		examples: []string{"agora report", "agora report --since 7d --json", "agora report --since 2026-12-01 --until 2026-12-02"}},
	"revoke": {usage: "revoke --authority DIR [flags] (PEER_ID | user:NAME | delegate:NAME) | revoke --api HOST:PORT FILE",
		about:    "with --authority signs a revocation; with --api publishes a signed one through a node.",
		examples: []string{"agora revoke --authority ./auth --out rev.json user:mallory", "agora revoke --api 127.0.0.1:7700 rev.json"}},
	"run": {usage: "run [flags] -- CMD ARGS...",
		about:    "submits CMD as a one-task job; with --wait it prints the task's output (stdout to stdout, stderr to stderr) and exits with its exit code.",
		examples: []string{"agora run -- echo hello", "agora run --wait --cpu 2 --mem 4GiB -- python train.py", "agora run --gpu 1 --gpu-model A100 -- ./bench"}},
	"sim": {usage: "sim [flags]",
		examples: []string{"agora sim --workload synthetic:1,jobs=2000 --cluster hetero:100 --scheduler auction", "agora sim --workload traces/KTH-SP2.swf --scheduler easy --json"}},
	"status": {usage: "status [flags] JOB",
		examples: []string{"agora status j-1a2b3c", "agora status --json j-1a2b3c"}},
	"submit": {usage: "submit [flags] SPEC",
		about:    "SPEC is a job spec file in YAML or JSON (docs/jobspec.md).",
		examples: []string{"agora submit job.yaml", "agora submit --wait --json job.yaml"}},
	"user": {usage: "user add --authority DIR [flags] NAME | user renew --authority DIR [flags] CREDENTIAL",
		about:    "add creates a user credential (a key and its certificate); renew certifies the same key, name, role and quota anew before the old one expires (30 days by default; nodes log a warning 7 days before, agora warns the user).",
		examples: []string{"agora user add --authority ./auth --max-gpu 2 alice > alice.cred", "agora user renew --authority ./auth --out alice.cred alice.cred"}},
	"user renew": {usage: "user renew --authority DIR [--valid D] [--out FILE] CREDENTIAL",
		examples: []string{"agora user renew --authority ./auth --out alice.cred alice.cred"}},
	"user add": {usage: "user add --authority DIR [flags] NAME",
		examples: []string{"agora user add --authority ./auth --max-gpu 2 alice > alice.cred"}},
}

// summaryOf is the one-line summary of a command or subcommand.
func summaryOf(name string) string {
	top, _, _ := strings.Cut(name, " ")
	return commands[top].summary
}

// printHelp writes name's help in the one format every command shares;
// fs, when not nil, gives its flags.
func printHelp(w io.Writer, name string, fs *flag.FlagSet) {
	h := helps[name]
	fmt.Fprintf(w, "usage: agora %s\n\n%s", h.usage, summaryOf(name))
	if h.about != "" {
		fmt.Fprintf(w, ": %s", h.about)
	}
	fmt.Fprintln(w)
	if fs != nil && hasFlags(fs) {
		fmt.Fprintln(w, "\nflags:")
		fs.VisitAll(func(f *flag.Flag) {
			kind, use := flag.UnquoteUsage(f)
			head := "--" + f.Name
			if kind != "" {
				head += " " + strings.ToUpper(kind)
			}
			if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" && f.DefValue != "[]" {
				use += fmt.Sprintf(" (default %q)", f.DefValue)
			}
			fmt.Fprintf(w, "  %s\n      %s\n", head, use)
		})
	}
	fmt.Fprintln(w, "\nexamples:")
	for _, e := range h.examples {
		fmt.Fprintf(w, "  %s\n", e)
	}
}

// flagOut is where each live flag set's messages go: the flag package's
// own output is discarded, so that every error reads alike (parseFlags).
var flagOut sync.Map // *flag.FlagSet -> flagWriters

// flagWriters are a command's two outputs: help asked for is its output
// (stdout, so `agora X --help | less` works); a bad flag is an error.
type flagWriters struct{ help, errs io.Writer }

// newFlagSet makes a command's flag set: errors are returned, not fatal,
// and --help prints the command's help (printHelp) to stdout.
func newFlagSet(name string, stdout, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("agora "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	flagOut.Store(fs, flagWriters{help: stdout, errs: stderr})
	if flagSink != nil {
		flagSink(name, fs)
	}
	return fs
}

// flagSink, when set, is told of every flag set made (completion).
var flagSink func(name string, fs *flag.FlagSet)

// parseFlags parses flags anywhere among the arguments (before the first
// "--", after which everything is positional) and returns the positional
// arguments. For -h/--help it prints the command's help and returns
// flag.ErrHelp; for a bad flag, an error naming it and the help command.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	out, _ := flagOut.LoadAndDelete(fs)
	ws, _ := out.(flagWriters)
	if ws.help == nil {
		ws.help = io.Discard
	}
	if ws.errs == nil {
		ws.errs = io.Discard
	}
	var tail []string
	for i, a := range args {
		if a == "--" {
			tail = append(tail, args[i+1:]...)
			args = args[:i]
			break
		}
	}
	name := strings.TrimPrefix(fs.Name(), "agora ")
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				printHelp(ws.help, name, fs)
				return nil, err
			}
			fmt.Fprintf(ws.errs, "agora %s: %s (run 'agora %s --help')\n", name, flagProblem(err), name)
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
	return append(pos, tail...), nil
}

// flagProblem rewords the flag package's errors in the CLI's terms:
// flags are written --name.
func flagProblem(err error) string {
	msg := err.Error()
	if f, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		return "unknown flag --" + strings.TrimLeft(f, "-")
	}
	if f, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return "flag --" + strings.TrimLeft(f, "-") + " needs a value"
	}
	if rest, ok := strings.CutPrefix(msg, "invalid value "); ok {
		if v, f, ok := strings.Cut(rest, " for flag -"); ok {
			return "invalid value " + v + " for flag --" + f
		}
	}
	if rest, ok := strings.CutPrefix(msg, "invalid boolean value "); ok {
		if v, f, ok := strings.Cut(rest, " for -"); ok {
			return "invalid boolean value " + v + " for flag --" + f
		}
	}
	return msg
}

// helpNames lists the help table's names, sorted.
func helpNames() []string {
	names := make([]string, 0, len(helps))
	for n := range helps {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// isHelp reports whether arg asks for help.
func isHelp(arg string) bool { return arg == "-h" || arg == "--help" || arg == "-help" }

// hasFlags reports whether fs defines any flag.
func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// badSubcommandFlag reports a flag given where a subcommand is expected
// (agora authority --x), in the words parseFlags uses.
func badSubcommandFlag(name, arg string, stderr io.Writer) bool {
	if !strings.HasPrefix(arg, "-") || isHelp(arg) {
		return false
	}
	fmt.Fprintf(stderr, "agora %s: unknown flag --%s (run 'agora %s --help')\n", name, strings.TrimLeft(arg, "-"), name)
	return true
}
