// Package spec owns Agora's job specification: the YAML (or JSON) a user
// submits, the normalized Job and Task model the market core schedules,
// and the strict validation that stands between the two.
//
// Parse turns spec bytes into a Job, applying defaults and checking every
// field; each problem is reported with its field path (for example
// "tasks[1].resources.gpu.memory") and, for parsed specs, its line, all
// collected into one *ValidationError. (*Job).Validate applies the same
// rules to a Job built in code or received over the wire. TopoOrder, Ready
// and Task answer the dependency questions the market core asks of a job.
//
// The package is pure: it reads only the bytes it is given, takes the
// current time as a parameter, and starts no goroutines. Resource amounts
// use the vocabulary of package devices/resource.
package spec
