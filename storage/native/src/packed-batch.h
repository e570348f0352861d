// The packed write-batch format (storage/write-batch.ts) parsed into a rocksdb::WriteBatch, with
// each run of consecutive puts in key order. Safe off the main thread (no N-API calls).
#pragma once

#include <rocksdb/status.h>
#include <rocksdb/write_batch.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace oxbow {

class FamilyRouter;

/**
 * Parses `[u8 op][u32le keyLength][key][u32le valueLength][value]...` (op 1 put, 2 delete, 3 delete
 * range [key, value)) into `batch`. Each maximal run of consecutive puts is added in bytewise key
 * order (equal keys keep their order); deletes and range deletes stay where they are and bound the
 * runs. The batch therefore means exactly what the packed order means (puts of different keys
 * commute; every key's operations keep their order), but its memtable inserts go in key order:
 * RocksDB's skiplist reuses the previous insert's position (its splice), so sorted inserts touch
 * a few cache lines each instead of a random path through the whole memtable (a 200k-row epoch
 * of random 49-byte keys: 5.7-5.9 us of CPU per row unsorted, 2.1-2.8 sorted at load 10-17;
 * BENCHMARKS.md, "Epoch write").
 *
 * Each entry goes to the column family `router` gives its key (records-family.h): the store's
 * records and the records tables to the records family, the rest to the main one, all in the one
 * batch (atomic across families); a range deletion to every family holding keys of its range.
 */
rocksdb::Status ParsePackedBatch(const char* data, size_t length, rocksdb::WriteBatch* batch, const FamilyRouter& router);

/**
 * The order ParsePackedBatch adds the entries in, as indexes of the packed entries (for tests:
 * `packedBatchOrder`). Fails like ParsePackedBatch on a malformed batch.
 */
rocksdb::Status PackedBatchOrder(const char* data, size_t length, std::vector<uint32_t>* order);

/**
 * Adds the range deletion [start, end) to `batch` with no start key in the memtable insert hints'
 * domain (epoch-prefix-transform.h): a start key in it goes as a point delete of itself and a
 * range deletion from itself followed by a zero byte (no key lies between the two), an empty
 * range as nothing.
 */
rocksdb::Status AddDeleteRange(rocksdb::WriteBatch* batch, rocksdb::ColumnFamilyHandle* family, const rocksdb::Slice& start, const rocksdb::Slice& end);

/** AddDeleteRange into every family `router` says may hold keys of [start, end). */
rocksdb::Status AddRoutedDeleteRange(rocksdb::WriteBatch* batch, const FamilyRouter& router, const rocksdb::Slice& start, const rocksdb::Slice& end);

}  // namespace oxbow
