// Package wire owns the wire form of the market's messages and of the
// queries peers send each other: the protobuf encoding of every
// market.Msg (inside a versioned pb.Envelope), of Query and QueryReply,
// and the length-delimited framing used on libp2p streams. The schema is
// market/wire/pb/market.proto; docs/protocol.md describes it for other
// implementations.
//
// Decoding is a trust boundary: Decode, DecodeQuery and DecodeQueryReply
// reject input that is over its size limit, malformed, of another version,
// empty, or that breaks any field limit (see the Max constants), and every
// error they return starts with "wire: " and names the offending field in
// proto terms, for example "wire: award.task.offer.request.gpu.share_milli:
// 1500 out of range 0..1000". Encode applies the same checks to outgoing
// values, so that a node learns of a message its peers would drop before
// sending it.
//
// Decode returns market messages as values (market.CFP, market.Bid, …),
// exactly the types Market.Step switches on, with times in UTC and without
// a monotonic reading, and with empty maps and slices nil, so that a
// decoded message is reflect.DeepEqual to an original built that way.
// Times travel as Unix nanoseconds with 0 for the zero time, so a set time
// must lie strictly after the Unix epoch and before the year 2262.
//
// The conversion between the Go types and the protobuf messages is not
// written per field: convert.go works it out from the two definitions
// (the proto field's name is the Go field's JSON name), so adding a field
// is adding it to market.proto and to the Go type. The checks
// (check.go) say what each field may hold.
//
// The package is pure encoding: it must not import libp2p or do any I/O
// beyond the io.Writer and bufio.Reader handed to WriteFrame and
// ReadFrame.
package wire
