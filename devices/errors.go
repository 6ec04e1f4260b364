package devices

import "strings"

// FileError is a problem with a resources file. Its message is one line:
// "resources file NAME: FIELD: PROBLEM", or "resources file NAME: PROBLEM"
// when the problem is with the file as a whole (unreadable, not YAML).
type FileError struct {
	// File is the file's name as given to LoadFile or ParseOverrides.
	File string
	// Field is the path of the offending value, such as "cpu" or
	// "gpus[1].memory", or "" for the whole file.
	Field string
	// Err is what is wrong.
	Err error
}

// Error renders the error on a single line.
func (e *FileError) Error() string {
	var b strings.Builder
	b.WriteString("resources file ")
	b.WriteString(e.File)
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	lines := strings.Split(strings.TrimSpace(e.Err.Error()), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSpace(l)
	}
	b.WriteString(strings.Join(lines, "; "))
	return b.String()
}

// Unwrap returns the underlying error, such as an *fs.PathError.
func (e *FileError) Unwrap() error { return e.Err }
