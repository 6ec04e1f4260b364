// Package names owns the grammars of the identifiers Agora accepts from
// users and peers — task names, node IDs, environment variable names,
// device kinds, label keys — so that the job-spec validator, the wire
// checks and the node's protocols accept exactly the same names.
//
// Each check is a byte loop rather than a regular expression: the wire
// checks run on every market message, and the regular expressions cost
// about 2 % of a busy node's CPU.
package names
