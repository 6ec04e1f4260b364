package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/agora-sched/agora/market/spec"
	taskrt "github.com/agora-sched/agora/runtime"
)

// Exit codes shared by every subcommand.
const (
	exitOK       = 0
	exitFailed   = 1 // the operation ran and failed (a failed job, an unreachable node)
	exitBadUsage = 2 // bad input: flags, files, specs
)

type command struct {
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
}

var commands = map[string]command{}

func register(name, summary string, run func(args []string, stdout, stderr io.Writer) int) {
	commands[name] = command{summary: summary, run: run}
}

func main() {
	taskrt.TaskInit() // a task's init process in its namespaces (--task-namespaces)
	os.Exit(runMain(os.Args[1:], os.Stdout, os.Stderr))
}

func runMain(args []string, stdout, stderr io.Writer) int {
	credential = nil // a command that signs loads it (loadCredential)
	if len(args) == 0 {
		usage(stderr)
		return exitBadUsage
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stdout) // asked for: it is the output
		return exitOK
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "agora: unknown command %q%s (run 'agora help')\n", args[0], spec.Suggest(args[0], commandNames()))
		return exitBadUsage
	}
	return c.run(args[1:], stdout, stderr)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "agora: a peer-to-peer, masterless job scheduler")
	fmt.Fprintln(w, "\nusage: agora COMMAND [flags]\n\ncommands:")
	for _, n := range commandNames() {
		fmt.Fprintf(w, "  %-8s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'agora COMMAND --help' for a command's flags and examples.")
}

// commandNames are the commands, sorted.
func commandNames() []string {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// flagExit maps a flag parsing error to an exit code.
func flagExit(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	return exitBadUsage
}

// multiFlag is a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(s string) error { *m = append(*m, s); return nil }
