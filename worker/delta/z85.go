package delta

import (
	"encoding/binary"
	"fmt"
)

// Z85 (ZeroMQ base-85) as Delta uses it for deletion vector ids and inline bitmaps
// (spark/.../util/Codec.scala Base85Codec): each 4-byte big-endian word becomes 5 characters.
const z85Alphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"

var z85Decode = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xFF
	}
	for i := 0; i < len(z85Alphabet); i++ {
		t[z85Alphabet[i]] = byte(i)
	}
	return t
}()

// z85Encode encodes data, zero-padding it to a multiple of 4 bytes first (the decoder truncates
// to the known length, as Base85Codec.encodeBytes/decodeBytes do).
func z85Encode(data []byte) string {
	padded := data
	if r := len(data) % 4; r != 0 {
		padded = make([]byte, len(data)+4-r)
		copy(padded, data)
	}
	out := make([]byte, 0, len(padded)/4*5)
	for i := 0; i < len(padded); i += 4 {
		v := binary.BigEndian.Uint32(padded[i:])
		var block [5]byte
		for j := 4; j >= 0; j-- {
			block[j] = z85Alphabet[v%85]
			v /= 85
		}
		out = append(out, block[:]...)
	}
	return string(out)
}

// z85DecodeString decodes s, whose length must be a multiple of 5.
func z85DecodeString(s string) ([]byte, error) {
	if len(s)%5 != 0 {
		return nil, fmt.Errorf("z85: length %d is not a multiple of 5", len(s))
	}
	out := make([]byte, 0, len(s)/5*4)
	for i := 0; i < len(s); i += 5 {
		var v uint64
		for j := 0; j < 5; j++ {
			d := z85Decode[s[i+j]]
			if d == 0xFF {
				return nil, fmt.Errorf("z85: invalid character %q at offset %d", s[i+j], i+j)
			}
			v = v*85 + uint64(d)
		}
		if v > 0xFFFFFFFF {
			return nil, fmt.Errorf("z85: block at offset %d overflows 32 bits", i)
		}
		out = binary.BigEndian.AppendUint32(out, uint32(v))
	}
	return out, nil
}
