package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// helpArgs is how each command and subcommand is asked for its help.
func helpArgs() [][]string {
	var out [][]string
	for name := range commands {
		if subs, ok := subcommands[name]; ok {
			out = append(out, []string{name, "--help"})
			for _, s := range subs {
				out = append(out, []string{name, s, "--help"})
			}
			continue
		}
		out = append(out, []string{name, "--help"})
	}
	return out
}

// TestHelpFormat (issue 26, done-when 5): every command's --help exits 0
// and prints one format — a usage line, the summary, the flags, at least
// one example — to stdout, since it was asked for (issue 47), and nothing
// to stderr.
func TestHelpFormat(t *testing.T) {
	for _, args := range helpArgs() {
		name := strings.Join(args[:len(args)-1], " ")
		t.Run(name, func(t *testing.T) {
			out, errs, code := cli(t, args...)
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, errs)
			}
			if errs != "" {
				t.Errorf("asked-for help wrote to stderr: %q", errs)
			}
			help := out
			if !strings.HasPrefix(help, "usage: agora "+name) {
				t.Errorf("help does not start with %q:\n%s", "usage: agora "+name, help)
			}
			if !strings.Contains(help, summaryOf(name)) {
				t.Errorf("help lacks the summary %q:\n%s", summaryOf(name), help)
			}
			ex := strings.Index(help, "\nexamples:\n  agora ")
			if ex < 0 {
				t.Fatalf("help has no example:\n%s", help)
			}
			if strings.Contains(help, "Usage of") || rawFlag.MatchString(help) {
				t.Errorf("help holds Go's raw flag usage:\n%s", help)
			}
		})
	}
}

// rawFlag matches a flag as Go's flag package prints it ("  -api string").
var rawFlag = regexp.MustCompile(`\n  -[a-z]`)

// TestUnknownFlag (issue 26, done-when 5): an unknown flag exits 2 with
// one line naming the flag and the command's help.
func TestUnknownFlag(t *testing.T) {
	for _, args := range helpArgs() {
		args = append(args[:len(args)-1:len(args)-1], "--no-such-flag")
		name := strings.Join(args[:len(args)-1], " ")
		t.Run(name, func(t *testing.T) {
			_, errs, code := cli(t, args...)
			if code != exitBadUsage {
				t.Fatalf("exit %d, want %d: %s", code, exitBadUsage, errs)
			}
			want := "agora " + name + ": unknown flag --no-such-flag (run 'agora " + name + " --help')\n"
			if errs != want {
				t.Fatalf("stderr %q, want %q", errs, want)
			}
		})
	}
}

// TestHelpTable: every help entry names a command that exists, and every
// command has one.
func TestHelpTable(t *testing.T) {
	for _, n := range helpNames() {
		top, _, _ := strings.Cut(n, " ")
		if _, ok := commands[top]; !ok {
			t.Errorf("help for %q, which is no command", n)
		}
		if len(helps[n].examples) == 0 {
			t.Errorf("%s: no example", n)
		}
	}
	for _, args := range helpArgs() {
		if name := strings.Join(args[:len(args)-1], " "); helps[name].usage == "" {
			t.Errorf("%s has no help entry", name)
		}
	}
}

// TestCompletion: the bash script is valid bash and completes every
// command and every flag of each; the zsh script names them too (and is
// checked by zsh where it is installed).
func TestCompletion(t *testing.T) {
	flags := completionFlags()
	for _, shell := range []string{"bash", "zsh"} {
		out, errs, code := cli(t, "completion", shell)
		if code != exitOK {
			t.Fatalf("completion %s: exit %d: %s", shell, code, errs)
		}
		for name, fl := range flags {
			if !strings.Contains(out, strings.Fields(name)[0]) {
				t.Errorf("%s completion lacks command %s", shell, name)
			}
			for _, f := range fl {
				if !strings.Contains(out, f) {
					t.Errorf("%s completion lacks %s's flag %s", shell, name, f)
				}
			}
		}
		if len(flags["jobs"]) == 0 || len(flags["user add"]) == 0 {
			t.Fatalf("no flags collected for jobs or user add: %v", flags)
		}
		sh, err := exec.LookPath(shell)
		if err != nil {
			t.Logf("%s not installed: syntax not checked", shell)
			continue
		}
		f := filepath.Join(t.TempDir(), "agora."+shell)
		if err := os.WriteFile(f, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		if b, err := exec.Command(sh, "-n", f).CombinedOutput(); err != nil {
			t.Fatalf("%s -n: %v: %s", shell, err, b)
		}
		if shell != "bash" {
			continue
		}
		// Completing "agora user add --ma" offers the --max-* flags.
		script := ". " + f + `; COMP_WORDS=(agora user add --ma); COMP_CWORD=3; _agora; echo "${COMPREPLY[@]}"`
		b, err := exec.Command(sh, "-c", script).CombinedOutput()
		if err != nil || strings.TrimSpace(string(b)) != "--max-cpu --max-gpu --max-priority --max-running-cpu --max-running-gpu --max-running-jobs" {
			t.Fatalf("completing 'agora user add --ma': %v: %q", err, b)
		}
	}
	if _, errs, code := cli(t, "completion", "fish"); code != exitBadUsage || !strings.Contains(errs, "bash or zsh") {
		t.Fatalf("completion fish: exit %d: %s", code, errs)
	}
}

// TestUnknownCommand (issue 47): a mistyped command exits 2 naming the
// closest command, when one is close; asked-for help goes to stdout,
// the usage after a missing command to stderr.
func TestUnknownCommand(t *testing.T) {
	for _, tc := range []struct{ arg, want string }{
		{"sumbit", `agora: unknown command "sumbit" (did you mean "submit"?) (run 'agora help')` + "\n"},
		{"stauts", `agora: unknown command "stauts" (did you mean "status"?) (run 'agora help')` + "\n"},
		{"frobnicate", `agora: unknown command "frobnicate" (run 'agora help')` + "\n"},
	} {
		out, errs, code := cli(t, tc.arg)
		if code != exitBadUsage || errs != tc.want || out != "" {
			t.Errorf("agora %s: exit %d, stdout %q, stderr %q; want exit 2 and %q", tc.arg, code, out, errs, tc.want)
		}
	}
	for _, arg := range []string{"help", "--help", "-h"} {
		out, errs, code := cli(t, arg)
		if code != exitOK || !strings.Contains(out, "usage: agora COMMAND") || errs != "" {
			t.Errorf("agora %s: exit %d, stdout %q, stderr %q; want the usage on stdout", arg, code, out, errs)
		}
	}
	if out, errs, code := cli(t); code != exitBadUsage || out != "" || !strings.Contains(errs, "usage: agora COMMAND") {
		t.Errorf("agora: exit %d, stdout %q, stderr %q; want exit 2 and the usage on stderr", code, out, errs)
	}
}

// TestJSONEverywhere (issue 47, done-when 6): every command that prints
// something a script may read has --json; the exceptions print a file
// format of their own or nothing to parse.
func TestJSONEverywhere(t *testing.T) {
	exempt := map[string]string{
		"completion": "prints a shell script",
		"man":        "prints or writes roff pages",
		"node":       "runs a node; its output is its log",
		"admit":      "prints the node certificate itself (PEM)",
		"user add":   "prints the user credential itself (PEM)",
		"user renew": "prints the renewed credential itself (PEM)",
	}
	for name, flags := range completionFlags() {
		if _, ok := exempt[name]; ok {
			continue
		}
		if !slices.Contains(flags, "--json") {
			t.Errorf("agora %s has no --json", name)
		}
	}
	for name := range exempt {
		if _, ok := completionFlags()[name]; !ok {
			t.Errorf("exempt %q is no command", name)
		}
	}
}

// TestManPages (issue 47): agora man --out writes agora(1) and a page per
// command and subcommand, each naming every flag its --help names.
func TestManPages(t *testing.T) {
	dir := t.TempDir()
	if _, errs, code := cli(t, "man", "--out", dir); code != exitOK {
		t.Fatalf("agora man --out: exit %d: %s", code, errs)
	}
	main, err := os.ReadFile(filepath.Join(dir, "agora.1"))
	if err != nil {
		t.Fatal(err)
	}
	for name, flags := range completionFlags() {
		if subcommands[name] != nil {
			continue
		}
		page, err := os.ReadFile(filepath.Join(dir, manName(name)+".1"))
		if err != nil {
			t.Errorf("no page for %s: %v", name, err)
			continue
		}
		if !strings.HasPrefix(string(page), ".TH "+strings.ToUpper(manName(name))+" 1") || !strings.Contains(string(page), ".SH EXAMPLES") {
			t.Errorf("%s: not a man page:\n%s", name, page)
		}
		for _, f := range flags {
			if !strings.Contains(string(page), `\fB\-\-`+strings.ReplaceAll(strings.TrimPrefix(f, "--"), "-", `\-`)+`\fR`) {
				t.Errorf("%s's page lacks %s", name, f)
			}
		}
		if !strings.Contains(string(main), ".BR "+manName(name)+" (1)") {
			t.Errorf("agora(1) does not name %s", manName(name))
		}
	}
	if out, _, code := cli(t, "man", "status"); code != exitOK || !strings.Contains(out, ".SH NAME\nagora\\-status") {
		t.Errorf("agora man status: exit %d:\n%s", code, out)
	}
	if _, errs, code := cli(t, "man", "stauts"); code != exitBadUsage || !strings.Contains(errs, "no page") {
		t.Errorf("agora man stauts: exit %d: %s", code, errs)
	}
}
