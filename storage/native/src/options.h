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
 * Blob garbage (values of versions the version-GC filter dropped) is not collected by background
 * compactions by default: RocksDB's age-cutoff GC relocates every live value of the oldest blob
 * files a compaction meets, garbage or not, and each relocation is uploaded again (BENCHMARKS.md,
 * "Checkpoints"). A blob file goes when no SST file references it any more, and a full compaction
 * (ApplyFullCompaction) collects every blob file's garbage. `blobGcAgeCutoff` (0 to 1) turns the
 * background GC on; it and `levelBaseBytes`, `targetFileBytes`, `blobFileBytes`,
 * `blobGcForceThreshold` are experiment knobs for bench/checkpoint.ts (BENCH_ROCKSDB), not part of
 * the TypeScript OpenOptions.
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
