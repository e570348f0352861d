// How many bytes each table keeps in blob files (values of 256 bytes or more, options.h), counted
// exactly as files are written: RocksDB's size estimates (approximateSize) see only the SST files,
// where such a value is a blob reference of a few dozen bytes, so a table of large rows would read
// as nearly empty. A table-properties collector reads every blob reference an SST file gets (at
// flush and at every compaction) and stores, per table id (the key's first 4 bytes, big endian),
// the referenced blobs' bytes as a user property of that file; database.cc's blobBytes(tableId) sums
// them over the live files. Files written before the collector existed carry no property and count 0 until
// a compaction rewrites them.
#pragma once

#include <rocksdb/db.h>
#include <rocksdb/table_properties.h>

#include <cstdint>
#include <map>

namespace oxbow {

/** The user property holding one SST file's blob bytes per table: "tableId:bytes;tableId:bytes". */
constexpr const char* kBlobBytesProperty = "oxbow.blob-bytes";

class BlobBytesCollectorFactory : public rocksdb::TablePropertiesCollectorFactory {
 public:
  rocksdb::TablePropertiesCollector* CreateTablePropertiesCollector(rocksdb::TablePropertiesCollectorFactory::Context context) override;
  const char* Name() const override { return "oxbow.BlobBytesCollectorFactory"; }
};

/**
 * Per table id, the bytes its live SST files reference in blob files: each value's stored
 * (compressed) size plus its key, which the blob record repeats; the blob record's fixed header
 * (about 30 bytes) is not counted. Versions still in the files count, as approximateSize counts them.
 */
std::map<uint32_t, uint64_t> SumBlobBytes(const rocksdb::TablePropertiesCollection& files);

}  // namespace oxbow
