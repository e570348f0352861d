// Key ranges copied out of one database into SST files, and SST files ingested into another
// (DESIGN.md §2, "Vnode ranges as files"): a node's vnodes of a keyed fragment are one key range per
// state table, so moving them between stores is a file written from one and ingested by the other,
// nothing going through the receiving store's memtable or write-ahead log.
#pragma once

#include <rocksdb/db.h>

#include <cstdint>
#include <string>
#include <vector>

#include "records-family.h"

namespace oxbow {

/** One SST file written by ExportRanges: its path, its column family's name, its entries and bytes. */
struct ExportedFile {
  std::string path;
  std::string family;
  uint64_t entries = 0;
  uint64_t bytes = 0;
};

/**
 * Writes every entry of the ranges [lower_i, upper_i) (sorted, not overlapping, each within one
 * column family) as of one snapshot into SST files under `directory` (which must exist), one file
 * per column family that has entries: `<directory>/<family>.sst`. Ranges with no entries make no
 * file; `files` gets those written. `snapshot` is the caller's (held until this returns), or null:
 * one taken now and released at the end. `newestEpoch` below UINT64_MAX leaves out every version of
 * an MVCC table (the main family, not the store's records) written at a later epoch: a store cut
 * with some batches past a checkpoint gives its state as of that checkpoint.
 */
rocksdb::Status ExportRanges(rocksdb::DB* db, const FamilyRouter& router, const std::vector<std::string>& lowers,
                             const std::vector<std::string>& uppers, const std::string& directory, const rocksdb::Snapshot* snapshot,
                             uint64_t newestEpoch, std::vector<ExportedFile>* files);

/**
 * Ingests SST files (written by ExportRanges, their families named) into `db`, atomically across
 * families: each file's entries get a sequence number above every write so far, so they replace
 * the versions of the same keys the database held (and nothing a range deletion removed before
 * comes back). The files are moved (hard-linked, then removed) into the database.
 */
rocksdb::Status IngestFiles(rocksdb::DB* db, FamilyRouter& router, const std::vector<ExportedFile>& files);

}  // namespace oxbow
