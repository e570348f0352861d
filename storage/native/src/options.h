// The storage layout options that decide how many bytes each checkpoint uploads (issue 6): key-value
// separation (RocksDB's integrated BlobDB) and the LSM shape that goes with it. Applied to the
// options database.cc builds, before the database opens.
#pragma once

#include <napi.h>
#include <rocksdb/options.h>

namespace oxbow {

/**
 * Values of at least `blobMinBytes` (open option; default kDefaultBlobMinBytes, 0 turns blob files
 * off) are written once, at flush, into immutable blob files; SST files then hold keys, small
 * values and blob references only, so compactions (which rewrite SST files, and so make the next
 * checkpoint upload them again) move a few dozen bytes per large row instead of the row.
 *
 * Blob garbage (values of versions the version-GC filter dropped) is collected by RocksDB's
 * age-cutoff GC: compactions relocate the live values of the oldest quarter of the blob files they
 * meet (each relocated value is uploaded again by the next checkpoint; whole checkpoints stayed at
 * about 1% of the state per round in BENCHMARKS.md, "Checkpoints"), and a full compaction (ApplyFullCompaction)
 * collects every blob file's garbage. `blobGcAgeCutoff` (0 turns the background GC off),
 * `levelBaseBytes`, `level0Trigger`, `targetFileBytes`, `blobFileBytes` and `blobGcForceThreshold`
 * are experiment knobs for bench/checkpoint.ts (BENCH_ROCKSDB), not part of the TypeScript OpenOptions.
 */
void ApplyStorageLayout(Napi::Env env, const Napi::Object& options, rocksdb::Options& dbOptions);

/**
 * A full compaction (compactRange, the store's compact()) also collects every blob file's garbage:
 * live values of all blob files are rewritten, so the space of versions the version-GC filter
 * dropped comes back, as it does for values kept in SST files.
 */
void ApplyFullCompaction(rocksdb::CompactRangeOptions& compactOptions);

constexpr double kDefaultBlobMinBytes = 256;

}  // namespace oxbow
