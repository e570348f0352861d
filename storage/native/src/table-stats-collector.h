// How many bytes each table keeps in blob files (values of 256 bytes or more, options.h) and how
// many entries its SST files hold, counted exactly as files are written. RocksDB's size estimate
// (approximateSize) sees only the SST files, where a large value is a blob reference of a few dozen
// bytes, so a table of large rows would read as nearly empty; and RocksDB estimates keys only for
// the whole database. A table-properties collector reads every entry an SST file gets (at flush and
// at every compaction) and stores, per table id (the key's first 4 bytes, big endian), the entries
// and the referenced blobs' bytes as a user property of that file; database.cc's tableFileStats
// sums them over the live files. Files written before the collector existed carry no property and
// count 0 until a compaction rewrites them.
#pragma once

#include <rocksdb/db.h>
#include <rocksdb/table_properties.h>

#include <cstdint>
#include <map>

namespace oxbow {

/** The user property of one SST file, per table: "tableId:blobBytes:entries;tableId:blobBytes:entries". */
constexpr const char* kTableStatsProperty = "oxbow.table-stats";

/** What the live SST files hold of one table. */
struct TableFileStats {
  /** Bytes the table's entries reference in blob files. */
  uint64_t blobBytes = 0;
  /** Entries (MVCC versions and tombstones included) in the files. */
  uint64_t entries = 0;
};

class TableStatsCollectorFactory : public rocksdb::TablePropertiesCollectorFactory {
 public:
  rocksdb::TablePropertiesCollector* CreateTablePropertiesCollector(rocksdb::TablePropertiesCollectorFactory::Context context) override;
  const char* Name() const override { return "oxbow.TableStatsCollectorFactory"; }
};

/**
 * Per table id, over the live SST files: the bytes referenced in blob files (each value's stored,
 * compressed size plus its key, which the blob record repeats; the blob record's 32-byte header is
 * not counted) and the entries. Versions still in the files count, as approximateSize counts them.
 */
std::map<uint32_t, TableFileStats> SumTableFileStats(const rocksdb::TablePropertiesCollection& files);

}  // namespace oxbow
