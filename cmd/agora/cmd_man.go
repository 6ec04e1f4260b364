package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/agora-sched/agora/node/buildinfo"
)

func init() {
	register("man", "print or write the manual pages (roff), made from the same table as --help", cmdMan)
}

// cmdMan writes agora(1) and one page per command, agora-jobs(1),
// agora-authority-init(1), from the help table (help.go) and the
// commands' own flag sets: the pages cannot drift from --help.
func cmdMan(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("man", stdout, stderr)
	out := fs.String("out", "", "write every page into this directory (agora.1, agora-COMMAND.1, ...) instead of printing one")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return flagExit(err)
	}
	sets := commandFlagSets()
	if *out == "" {
		name := strings.Join(pos, " ")
		if name == "" {
			writeMainPage(stdout)
			return exitOK
		}
		if _, ok := helps[name]; !ok || subcommands[name] != nil {
			fmt.Fprintf(stderr, "agora man: no page for %q (run 'agora man' for the list)\n", name)
			return exitBadUsage
		}
		writePage(stdout, name, sets[name])
		return exitOK
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "agora man: --out writes every page; give no command\n")
		return exitBadUsage
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintf(stderr, "agora man: %v\n", err)
		return exitFailed
	}
	write := func(file string, page func(io.Writer)) error {
		var b strings.Builder
		page(&b)
		return os.WriteFile(filepath.Join(*out, file), []byte(b.String()), 0o644)
	}
	if err := write("agora.1", writeMainPage); err != nil {
		fmt.Fprintf(stderr, "agora man: %v\n", err)
		return exitFailed
	}
	for _, name := range manPages() {
		if err := write(manName(name)+".1", func(w io.Writer) { writePage(w, name, sets[name]) }); err != nil {
			fmt.Fprintf(stderr, "agora man: %v\n", err)
			return exitFailed
		}
	}
	return exitOK
}

// manPages are the commands and subcommands with a page of their own:
// every help entry but the umbrellas of subcommands (authority, user).
func manPages() []string {
	var out []string
	for _, n := range helpNames() {
		if subcommands[n] == nil {
			out = append(out, n)
		}
	}
	return out
}

// manName is a command's page name: agora-authority-init.
func manName(command string) string {
	return "agora-" + strings.ReplaceAll(command, " ", "-")
}

// roff escapes text for a roff line: backslashes, and a leading dot or
// quote that would read as a request.
func roff(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	s = strings.ReplaceAll(s, "-", `\-`)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}

func manHeader(w io.Writer, title, summary string) {
	in := buildinfo.Get()
	fmt.Fprintf(w, ".TH %s 1 \"\" \"agora %s\" \"Agora manual\"\n", strings.ToUpper(title), roff(in.Version))
	fmt.Fprintf(w, ".SH NAME\n%s \\- %s\n", roff(title), roff(summary))
}

func writeMainPage(w io.Writer) {
	manHeader(w, "agora", "a peer-to-peer, masterless job scheduler")
	fmt.Fprintf(w, ".SH SYNOPSIS\n.B agora\n.I COMMAND\n[flags]\n")
	fmt.Fprintf(w, ".SH DESCRIPTION\nEvery machine runs one binary: \\fBagora node\\fR runs a node; the other commands are clients of one node's API (\\-\\-api HOST:PORT, else $AGORA_API, else 127.0.0.1:7700).\n")
	fmt.Fprintf(w, ".SH COMMANDS\n")
	for _, n := range manPages() {
		fmt.Fprintf(w, ".TP\n.B agora %s\n%s\n", roff(n), roff(summaryOf(n)))
	}
	fmt.Fprintf(w, ".SH SEE ALSO\n")
	var refs []string
	for _, n := range manPages() {
		refs = append(refs, fmt.Sprintf(".BR %s (1)", manName(n)))
	}
	fmt.Fprintln(w, strings.Join(refs, ",\n"))
}

func writePage(w io.Writer, name string, fs *flag.FlagSet) {
	h := helps[name]
	manHeader(w, manName(name), summaryOf(name))
	fmt.Fprintf(w, ".SH SYNOPSIS\n.B agora\n%s\n", roff(h.usage))
	desc := summaryOf(name)
	if h.about != "" {
		desc += ": " + h.about
	}
	if !strings.HasSuffix(desc, ".") {
		desc += "."
	}
	fmt.Fprintf(w, ".SH DESCRIPTION\n%s\n", roff(desc))
	if fs != nil && hasFlags(fs) {
		fmt.Fprintf(w, ".SH OPTIONS\n")
		var flags []*flag.Flag
		fs.VisitAll(func(f *flag.Flag) { flags = append(flags, f) })
		sort.Slice(flags, func(i, j int) bool { return flags[i].Name < flags[j].Name })
		for _, f := range flags {
			kind, use := flag.UnquoteUsage(f)
			head := `\fB\-\-` + roff(f.Name) + `\fR`
			if kind != "" {
				head += ` \fI` + strings.ToUpper(kind) + `\fR`
			}
			if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" && f.DefValue != "[]" {
				use += fmt.Sprintf(" (default %q)", f.DefValue)
			}
			fmt.Fprintf(w, ".TP\n%s\n%s\n", head, roff(use))
		}
	}
	fmt.Fprintf(w, ".SH EXAMPLES\n.nf\n")
	for _, e := range h.examples {
		fmt.Fprintln(w, roff(e))
	}
	fmt.Fprintf(w, ".fi\n.SH SEE ALSO\n.BR agora (1)\n")
}
