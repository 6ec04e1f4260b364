package wire

import "testing"

// BenchmarkAwardCodec encodes and decodes an award with every field set
// (the largest market message), checks included.
func BenchmarkAwardCodec(b *testing.B) {
	m := fullAward()
	for b.Loop() {
		raw, err := Encode(m)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Decode(raw); err != nil {
			b.Fatal(err)
		}
	}
}
