package market

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// maxMethods bounds every receiver of the package: a part that grows
// past it is two parts.
const maxMethods = 60

// TestParts holds docs/architecture.md's table of the market's parts to
// the code: each part's methods are declared in the files its row names,
// the other parts it names as fields are those its row says it calls,
// no receiver has more than maxMethods methods and Market has fewer than
// 20 fields.
func TestParts(t *testing.T) {
	ticked := regexp.MustCompile("`([^`]+)`")
	type row struct{ files, calls []string }
	rows := map[string]row{}
	for _, f := range docTable(t, "| part | files | owns | calls |", "part") {
		var r row
		for _, m := range ticked.FindAllStringSubmatch(f[1], -1) {
			r.files = append(r.files, m[1])
		}
		for _, m := range ticked.FindAllStringSubmatch(f[3], -1) {
			r.calls = append(r.calls, m[1])
		}
		slices.Sort(r.calls)
		rows[strings.Trim(f[0], "`")] = r
	}

	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	methods := map[string]int{}
	structs := map[string]*ast.StructType{}
	for name, f := range pkgs["market"].Files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					continue
				}
				typ := recvName(d.Recv.List[0].Type)
				methods[typ]++
				if r, ok := rows[typ]; ok && !slices.Contains(r.files, name) {
					t.Errorf("%s.%s is declared in %s, not among the files docs/architecture.md gives %s", typ, d.Name.Name, name, typ)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					if ts, ok := s.(*ast.TypeSpec); ok {
						if st, ok := ts.Type.(*ast.StructType); ok {
							structs[ts.Name.Name] = st
						}
					}
				}
			}
		}
	}
	for typ, n := range methods {
		if n > maxMethods {
			t.Errorf("%s has %d methods, more than %d: split it", typ, n, maxMethods)
		}
	}
	if n := structs["Market"].Fields.NumFields(); n >= 20 {
		t.Errorf("Market has %d fields", n)
	}
	for part, r := range rows {
		st := structs[part]
		if st == nil {
			t.Errorf("docs/architecture.md names part %s, which is not a struct of the package", part)
			continue
		}
		var calls []string
		for _, f := range st.Fields.List {
			if s, ok := f.Type.(*ast.StarExpr); ok && len(f.Names) > 0 {
				if id, ok := s.X.(*ast.Ident); ok {
					if _, isPart := rows[id.Name]; isPart {
						calls = append(calls, id.Name)
					}
				}
			}
		}
		slices.Sort(calls)
		if !slices.Equal(calls, r.calls) {
			t.Errorf("%s names the parts %v; docs/architecture.md says it calls %v", part, calls, r.calls)
		}
	}
	for _, f := range structs["Market"].Fields.List {
		if s, ok := f.Type.(*ast.StarExpr); ok {
			if id, ok := s.X.(*ast.Ident); ok && id.Name != "shared" {
				if _, isPart := rows[id.Name]; !isPart {
					t.Errorf("Market holds part %s, which docs/architecture.md does not list", id.Name)
				}
			}
		}
	}
}

func recvName(e ast.Expr) string {
	if s, ok := e.(*ast.StarExpr); ok {
		e = s.X
	}
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}
