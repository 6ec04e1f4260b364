package checkpoint

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// lowerLimits sets test-sized limits for the duration of the test.
func lowerLimits(t *testing.T, l limits) {
	saved := lim
	lim = l
	t.Cleanup(func() { lim = saved })
}

func TestSnapshotLimitsAtTheEdge(t *testing.T) {
	lowerLimits(t, limits{entries: 5, totalBytes: 1000, pathLen: 20, manifestSize: MaxManifestSize, chunkRefs: MaxChunkRefs})
	tests := []struct {
		name  string
		tree  []node
		limit string // empty: the snapshot succeeds
	}{
		{"entries at limit", []node{{path: "d", dir: true}, {path: "d/1"}, {path: "d/2"}, {path: "3"}, {path: "4"}}, ""},
		{"entries over limit", []node{{path: "d", dir: true}, {path: "d/1"}, {path: "d/2"}, {path: "3"}, {path: "4"}, {path: "5"}}, "MaxEntries"},
		{"skipped count", []node{{path: "1"}, {path: "2"}, {path: "3"}, {path: "4"}, {path: "5"}, {path: "bad\xff"}}, "MaxEntries"},
		{"bytes at limit", []node{{path: "a", data: make([]byte, 600)}, {path: "b", data: make([]byte, 400)}}, ""},
		{"bytes over limit", []node{{path: "a", data: make([]byte, 600)}, {path: "b", data: make([]byte, 401)}}, "MaxTotalBytes"},
		{"path at limit", []node{{path: "dir", dir: true}, {path: "dir/" + strings.Repeat("p", 16)}}, ""},
		{"path over limit", []node{{path: "dir", dir: true}, {path: "dir/" + strings.Repeat("p", 17)}}, "MaxPathLen"},
		{"target at limit", []node{{path: "l", target: strings.Repeat("t", 20)}}, ""},
		{"target over limit", []node{{path: "l", target: strings.Repeat("t", 21)}}, "MaxPathLen"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := t.TempDir()
			writeTree(t, src, tc.tree)
			_, _, err := Snapshot(src, testMeta(1), NewMemStore())
			if tc.limit == "" {
				if err != nil {
					t.Fatalf("Snapshot at the limit: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), tc.limit) {
				t.Fatalf("Snapshot: %v, want ErrLimit naming %s", err, tc.limit)
			}
		})
	}
}

// TestManifestLimitsAtTheEdge checks the real limits on crafted manifests.
// It validates rather than encodes: encoding 100,000 entries takes seconds
// under the race detector, and encoding validates first.
func TestManifestLimitsAtTheEdge(t *testing.T) {
	// Distinct chunk IDs: one chunk may be listed at most MaxChunkRefs
	// times.
	bigFile := func(size int64) Manifest {
		n := (size + MaxChunkSize - 1) / MaxChunkSize
		chunks := make([]string, n)
		for i := range chunks {
			chunks[i] = fmt.Sprintf("%064x", i)
		}
		return Manifest{Version: Version, Job: "j", Task: "t", TotalBytes: size,
			Entries: []Entry{{Path: "f", Type: TypeFile, Size: size, Chunks: chunks}}}
	}
	repeated := func(refs int) Manifest {
		size := int64(refs) * MaxChunkSize
		return Manifest{Version: Version, Job: "j", Task: "t", TotalBytes: size,
			Entries: []Entry{{Path: "f", Type: TypeFile, Size: size, Chunks: slices.Repeat([]string{idA}, refs)}}}
	}
	// Paths "000000", "000001"... built without fmt, which is slow under
	// the race detector.
	atLimit := Manifest{Version: Version, Job: "j", Task: "t"}
	name := []byte("000000")
	for range MaxEntries + 1 {
		atLimit.Entries = append(atLimit.Entries, Entry{Path: string(name), Type: TypeFile})
		for k := len(name) - 1; ; k-- { // increment the decimal counter
			if name[k] < '9' {
				name[k]++
				break
			}
			name[k] = '0'
		}
	}
	overLimit := atLimit
	atLimit.Entries = atLimit.Entries[:MaxEntries]
	longPath := func(n int) Manifest {
		return Manifest{Version: Version, Job: "j", Task: "t",
			Entries: []Entry{{Path: strings.Repeat("p", n), Type: TypeFile}}}
	}
	tests := []struct {
		name  string
		m     Manifest
		limit string
	}{
		{"total bytes at limit", bigFile(MaxTotalBytes), ""},
		{"total bytes over limit", bigFile(MaxTotalBytes + 1), "MaxTotalBytes"},
		{"chunk repeated at limit", repeated(MaxChunkRefs), ""},
		{"chunk repeated over limit", repeated(MaxChunkRefs + 1), "MaxChunkRefs"},
		{"entries at limit", atLimit, ""},
		{"entries over limit", overLimit, "MaxEntries"},
		{"path at limit", longPath(MaxPathLen), ""},
		{"path over limit", longPath(MaxPathLen + 1), "MaxPathLen"},
		{"name over limit", Manifest{Version: Version, Job: strings.Repeat("j", MaxNameLen+1), Task: "t"}, "MaxNameLen"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.m.Validate()
			if tc.limit == "" {
				if err != nil {
					t.Fatalf("Validate at the limit: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), tc.limit) {
				t.Fatalf("Validate: %v, want ErrLimit naming %s", err, tc.limit)
			}
		})
	}
}

func TestManifestSizeAtTheEdge(t *testing.T) {
	src := t.TempDir()
	writeTree(t, src, []node{{path: "a"}, {path: "b"}})
	m, _ := mustSnapshot(t, src, 1, NewMemStore())
	data, err := EncodeManifest(m)
	if err != nil {
		t.Fatal(err)
	}

	lowerLimits(t, limits{entries: MaxEntries, totalBytes: MaxTotalBytes, pathLen: MaxPathLen, manifestSize: len(data), chunkRefs: MaxChunkRefs})
	if _, _, err := Snapshot(src, testMeta(1), NewMemStore()); err != nil {
		t.Fatalf("Snapshot with a manifest at the limit: %v", err)
	}
	if _, err := DecodeManifest(data); err != nil {
		t.Fatalf("DecodeManifest at the limit: %v", err)
	}
	lim.manifestSize--
	_, _, err = Snapshot(src, testMeta(1), NewMemStore())
	if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "MaxManifestSize") {
		t.Errorf("Snapshot with a manifest over the limit: %v", err)
	}
	if _, err := DecodeManifest(data); !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "MaxManifestSize") {
		t.Errorf("DecodeManifest over the limit: %v", err)
	}
}
