package vgmanager

// Exported for the tests of package vgmanager_test.
var (
	ChunkSizeFor = chunkSizeFor
	MaxPoolBytes = maxPoolBytes
)
