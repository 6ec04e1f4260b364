package market

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The layering docs/architecture.md draws in its package table, checked
// on the module's real import graph.

const module = "github.com/agora-sched/agora"

// layerRule is one row of the table: what a package must not depend on,
// as import-path patterns ("P/..." bans P and everything under it).
type layerRule struct {
	pkg    string
	banned []string
}

// readLayers reads the package table of docs/architecture.md; pkgs are
// the module's packages (relative paths), to tell a package of the
// module from one of the standard library's and to expand "everything
// else".
func readLayers(t *testing.T, pkgs map[string]bool) []layerRule {
	t.Helper()
	io := []string{"github.com/libp2p/...", "github.com/dgraph-io/...", "github.com/NVIDIA/...", "os/exec", "net", "net/http"}
	cells := map[string]string{}
	var order []string
	for _, f := range docTable(t, "| package | owns | must not import |", "package") {
		pkg := strings.Trim(f[0], "`")
		cells[pkg] = f[2]
		order = append(order, pkg)
	}
	parens := regexp.MustCompile(`\([^)]*\)`)
	ticked := regexp.MustCompile("`([^`]+)`")
	var rules []layerRule
	var expand func(pkg, cell string, depth int) []string
	expand = func(pkg, cell string, depth int) []string {
		cell = parens.ReplaceAllString(cell, "")
		if as, ok := strings.CutPrefix(cell, "as `"); ok {
			other := strings.TrimSuffix(as, "`")
			if _, ok := cells[other]; !ok || depth > 0 {
				t.Fatalf("docs/architecture.md: %s is as %q, which has no row of its own", pkg, other)
			}
			return expand(other, cells[other], depth+1)
		}
		var out []string
		rest := ticked.ReplaceAllStringFunc(cell, func(m string) string {
			p := strings.Trim(m, "`")
			root, tree := strings.CutSuffix(p, "/...")
			under := false
			for q := range pkgs {
				under = under || tree && strings.HasPrefix(q, root+"/")
			}
			if pkgs[root] || under {
				p = module + "/" + p
			} else if strings.HasSuffix(p, "/...") {
				t.Fatalf("docs/architecture.md: %s bans %s, not a package of the module", pkg, p)
			}
			out = append(out, p)
			return ""
		})
		for _, w := range strings.FieldsFunc(rest, func(r rune) bool { return r == ',' || r == ';' }) {
			switch w = strings.TrimSpace(w); w {
			case "", "—":
			case "libp2p":
				out = append(out, "github.com/libp2p/...")
			case "badger":
				out = append(out, "github.com/dgraph-io/...")
			case "NVML":
				out = append(out, "github.com/NVIDIA/...")
			case "anything with I/O":
				out = append(out, io...)
			case "everything else":
				for p := range pkgs {
					if p != pkg {
						out = append(out, module+"/"+p)
					}
				}
			default:
				t.Fatalf("docs/architecture.md: %s: cannot read %q in its must-not-import cell", pkg, w)
			}
		}
		return out
	}
	for _, pkg := range order {
		rules = append(rules, layerRule{pkg: pkg, banned: expand(pkg, cells[pkg], 0)})
	}
	return rules
}

// TestLayering: every package of the module has a row in the package
// table of docs/architecture.md, and none depends on what its row bans.
func TestLayering(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to list the imports with")
	}
	// -e: a cycle the rules forbid must be reported here, not stop go list.
	out, err := exec.Command("go", "list", "-e", "-f", "{{.ImportPath}} {{join .Deps \" \"}}", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := map[string][]string{}
	pkgs := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		rel := strings.TrimPrefix(fields[0], module+"/")
		deps[rel], pkgs[rel] = fields[1:], true
	}
	rules := readLayers(t, pkgs)
	rows := map[string]bool{}
	banned := 0
	for _, r := range rules {
		rows[r.pkg] = true
		if !pkgs[r.pkg] {
			t.Errorf("docs/architecture.md has a row for %s, which is not a package of the module", r.pkg)
		}
		banned += len(r.banned)
		for _, d := range deps[r.pkg] {
			for _, b := range r.banned {
				if root, tree := strings.CutSuffix(b, "/..."); d == root || tree && strings.HasPrefix(d, root+"/") {
					t.Errorf("%s depends on %s, which docs/architecture.md bans", r.pkg, d)
				}
			}
		}
	}
	for p := range pkgs {
		if !rows[p] {
			t.Errorf("package %s has no row in the package table of docs/architecture.md", p)
		}
	}
	if len(rules) < 30 || banned < 100 {
		t.Fatalf("only %d rows and %d bans read: the table changed shape", len(rules), banned)
	}
}

// TestPureCore: no source file of the market (tests aside) starts a
// goroutine, takes a lock, or reads or waits on the wall clock; time
// comes in with the events.
func TestPureCore(t *testing.T) {
	banned := map[string]bool{"Now": true, "Since": true, "Until": true, "Sleep": true, "After": true,
		"AfterFunc": true, "Tick": true, "NewTimer": true, "NewTicker": true}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	sub, _ := filepath.Glob("*/*.go")
	subsub, _ := filepath.Glob("*/*/*.go")
	files = append(append(files, sub...), subsub...)
	fset := token.NewFileSet()
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || strings.HasSuffix(f, ".pb.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		n++
		for _, imp := range file.Imports {
			if p := strings.Trim(imp.Path.Value, `"`); p == "sync" || p == "sync/atomic" {
				t.Errorf("%s: imports %s: the core runs on its caller's one goroutine", f, p)
			}
		}
		ast.Inspect(file, func(x ast.Node) bool {
			switch x := x.(type) {
			case *ast.GoStmt:
				t.Errorf("%s: starts a goroutine", fset.Position(x.Pos()))
			case *ast.SelectorExpr:
				if id, ok := x.X.(*ast.Ident); ok && id.Name == "time" && banned[x.Sel.Name] {
					t.Errorf("%s: time.%s", fset.Position(x.Pos()), x.Sel.Name)
				}
			}
			return true
		})
	}
	if n < 20 {
		t.Fatalf("only %d files read", n)
	}
}

// docTable reads the table of docs/architecture.md under header: each
// row's cells, trimmed, for as long as rows begin with a ticked name.
func docTable(t *testing.T, header, what string) [][]string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(doc), header)
	if !ok {
		t.Fatalf("docs/architecture.md: no %s table", what)
	}
	want := strings.Count(header, "|") - 1
	var rows [][]string
	for _, line := range strings.Split(table, "\n")[2:] {
		if !strings.HasPrefix(line, "| `") {
			break
		}
		f := strings.Split(line, "|")
		if len(f) != want+2 {
			t.Fatalf("docs/architecture.md: %s row with %d cells: %s", what, len(f)-2, line)
		}
		row := make([]string, want)
		for i := range row {
			row[i] = strings.TrimSpace(f[i+1])
		}
		rows = append(rows, row)
	}
	return rows
}
