package store

import (
	badger "github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
)

// Option configures Open.
type Option func(*config)

// config is the resolved set of Open options.
type config struct {
	inMemory   bool
	syncWrites bool
}

// InMemory keeps the whole database in memory; the directory passed to Open
// is ignored and nothing touches the disk. It is meant for tests.
func InMemory() Option {
	return func(c *config) { c.inMemory = true }
}

// SyncWrites makes every commit fsync before returning. Without it a commit
// survives a process crash but the last writes may be lost on power loss.
func SyncWrites() Option {
	return func(c *config) { c.syncWrites = true }
}

// Badger tuning. Tests run dozens of nodes in one process on a small
// machine, so every knob is sized for a small per-node footprint.
const (
	memTableSize     = 8 << 20  // 8 MiB; the per-txn batch limit is 15% of this.
	numMemtables     = 2        // one active plus one being flushed.
	baseTableSize    = 2 << 20  // 2 MiB SSTables.
	baseLevelSize    = 8 << 20  // 8 MiB level 1.
	valueLogFileSize = 32 << 20 // 32 MiB value-log files.
	valueThreshold   = 64 << 10 // on disk, values >= 64 KiB go to the value log.
	// In memory there is no value log and badger only accepts values below
	// the threshold, so it is raised to badger's maximum (1 MiB), above
	// MaxValueSize and MaxBlobSize.
	memValueThreshold = 1 << 20
	blockCacheSize    = 2 << 20 // 2 MiB block cache.
	indexCacheSize    = 1 << 20 // 1 MiB index cache.
	numCompactors     = 2       // badger's minimum that still compacts.
	numGoroutines     = 2       // used by badger's Stream framework.
	numL0Tables       = 4
	numL0TablesStall  = 8
)

// badgerOptions translates the resolved config into badger options.
func badgerOptions(dir string, c config) badger.Options {
	path, threshold := dir, int64(valueThreshold)
	if c.inMemory {
		path, threshold = "", memValueThreshold
	}
	opts := badger.DefaultOptions(path).
		WithInMemory(c.inMemory).
		WithSyncWrites(c.syncWrites).
		WithLogger(newBadgerLogger()).
		WithMetricsEnabled(false).
		WithMemTableSize(memTableSize).
		WithNumMemtables(numMemtables).
		WithBaseTableSize(baseTableSize).
		WithBaseLevelSize(baseLevelSize).
		WithValueLogFileSize(valueLogFileSize).
		WithValueThreshold(threshold).
		WithBlockCacheSize(blockCacheSize).
		WithIndexCacheSize(indexCacheSize).
		WithCompression(options.None).
		WithNumCompactors(numCompactors).
		WithNumGoroutines(numGoroutines).
		WithNumLevelZeroTables(numL0Tables).
		WithNumLevelZeroTablesStall(numL0TablesStall).
		WithDetectConflicts(true).
		WithVerifyValueChecksum(true). // a damaged value log fails the read instead of returning other bytes
		WithNumVersionsToKeep(1)
	return opts
}
