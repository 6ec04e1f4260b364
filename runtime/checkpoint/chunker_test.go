package checkpoint

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"testing"
	"testing/iotest"
)

// chunkSizes splits r and returns the chunk sizes.
func chunkSizes(t *testing.T, r io.Reader) []int {
	t.Helper()
	c := newChunker(r, nil)
	var sizes []int
	for {
		b, err := c.next()
		if err == io.EOF {
			return sizes
		}
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, len(b))
	}
}

// TestChunkerGolden pins the gear table and the cut points: changing them
// loses deduplication against every stored checkpoint.
func TestChunkerGolden(t *testing.T) {
	if gear[0] != 0x185229334560bf62 || gear[255] != 0x355ebc4e0bdad95b {
		t.Fatalf("gear table changed: gear[0]=%#x gear[255]=%#x", gear[0], gear[255])
	}
	want := []int{277458, 276863, 404468, 346144, 285710, 281568, 262451, 149837,
		270159, 295452, 179260, 336393, 278172, 468173, 82196}
	data := randBytes(42, 4<<20)
	if got := chunkSizes(t, bytes.NewReader(data)); !slices.Equal(got, want) {
		t.Fatalf("cut points changed:\n got %v\nwant %v", got, want)
	}
	// Short reads do not move the cuts.
	if got := chunkSizes(t, iotest.HalfReader(bytes.NewReader(data))); !slices.Equal(got, want) {
		t.Errorf("cut points with short reads: %v", got)
	}
}

func TestChunkerBounds(t *testing.T) {
	tests := []struct {
		name string
		data []byte
		want []int // nil: only check the bounds
	}{
		{"empty", nil, []int{}},
		{"one byte", []byte{1}, []int{1}},
		{"below min", make([]byte, MinChunkSize-1), []int{MinChunkSize - 1}},
		{"min", make([]byte, MinChunkSize), []int{MinChunkSize}},
		{"max", make([]byte, MaxChunkSize), []int{MaxChunkSize}},
		// Constant bytes never satisfy the mask: every chunk is maximal.
		{"zeros", make([]byte, 2*MaxChunkSize+1), []int{MaxChunkSize, MaxChunkSize, 1}},
		{"random", randBytes(10, 8<<20), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sizes := chunkSizes(t, bytes.NewReader(tc.data))
			if tc.want != nil && !slices.Equal(sizes, tc.want) {
				t.Fatalf("sizes %v, want %v", sizes, tc.want)
			}
			total := 0
			for i, n := range sizes {
				total += n
				if n > MaxChunkSize || (i < len(sizes)-1 && n < MinChunkSize) {
					t.Errorf("chunk %d has %d bytes", i, n)
				}
			}
			if total != len(tc.data) {
				t.Errorf("chunks hold %d bytes of %d", total, len(tc.data))
			}
		})
	}
}

func TestChunkerReadError(t *testing.T) {
	boom := errors.New("boom")
	r := io.MultiReader(bytes.NewReader(make([]byte, 3*MaxChunkSize/2)), iotest.ErrReader(boom))
	c := newChunker(r, nil)
	var err error
	for err == nil {
		_, err = c.next()
	}
	if !errors.Is(err, boom) {
		t.Errorf("next: %v, want boom", err)
	}
}
