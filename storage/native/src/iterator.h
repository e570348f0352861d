// A bounded RocksDB iterator for JavaScript that returns many entries per call, packed into one
// Buffer ([u32 keyLength][key][u32 valueLength][value]..., little endian lengths), so a scan of a
// million keys costs a few thousand native calls, not a million. In MVCC mode (an epoch given) it
// returns, for each key of the layout `... | key | ~epoch`, only the newest version at or before
// that epoch, and skips tombstones (value byte 0 == tombstone) unless asked to keep them.
#pragma once

#include <napi.h>
#include <rocksdb/db.h>

#include <memory>
#include <string>

namespace oxbow {

class Database;

class IteratorWrap : public Napi::ObjectWrap<IteratorWrap> {
 public:
  static Napi::Function Define(Napi::Env env);
  /** The Iterator class of this thread's environment. */
  static Napi::FunctionReference& Constructor(Napi::Env env) { return *env.GetInstanceData<Napi::FunctionReference>(); }
  explicit IteratorWrap(const Napi::CallbackInfo& info);
  ~IteratorWrap() override;

  /** Called by the Database when it closes: the RocksDB iterator must go before the DB. */
  void Detach();

 private:
  Napi::Value Seek(const Napi::CallbackInfo& info);
  Napi::Value NextBatch(const Napi::CallbackInfo& info);
  Napi::Value Close(const Napi::CallbackInfo& info);

  void EnsurePositioned();
  void Append(std::string& out, const rocksdb::Slice& key, const rocksdb::Slice& value);
  bool NextRaw(std::string& out, size_t maxEntries, size_t maxBytes, size_t& count);
  bool NextMvccForward(std::string& out, size_t maxEntries, size_t maxBytes, size_t& count);
  bool NextMvccReverse(std::string& out, size_t maxEntries, size_t maxBytes, size_t& count);

  Database* owner_ = nullptr;
  Napi::ObjectReference ownerReference_;
  std::unique_ptr<rocksdb::Iterator> iterator_;
  std::string lowerBound_;
  std::string upperBound_;
  rocksdb::Slice lowerSlice_;
  rocksdb::Slice upperSlice_;
  bool reverse_ = false;
  bool positioned_ = false;
  bool done_ = false;
  bool mvcc_ = false;
  bool keepTombstones_ = false;
  std::string onlyFamily_;
  std::string epochSuffix_;  // ~epoch, big endian: versions with suffix >= this are visible
  // Forward MVCC: the prefix already answered (its older versions are skipped).
  std::string answeredPrefix_;
  bool haveAnsweredPrefix_ = false;
  // Reverse MVCC: the newest visible version seen so far for the current prefix.
  std::string candidateKey_;
  std::string candidateValue_;
  bool haveCandidate_ = false;
};

}  // namespace oxbow
