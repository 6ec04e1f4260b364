package checkpoint

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

var (
	idA = strings.Repeat("a", 64)
	idB = strings.Repeat("0123456789abcdef", 4)
)

// goldenManifest exercises every field of the format.
func goldenManifest() Manifest {
	return Manifest{
		Version: Version, Job: "job-<1>", Task: "train", Replica: 2, Epoch: 5, Seq: 9,
		CreatedNs: 1_700_000_000_123456789, TotalBytes: 700_000,
		Entries: []Entry{
			{Path: "d", Type: TypeDir, Mode: 0o755, MtimeNs: 1},
			{Path: "d/f", Type: TypeFile, Mode: 0o644, Size: 700_000, MtimeNs: 2, Chunks: []string{idA, idB}},
			{Path: "d/l", Type: TypeSymlink, Target: "f"},
			{Path: "e", Type: TypeFile, Mode: 0o600, MtimeNs: 3},
		},
		Skipped: []Skipped{{Path: "d/pipe", Reason: "unsupported file type (p---------)"}},
	}
}

// goldenJSON pins the canonical encoding of goldenManifest; changing it
// changes every manifest ID.
const goldenJSON = `{"version":1,"job":"job-<1>","task":"train","replica":2,"epoch":5,"seq":9,` +
	`"created_ns":1700000000123456789,"total_bytes":700000,"entries":[` +
	`{"path":"d","type":"dir","mode":493,"size":0,"mtime_ns":1},` +
	`{"path":"d/f","type":"file","mode":420,"size":700000,"mtime_ns":2,"chunks":["` + "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" +
	`","0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"]},` +
	`{"path":"d/l","type":"symlink","mode":0,"size":0,"mtime_ns":0,"target":"f"},` +
	`{"path":"e","type":"file","mode":384,"size":0,"mtime_ns":3}],` +
	`"skipped":[{"path":"d/pipe","reason":"unsupported file type (p---------)"}]}`

func TestManifestCanonicalEncoding(t *testing.T) {
	data, err := EncodeManifest(goldenManifest())
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != goldenJSON {
		t.Fatalf("encoding changed:\n got %s\nwant %s", data, goldenJSON)
	}
	// Whitespace and field order do not change the decoded manifest or
	// its ID.
	var loose bytes.Buffer
	loose.WriteString("{\n  \"task\": \"train\",\n")
	loose.WriteString(strings.Replace(goldenJSON[1:], `"task":"train",`, "", 1))
	m, err := DecodeManifest(loose.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	id1, _ := ManifestID(m)
	id2, _ := ManifestID(goldenManifest())
	if id1 != id2 || len(id1) != 64 {
		t.Errorf("IDs %s and %s", id1, id2)
	}
	if got := m.ChunkIDs(); len(got) != 2 || got[0] != idA || got[1] != idB {
		t.Errorf("ChunkIDs: %v", got)
	}
}

func TestDecodeManifestRejects(t *testing.T) {
	// Each case edits the golden encoding; the error must name the field.
	tests := []struct {
		name, old, new, field string
	}{
		{"version 0", `"version":1`, `"version":0`, "version"},
		{"version 2", `"version":1`, `"version":2`, "version"},
		{"no version", `"version":1,`, ``, "version"},
		{"unknown field", `"seq":9,`, `"seq":9,"extra":1,`, "extra"},
		{"empty job", `"job-<1>"`, `""`, "job"},
		{"negative replica", `"replica":2`, `"replica":-2`, "replica"},
		{"short chunk id", `"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"`, `"aaaa"`, "entries[1].chunks[0]"},
		{"upper-case chunk id", `"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"`, `"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"`, "entries[1].chunks[0]"},
		{"non-hex chunk id", `"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"`, `"gaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"`, "entries[1].chunks[0]"},
		{"absolute path", `"path":"e"`, `"path":"/e"`, "entries[3].path"},
		{"dotdot path", `"path":"e"`, `"path":"../e"`, "entries[3].path"},
		{"unsorted", `"path":"e"`, `"path":"a"`, "entries[3].path"},
		{"duplicate", `"path":"e"`, `"path":"d/l"`, "entries[3].path"},
		{"bad type", `"type":"dir"`, `"type":"fifo"`, "entries[0].type"},
		{"setuid mode", `"mode":493`, `"mode":2541`, "entries[0].mode"},
		{"negative size", `"size":700000`, `"size":-1`, "entries[1].size"},
		{"too few chunks", `"size":700000`, `"size":1500000`, "entries[1].chunks"},
		{"too many chunks", `"size":700000`, `"size":1`, "entries[1].chunks"},
		{"dir with size", `"mode":493,"size":0`, `"mode":493,"size":5`, "entries[0].size"},
		{"symlink without target", `,"target":"f"`, ``, "entries[2].target"},
		{"file with target", `"mtime_ns":3}`, `"mtime_ns":3,"target":"x"}`, "entries[3].target"},
		{"total mismatch", `"total_bytes":700000`, `"total_bytes":1`, "total_bytes"},
		{"empty skipped path", `"path":"d/pipe"`, `"path":""`, "skipped[0].path"},
		// Whole inputs rather than edits: old is empty.
		{"trailing data", "", goldenJSON + " {}", "after top-level value"},
		{"not json", "", "[1]", "invalid manifest"},
		{"null", "", "null", "version"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := tc.new
			if tc.old != "" {
				if !strings.Contains(goldenJSON, tc.old) {
					t.Fatalf("golden has no %q", tc.old)
				}
				src = strings.Replace(goldenJSON, tc.old, tc.new, 1)
			}
			_, err := DecodeManifest([]byte(src))
			if !errors.Is(err, ErrInvalidManifest) && !errors.Is(err, ErrLimit) {
				t.Fatalf("DecodeManifest: %v, want an invalid-manifest error", err)
			}
			if !strings.Contains(err.Error(), tc.field) {
				t.Errorf("error %q does not name %s", err, tc.field)
			}
		})
	}
}

func TestEncodeManifestValidates(t *testing.T) {
	m := goldenManifest()
	m.Entries[1].Chunks[0] = "nope"
	if _, err := EncodeManifest(m); !errors.Is(err, ErrInvalidManifest) {
		t.Errorf("EncodeManifest of an invalid manifest: %v", err)
	}
	if _, err := ManifestID(m); err == nil {
		t.Error("ManifestID of an invalid manifest succeeded")
	}
}

func FuzzDecodeManifest(f *testing.F) {
	f.Add([]byte(goldenJSON))
	f.Add([]byte(`{"version":1,"job":"j","task":"t","replica":0,"epoch":0,"seq":0,"created_ns":0,"total_bytes":0,"entries":[]}`))
	f.Add([]byte(`{"version":1,"entries":[{"path":"../x","type":"file"}]}`))
	f.Add([]byte(`{"version":2}`))
	f.Add([]byte(`{"version":1e400}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := DecodeManifest(data)
		if err != nil {
			return
		}
		// A decoded manifest encodes, and its encoding is a fixed point.
		enc, err := EncodeManifest(m)
		if err != nil {
			t.Fatalf("decoded manifest does not encode: %v", err)
		}
		m2, err := DecodeManifest(enc)
		if err != nil {
			t.Fatalf("canonical encoding does not decode: %v\n%s", err, enc)
		}
		enc2, err := EncodeManifest(m2)
		if err != nil || !bytes.Equal(enc, enc2) {
			t.Fatalf("encoding is not stable: %v\n%s\n%s", err, enc, enc2)
		}
	})
}
