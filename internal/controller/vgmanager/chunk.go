package vgmanager

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"
)

// maxPoolMetadata is the largest thin pool metadata lvm2 makes without cropping (its default):
// 255 × 16320 blocks of 4 KiB, about 15.88 GiB.
const maxPoolMetadata = 255 * (16384 - 64) * 4 << 10

// maxPoolChunks is how many chunks of data a thin pool can address. lvm2 refuses a pool whose data
// would need more mappings than its largest metadata holds, at 64 bytes per chunk. So a chunk size
// of 128 KiB (LVMS's default) addresses at most 31.75 TiB, and a pool larger than that needs a
// larger chunk size, which cannot change once the pool exists.
const maxPoolChunks = maxPoolMetadata / 64

// Chunk sizes lvm2 and dm-thin accept: 64 KiB to 1 GiB (lvms uses powers of two).
const (
	minChunkSize = 64 << 10
	maxChunkSize = 1 << 30
)

// maxPoolBytes is the largest pool data size a pool of chunk-size chunks can address.
func maxPoolBytes(chunk uint64) uint64 { return maxPoolChunks * chunk }

// chunkSizeFor returns the smallest chunk size, from want doubled as often as needed, that
// addresses a pool of poolBytes; at most maxChunkSize (which addresses 254 PiB, beyond any VG).
func chunkSizeFor(want, poolBytes uint64) uint64 {
	c := max(want, minChunkSize)
	for maxPoolBytes(c) < poolBytes && c < maxChunkSize {
		c *= 2
	}
	return c
}

// staticChunkSize is the chunk size of a new pool of about poolBytes under the Static policy: the
// class's chunkSize when it addresses the pool (an error saying what would when it does not), and
// with chunkSize unset, DefaultChunkSize doubled until it addresses the pool.
func staticChunkSize(pool string, set *resource.Quantity, def string, poolBytes uint64) (uint64, error) {
	q := resource.MustParse(def)
	if set != nil {
		q = *set
	}
	v, ok := q.AsInt64()
	if !ok || v <= 0 {
		return 0, fmt.Errorf("thin pool %s: invalid chunkSize %s", pool, q.String())
	}
	if set == nil {
		return chunkSizeFor(uint64(v), poolBytes), nil
	}
	if maxPoolBytes(uint64(v)) < poolBytes {
		need := resource.NewQuantity(int64(chunkSizeFor(uint64(v), poolBytes)), resource.BinarySI)
		return 0, fmt.Errorf("thin pool %s: chunkSize %s addresses at most %d bytes of data, and the pool "+
			"would hold about %d: set chunkSize to %s or more, or leave it unset so that lvms chooses it "+
			"(it cannot change once the pool exists)", pool, q.String(), maxPoolBytes(uint64(v)), poolBytes,
			need.String())
	}
	return uint64(v), nil
}

// capToChunks limits a pool extension to what the pool's chunk size addresses: extentsTo (data
// extents wanted, 0 for none) becomes at most that, and 0 when the pool is there already; capped
// reports that the limit cut the extension.
func capToChunks(extentsTo, cur, extentSize, chunk uint64) (to uint64, capped bool) {
	if extentsTo == 0 || chunk == 0 || extentSize == 0 {
		return extentsTo, false
	}
	limit := maxPoolBytes(chunk) / extentSize
	if extentsTo <= limit {
		return extentsTo, false
	}
	if limit <= cur {
		return 0, true
	}
	return limit, true
}
