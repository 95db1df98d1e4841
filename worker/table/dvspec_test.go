package table_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"strings"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// A second deletion-vector decoder, written from the protocol text alone (PROTOCOL.md §Deletion
// Vectors, §Deletion Vector Format, §Deletion Vector File Storage Format) and the RoaringFormatSpec it
// points to, sharing no code with worker/delta's reader (no roaring library, its own Z85): what the
// project writes must decode here to the intended row positions.

// specZ85 is the alphabet of ZeroMQ's Z85 (rfc.zeromq.org/spec/32), which the protocol calls base85.
const specZ85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"

func specZ85Decode(s string) ([]byte, error) {
	if len(s)%5 != 0 {
		return nil, fmt.Errorf("z85 text of %d characters", len(s))
	}
	var out []byte
	for i := 0; i < len(s); i += 5 {
		var v uint64
		for _, c := range []byte(s[i : i+5]) {
			d := strings.IndexByte(specZ85, c)
			if d < 0 {
				return nil, fmt.Errorf("z85: %q is not in the alphabet", c)
			}
			v = v*85 + uint64(d)
		}
		out = append(out, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
	}
	return out, nil
}

// specDVPath derives a "u" descriptor's file (§Derived Fields): an optional random prefix, then a
// 20-character base85 UUID; the file is <prefix>/deletion_vector_<uuid>.bin under the table root.
func specDVPath(pathOrInline string) (string, error) {
	if len(pathOrInline) < 20 {
		return "", fmt.Errorf("u descriptor %q too short", pathOrInline)
	}
	prefix, enc := pathOrInline[:len(pathOrInline)-20], pathOrInline[len(pathOrInline)-20:]
	raw, err := specZ85Decode(enc)
	if err != nil {
		return "", err
	}
	h := fmt.Sprintf("%x", raw)
	name := fmt.Sprintf("deletion_vector_%s-%s-%s-%s-%s.bin", h[0:8], h[8:12], h[12:16], h[16:20], h[20:32])
	if prefix != "" {
		return prefix + "/" + name, nil
	}
	return name, nil
}

// specDecodeDV returns the row positions a descriptor deletes, in ascending order.
func specDecodeDV(ctx context.Context, store storage.Store, dv *delta.DeletionVectorDescriptor) ([]uint64, error) {
	var bitmap []byte
	switch dv.StorageType {
	case "i":
		if dv.Offset != nil {
			return nil, errors.New("inline DV with an offset")
		}
		raw, err := specZ85Decode(dv.PathOrInlineDv)
		if err != nil {
			return nil, err
		}
		if int(dv.SizeInBytes) > len(raw) {
			return nil, fmt.Errorf("sizeInBytes %d of %d decoded bytes", dv.SizeInBytes, len(raw))
		}
		bitmap = raw[:dv.SizeInBytes]
	case "u":
		key, err := specDVPath(dv.PathOrInlineDv)
		if err != nil {
			return nil, err
		}
		file, err := store.Get(ctx, key)
		if err != nil {
			return nil, err
		}
		if len(file) == 0 || file[0] != 1 {
			return nil, fmt.Errorf("%s: format version byte is not 1", key)
		}
		if dv.Offset == nil {
			return nil, fmt.Errorf("%s: on-disk DV without an offset", key)
		}
		off := int(*dv.Offset)
		if off < 1 || off+4 > len(file) {
			return nil, fmt.Errorf("%s: offset %d outside the %d-byte file", key, off, len(file))
		}
		size := int(binary.BigEndian.Uint32(file[off:]))
		if size != int(dv.SizeInBytes) || off+4+size+4 > len(file) {
			return nil, fmt.Errorf("%s: dataSize %d, descriptor sizeInBytes %d, file %d bytes", key, size, dv.SizeInBytes, len(file))
		}
		bitmap = file[off+4 : off+4+size]
		if sum := binary.BigEndian.Uint32(file[off+4+size:]); sum != crc32.ChecksumIEEE(bitmap) {
			return nil, fmt.Errorf("%s: checksum mismatch", key)
		}
	default:
		return nil, fmt.Errorf("storage type %q", dv.StorageType)
	}
	return specDecodeBitmapArray(bitmap)
}

// specDecodeBitmapArray decodes magic 1681511377 (little endian) and then the 64-bit portable
// Roaring format: numBuckets (8 bytes), then per bucket its key (4 bytes, most significant bit 0, in
// ascending order) and a 32-bit RoaringBitmap.
func specDecodeBitmapArray(b []byte) ([]uint64, error) {
	if len(b) < 12 || binary.LittleEndian.Uint32(b) != 1681511377 {
		return nil, errors.New("no portable RoaringBitmapArray magic number")
	}
	n := binary.LittleEndian.Uint64(b[4:])
	rest := b[12:]
	var out []uint64
	prevKey := int64(-1)
	for range n {
		if len(rest) < 4 {
			return nil, errors.New("truncated bucket key")
		}
		key := binary.LittleEndian.Uint32(rest)
		if key&0x80000000 != 0 || int64(key) <= prevKey {
			return nil, fmt.Errorf("bucket key %d: MSB set or not ascending", key)
		}
		prevKey = int64(key)
		low, used, err := specDecodeRoaring32(rest[4:])
		if err != nil {
			return nil, err
		}
		for _, v := range low {
			out = append(out, uint64(key)<<32|uint64(v))
		}
		rest = rest[4+used:]
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("%d bytes after the last bucket", len(rest))
	}
	return out, nil
}

// specDecodeRoaring32 follows RoaringFormatSpec: a cookie (12346 with a container count, or 12347 in
// the low 16 bits with count-1 in the high ones and a run bitset), per container its 16-bit key and
// cardinality-1, an offset header (always without runs, with runs from 4 containers on), then the
// containers: runs (count, then start and length-1 pairs), arrays (≤ 4096 values) or 8 KiB bitsets.
func specDecodeRoaring32(b []byte) ([]uint32, int, error) {
	const noRuns, withRuns = 12346, 12347
	if len(b) < 4 {
		return nil, 0, errors.New("truncated cookie")
	}
	cookie := binary.LittleEndian.Uint32(b)
	p := 4
	var size int
	var runBits []byte
	switch {
	case cookie == noRuns:
		if len(b) < 8 {
			return nil, 0, errors.New("truncated container count")
		}
		size = int(binary.LittleEndian.Uint32(b[4:]))
		p = 8
	case cookie&0xFFFF == withRuns:
		size = int(cookie>>16) + 1
		nb := (size + 7) / 8
		if len(b) < p+nb {
			return nil, 0, errors.New("truncated run bitset")
		}
		runBits = b[p : p+nb]
		p += nb
	default:
		return nil, 0, fmt.Errorf("cookie %d", cookie)
	}
	if len(b) < p+4*size {
		return nil, 0, errors.New("truncated descriptive header")
	}
	keys, cards := make([]uint16, size), make([]int, size)
	for i := range size {
		keys[i] = binary.LittleEndian.Uint16(b[p+4*i:])
		cards[i] = int(binary.LittleEndian.Uint16(b[p+4*i+2:])) + 1
	}
	p += 4 * size
	if runBits == nil || size >= 4 {
		p += 4 * size // offsets: the containers follow in order, so they are not needed
	}
	isRun := func(i int) bool { return runBits != nil && runBits[i/8]&(1<<(i%8)) != 0 }
	var out []uint32
	for i := range size {
		hi := uint32(keys[i]) << 16
		switch {
		case isRun(i):
			if len(b) < p+2 {
				return nil, 0, errors.New("truncated run count")
			}
			runs := int(binary.LittleEndian.Uint16(b[p:]))
			p += 2
			if len(b) < p+4*runs {
				return nil, 0, errors.New("truncated runs")
			}
			for r := range runs {
				start := uint32(binary.LittleEndian.Uint16(b[p+4*r:]))
				length := uint32(binary.LittleEndian.Uint16(b[p+4*r+2:]))
				for v := start; v <= start+length; v++ {
					out = append(out, hi|v)
				}
			}
			p += 4 * runs
		case cards[i] <= 4096:
			if len(b) < p+2*cards[i] {
				return nil, 0, errors.New("truncated array container")
			}
			for k := range cards[i] {
				out = append(out, hi|uint32(binary.LittleEndian.Uint16(b[p+2*k:])))
			}
			p += 2 * cards[i]
		default:
			if len(b) < p+8192 {
				return nil, 0, errors.New("truncated bitset container")
			}
			for w := range 1024 {
				word := binary.LittleEndian.Uint64(b[p+8*w:])
				for bit := range 64 {
					if word&(1<<bit) != 0 {
						out = append(out, hi|uint32(w*64+bit))
					}
				}
			}
			p += 8192
		}
	}
	return out, p, nil
}
