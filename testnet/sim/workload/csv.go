package workload

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// table reads a CSV file whose first row names the columns, so that
// readers find columns by name, not by position.
type table struct {
	src  string
	r    *csv.Reader
	cols map[string]int
	row  []string
	line int
}

func newTable(src string, r io.Reader) (*table, error) {
	cr := csv.NewReader(r)
	cr.ReuseRecord = true
	cr.FieldsPerRecord = 0
	head, err := cr.Read()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, parseErr(src, 1, "", "empty file, want a header row")
		}
		return nil, &ParseError{Source: src, Line: 1, Err: err}
	}
	t := &table{src: src, r: cr, cols: map[string]int{}}
	for i, c := range head {
		c = strings.ToLower(strings.TrimSpace(strings.TrimPrefix(c, "\ufeff")))
		if _, dup := t.cols[c]; !dup {
			t.cols[c] = i
		}
	}
	return t, nil
}

// column finds the first of names among the columns, or fails naming them.
func (t *table) column(names ...string) (int, error) {
	for _, n := range names {
		if i, ok := t.cols[n]; ok {
			return i, nil
		}
	}
	return 0, parseErr(t.src, 1, "", "no column %s in the header row", strings.Join(names, " or "))
}

// optional finds the first of names among the columns, or -1.
func (t *table) optional(names ...string) int {
	for _, n := range names {
		if i, ok := t.cols[n]; ok {
			return i
		}
	}
	return -1
}

// next reads the next row; it returns false at the end of the file.
func (t *table) next() (bool, error) {
	row, err := t.r.Read()
	if errors.Is(err, io.EOF) {
		return false, nil
	}
	if err != nil {
		return false, &ParseError{Source: t.src, Err: err}
	}
	t.row = row
	t.line, _ = t.r.FieldPos(0)
	return true, nil
}

// text is the trimmed value of column i ("" for i < 0).
func (t *table) text(i int) string {
	if i < 0 || i >= len(t.row) {
		return ""
	}
	return strings.TrimSpace(t.row[i])
}

// int reads column i as a whole number; empty is (0, false).
func (t *table) int(i int, name string) (int64, bool, error) {
	s := t.text(i)
	if s == "" {
		return 0, false, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		f, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil || f != float64(int64(f)) {
			return 0, false, parseErr(t.src, t.line, name, "%q is not a whole number", s)
		}
		n = int64(f)
	}
	return n, true, nil
}

// need reads column i as a whole number at least zero, which must be there.
func (t *table) need(i int, name string) (int64, error) {
	n, ok, err := t.int(i, name)
	switch {
	case err != nil:
		return 0, err
	case !ok:
		return 0, parseErr(t.src, t.line, name, "missing")
	case n < 0:
		return 0, parseErr(t.src, t.line, name, "negative value %d", n)
	}
	return n, nil
}

func (t *table) fail(field, format string, args ...any) error {
	return &ParseError{Source: t.src, Line: t.line, Field: field, Err: fmt.Errorf(format, args...)}
}
