package main

import (
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
)

func init() {
	register("completion", "print a shell completion script (bash, zsh)", cmdCompletion)
}

// subcommands are the commands whose first argument picks a subcommand
// with flags of its own.
var subcommands = map[string][]string{
	"authority": {"init", "delegate"},
	"user":      {"add", "renew"},
}

// completionFlags returns every command's and subcommand's flags, by
// name ("jobs", "authority init"), from the flag sets the commands make
// when asked for their help: the completion cannot drift from them.
func completionFlags() map[string][]string {
	out := map[string][]string{"completion": nil}
	for name, fs := range commandFlagSets() {
		if name == "completion" {
			continue
		}
		var names []string
		fs.VisitAll(func(f *flag.Flag) { names = append(names, "--"+f.Name) })
		out[name] = names
	}
	return out
}

// commandFlagSets returns every command's and subcommand's flag set, by
// name, as the commands make them when asked for their help (completion,
// man pages).
func commandFlagSets() map[string]*flag.FlagSet {
	sets := map[string]*flag.FlagSet{}
	flagSink = func(name string, fs *flag.FlagSet) { sets[name] = fs }
	defer func() { flagSink = nil }()
	for name, c := range commands {
		if name == "completion" {
			continue
		}
		if subs, ok := subcommands[name]; ok {
			for _, s := range subs {
				c.run([]string{s, "--help"}, io.Discard, io.Discard)
			}
			continue
		}
		c.run([]string{"--help"}, io.Discard, io.Discard)
	}
	return sets
}

func cmdCompletion(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("completion", stdout, stderr)
	args, err := parseFlags(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(args) != 1 || (args[0] != "bash" && args[0] != "zsh") {
		fmt.Fprintln(stderr, "agora completion: want one shell, bash or zsh (run 'agora completion --help')")
		return exitBadUsage
	}
	flags := completionFlags()
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	if args[0] == "bash" {
		writeBash(stdout, names, flags)
	} else {
		writeZsh(stdout, names, flags)
	}
	return exitOK
}

// writeBash writes a bash completion function for agora.
func writeBash(w io.Writer, names []string, flags map[string][]string) {
	fmt.Fprintf(w, "# bash completion for agora (agora completion bash)\n_agora() {\n")
	fmt.Fprintf(w, "  local cur=\"${COMP_WORDS[COMP_CWORD]}\" words=\"\"\n")
	fmt.Fprintf(w, "  if [ \"$COMP_CWORD\" -eq 1 ]; then\n    COMPREPLY=( $(compgen -W %q -- \"$cur\") )\n    return\n  fi\n", strings.Join(names, " "))
	fmt.Fprintf(w, "  case \"${COMP_WORDS[1]}\" in\n")
	for _, n := range names {
		if subs, ok := subcommands[n]; ok {
			fmt.Fprintf(w, "    %s)\n      if [ \"$COMP_CWORD\" -eq 2 ]; then words=%q; else\n        case \"${COMP_WORDS[2]}\" in\n", n, strings.Join(subs, " "))
			for _, s := range subs {
				fmt.Fprintf(w, "          %s) words=%q ;;\n", s, strings.Join(flags[n+" "+s], " "))
			}
			fmt.Fprintf(w, "        esac\n      fi ;;\n")
			continue
		}
		if n == "completion" {
			fmt.Fprintf(w, "    completion) words=\"bash zsh\" ;;\n")
			continue
		}
		fmt.Fprintf(w, "    %s) words=%q ;;\n", n, strings.Join(flags[n], " "))
	}
	fmt.Fprintf(w, "  esac\n  COMPREPLY=( $(compgen -W \"$words\" -- \"$cur\") )\n}\ncomplete -o default -F _agora agora\n")
}

// writeZsh writes a zsh completion function for agora (for a file named
// _agora on $fpath, or to source).
func writeZsh(w io.Writer, names []string, flags map[string][]string) {
	fmt.Fprintf(w, "#compdef agora\n# zsh completion for agora (agora completion zsh)\n_agora() {\n  if (( CURRENT == 2 )); then\n    local -a cmds\n    cmds=(\n")
	for _, n := range names {
		fmt.Fprintf(w, "      %s\n", zshQuote(n+":"+strings.ReplaceAll(commands[n].summary, ":", `\:`)))
	}
	fmt.Fprintf(w, "    )\n    _describe 'command' cmds\n    return\n  fi\n  case $words[2] in\n")
	for _, n := range names {
		if subs, ok := subcommands[n]; ok {
			fmt.Fprintf(w, "    %s)\n      if (( CURRENT == 3 )); then compadd -- %s; return; fi\n      case $words[3] in\n", n, strings.Join(subs, " "))
			for _, s := range subs {
				fmt.Fprintf(w, "        %s) compadd -- %s ;;\n", s, strings.Join(flags[n+" "+s], " "))
			}
			fmt.Fprintf(w, "      esac ;;\n")
			continue
		}
		if n == "completion" {
			fmt.Fprintf(w, "    completion) compadd -- bash zsh ;;\n")
			continue
		}
		fmt.Fprintf(w, "    %s) compadd -- %s; _files ;;\n", n, strings.Join(flags[n], " "))
	}
	fmt.Fprintf(w, "  esac\n}\ncompdef _agora agora 2>/dev/null || true\n")
}

// zshQuote single-quotes s for zsh.
func zshQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
