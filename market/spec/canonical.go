package spec

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// A signed job (market/auth's ticket) holds its spec in canonical form:
// the JSON of the parsed Job, as Canonical writes it. The user's client
// parses what the user wrote (YAML or JSON, relative deadlines resolved
// against its own clock) and signs the result, so that every node reads
// the signed job the same way, cheaply, without the YAML parser: a node
// checks a job's ticket each time it first meets the job, as manager,
// holder of its record or contractor.

// Canonical is j's canonical form.
func Canonical(j *Job) ([]byte, error) {
	b, err := json.Marshal(j)
	if err != nil {
		return nil, fmt.Errorf("spec: canonical form: %w", err)
	}
	return b, nil
}

// FromCanonical reads a job in canonical form: JSON of the Job type with
// no unknown field, exactly as Canonical writes it, and valid. The node
// a job is submitted to checks all of this; the others read it with
// FromSigned.
func FromCanonical(b []byte) (*Job, error) {
	j, err := decodeSigned(b)
	if err != nil {
		return nil, err
	}
	if again, err := json.Marshal(j); err != nil || !bytes.Equal(again, b) {
		return nil, single("signed spec: not in canonical form (sign the parsed spec, spec.Canonical)")
	}
	if err := j.Validate(); err != nil {
		return nil, err
	}
	return j, nil
}

// FromSigned reads a signed job's spec without checking its canonical
// form or validating it again (the node it was submitted to did both):
// what a contractor needs to compare a call for bids or an award, whose
// fields the wire decoder checks, with what the user signed.
func FromSigned(b []byte) (*Job, error) { return decodeSigned(b) }

func decodeSigned(b []byte) (*Job, error) {
	if len(b) > MaxSpecBytes {
		return nil, single("spec is %d bytes, over the limit of %d", len(b), MaxSpecBytes)
	}
	if j, ok := quickRead(b); ok {
		return j, nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var j Job
	if err := dec.Decode(&j); err != nil {
		return nil, single("signed spec: %v", err)
	}
	if dec.More() {
		return nil, single("signed spec: data after the JSON object")
	}
	return &j, nil
}
