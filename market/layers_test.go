package market

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The layering docs/architecture.md draws, checked on the module's real
// import graph.

const module = "github.com/agora-sched/agora"

// TestLayering: the market and everything under it import no adapter
// (gossip, node, runtime, store, cmd, testnet) and no I/O library, and no
// package below node/ imports node or cmd.
func TestLayering(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to list the imports with")
	}
	// -e: a cycle the rules forbid must be reported here, not stop go list.
	out, err := exec.Command("go", "list", "-e", "-f", "{{.ImportPath}} {{join .Deps \" \"}}", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	// "P/..." bans P and everything under it; a bare path bans itself.
	pure := []string{module + "/gossip/...", module + "/node/...", module + "/runtime/...", module + "/store/...", module + "/cmd/...",
		module + "/testnet/...", "github.com/libp2p/...", "github.com/dgraph-io/...", "github.com/NVIDIA/...", "os/exec", "net", "net/http"}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg, deps := fields[0], fields[1:]
		var banned []string
		switch {
		case pkg == module+"/market" || strings.HasPrefix(pkg, module+"/market/"):
			banned = pure
		case strings.HasPrefix(pkg, module+"/node/"):
			banned = []string{module + "/node", module + "/cmd/..."}
		default:
			continue
		}
		checked++
		for _, d := range deps {
			for _, b := range banned {
				if root, tree := strings.CutSuffix(b, "/..."); d == root || tree && strings.HasPrefix(d, root+"/") {
					t.Errorf("%s depends on %s", strings.TrimPrefix(pkg, module+"/"), d)
				}
			}
		}
	}
	if checked < 10 {
		t.Fatalf("only %d packages checked: the go list output changed shape", checked)
	}
}

// TestPureCore: no source file of the market (tests aside) starts a
// goroutine or reads or waits on the wall clock; time comes in with the
// events.
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
