// Module entry of the oxbow RocksDB addon: exports the Database class (database.h) and the
// library version. Loaded only by storage/rocksdb.ts.
#include <malloc.h>
#include <napi.h>
#include <rocksdb/version.h>

#include "database.h"
#include "iterator.h"
#include "packed-batch.h"
#include "status-error.h"

namespace {

// packedBatchOrder(packed: Buffer): number[]: the packed entries' indexes in the order a write
// applies them (packed-batch.h: runs of puts in key order). For tests.
Napi::Value PackedBatchOrder(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsBuffer()) throw oxbow::UsageError(env, "InvalidArgument", "packedBatchOrder(packed): packed must be a Buffer");
  Napi::Buffer<char> packed = info[0].As<Napi::Buffer<char>>();
  std::vector<uint32_t> order;
  const rocksdb::Status status = oxbow::PackedBatchOrder(packed.Data(), packed.Length(), &order);
  if (!status.ok()) throw oxbow::UsageError(env, "InvalidArgument", status.getState() == nullptr ? "write: bad batch" : status.getState());
  Napi::Array result = Napi::Array::New(env, order.size());
  for (size_t i = 0; i < order.size(); i++) result.Set(static_cast<uint32_t>(i), Napi::Number::New(env, order[i]));
  return result;
}

// mallocInfo(): [arena, mmapped, inUse, free, releasable] bytes of the C heap (glibc's mallinfo2,
// summed over every arena): what malloc took from the system besides the V8 heap (RocksDB's
// memtables and caches, the addon's buffers, libuv's threads), what of it is in use, and what is
// free inside the arenas (fragmentation kept as resident memory). Zeros where mallinfo2 is missing.
Napi::Value MallocInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Array result = Napi::Array::New(env, 5);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
  const struct mallinfo2 stats = mallinfo2();
  const double values[] = {static_cast<double>(stats.arena), static_cast<double>(stats.hblkhd), static_cast<double>(stats.uordblks + stats.hblkhd),
                           static_cast<double>(stats.fordblks), static_cast<double>(stats.keepcost)};
#else
  const double values[] = {0, 0, 0, 0, 0};
#endif
  for (uint32_t i = 0; i < 5; i++) result.Set(i, Napi::Number::New(env, values[i]));
  return result;
}

// mallocTrim(): gives the free memory at the top of every arena back to the system (malloc_trim(0));
// true when some was released. For measuring how much of the resident set is free C heap.
Napi::Value MallocTrim(const Napi::CallbackInfo& info) {
#if defined(__GLIBC__)
  return Napi::Boolean::New(info.Env(), malloc_trim(0) != 0);
#else
  return Napi::Boolean::New(info.Env(), false);
#endif
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("Database", oxbow::Database::Define(env));
  exports.Set("Iterator", oxbow::IteratorWrap::Define(env));
  exports.Set("mallocInfo", Napi::Function::New(env, MallocInfo, "mallocInfo"));
  exports.Set("mallocTrim", Napi::Function::New(env, MallocTrim, "mallocTrim"));
  exports.Set("packedBatchOrder", Napi::Function::New(env, PackedBatchOrder, "packedBatchOrder"));
  exports.Set("rocksdbVersion", Napi::String::New(env, std::to_string(ROCKSDB_MAJOR) + "." + std::to_string(ROCKSDB_MINOR) + "." +
                                                          std::to_string(ROCKSDB_PATCH)));
  return exports;
}

}  // namespace

NODE_API_MODULE(oxbow_rocksdb, Init)
