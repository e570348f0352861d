// See iterator.h.
#include "iterator.h"

#include <cstring>

#include "database.h"
#include "epoch-prefix-transform.h"
#include "status-error.h"

namespace oxbow {


namespace {

void AppendLittleEndian32(std::string& out, uint32_t value) {
  char bytes[4];
  std::memcpy(bytes, &value, 4);
  out.append(bytes, 4);
}

bool IsTombstone(const rocksdb::Slice& value) { return value.size() == 0 || value[0] == 0; }

}  // namespace

Napi::Function IteratorWrap::Define(Napi::Env env) {
  Napi::Function function = DefineClass(env, "Iterator",
                                        {
                                            InstanceMethod("seek", &IteratorWrap::Seek),
                                            InstanceMethod("next", &IteratorWrap::NextBatch),
                                            InstanceMethod("close", &IteratorWrap::Close),
                                        });
  // Per environment (the main thread and each worker thread load the addon: a static reference
  // would hold another thread's function).
  env.SetInstanceData<Napi::FunctionReference>(new Napi::FunctionReference(Napi::Persistent(function)));
  return function;
}

// new Iterator(database, { lowerBound?, upperBound?, reverse?, snapshot?, fillCache?, epochSuffix?,
// keepTombstones?, family? }); created through database.iterator(options). `family` ("default" or
// "records") reads that column family alone, whatever the bounds route to (tests, diagnostics).
IteratorWrap::IteratorWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<IteratorWrap>(info) {
  Napi::Env env = info.Env();
  Napi::Object databaseObject = info[0].As<Napi::Object>();
  owner_ = Napi::ObjectWrap<Database>::Unwrap(databaseObject);
  owner_->OpenDb(env);
  ownerReference_ = Napi::Persistent(databaseObject);

  rocksdb::ReadOptions read;
  read.total_order_seek = true;
  if (info.Length() > 1 && info[1].IsObject()) {
    Napi::Object options = info[1].As<Napi::Object>();
    Napi::Value lower = options.Get("lowerBound");
    if (lower.IsBuffer()) {
      Napi::Buffer<char> buffer = lower.As<Napi::Buffer<char>>();
      lowerBound_.assign(buffer.Data(), buffer.Length());
      lowerSlice_ = rocksdb::Slice(lowerBound_);
      read.iterate_lower_bound = &lowerSlice_;
    }
    Napi::Value upper = options.Get("upperBound");
    if (upper.IsBuffer()) {
      Napi::Buffer<char> buffer = upper.As<Napi::Buffer<char>>();
      upperBound_.assign(buffer.Data(), buffer.Length());
      upperSlice_ = rocksdb::Slice(upperBound_);
      read.iterate_upper_bound = &upperSlice_;
    }
    reverse_ = options.Get("reverse").ToBoolean().Value();
    Napi::Value fillCache = options.Get("fillCache");
    if (fillCache.IsBoolean()) read.fill_cache = fillCache.As<Napi::Boolean>().Value();
    Napi::Value snapshot = options.Get("snapshot");
    if (snapshot.IsNumber()) read.snapshot = owner_->SnapshotById(env, snapshot.As<Napi::Number>().Uint32Value());
    Napi::Value epochSuffix = options.Get("epochSuffix");
    if (epochSuffix.IsBuffer()) {
      Napi::Buffer<char> buffer = epochSuffix.As<Napi::Buffer<char>>();
      if (buffer.Length() != kEpochSuffixBytes) throw UsageError(env, "InvalidArgument", "epochSuffix must be 8 bytes");
      epochSuffix_.assign(buffer.Data(), buffer.Length());
      mvcc_ = true;
    }
    keepTombstones_ = options.Get("keepTombstones").ToBoolean().Value();
    Napi::Value family = options.Get("family");
    if (family.IsString()) onlyFamily_ = family.As<Napi::String>().Utf8Value();
  }
  iterator_.reset(owner_->NewRoutedIterator(env, read, onlyFamily_));
  owner_->RegisterIterator(this);
}

IteratorWrap::~IteratorWrap() {
  if (owner_ != nullptr) owner_->UnregisterIterator(this);
  iterator_.reset();
}

void IteratorWrap::Detach() {
  iterator_.reset();
  owner_ = nullptr;
}

Napi::Value IteratorWrap::Close(const Napi::CallbackInfo& info) {
  if (owner_ != nullptr) owner_->UnregisterIterator(this);
  iterator_.reset();
  owner_ = nullptr;
  ownerReference_.Reset();
  return info.Env().Undefined();
}

// seek(key): forward: first key >= key; reverse: last key <= key.
Napi::Value IteratorWrap::Seek(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!iterator_) throw UsageError(env, "Closed", "the iterator or its database is closed");
  Napi::Buffer<char> key = info[0].As<Napi::Buffer<char>>();
  // An empty Buffer may have no data pointer; rocksdb::Slice::compare asserts on one.
  const rocksdb::Slice target = key.Length() == 0 ? rocksdb::Slice() : rocksdb::Slice(key.Data(), key.Length());
  if (reverse_) {
    iterator_->SeekForPrev(target);
  } else {
    iterator_->Seek(target);
  }
  positioned_ = true;
  done_ = false;
  haveAnsweredPrefix_ = false;
  haveCandidate_ = false;
  return env.Undefined();
}

void IteratorWrap::EnsurePositioned() {
  if (positioned_) return;
  if (reverse_) {
    iterator_->SeekToLast();
  } else {
    iterator_->SeekToFirst();
  }
  positioned_ = true;
}

void IteratorWrap::Append(std::string& out, const rocksdb::Slice& key, const rocksdb::Slice& value) {
  AppendLittleEndian32(out, static_cast<uint32_t>(key.size()));
  out.append(key.data(), key.size());
  AppendLittleEndian32(out, static_cast<uint32_t>(value.size()));
  out.append(value.data(), value.size());
}

bool IteratorWrap::NextRaw(std::string& out, size_t maxEntries, size_t maxBytes, size_t& count) {
  while (iterator_->Valid() && count < maxEntries && out.size() < maxBytes) {
    Append(out, iterator_->key(), iterator_->value());
    count++;
    if (reverse_) {
      iterator_->Prev();
    } else {
      iterator_->Next();
    }
  }
  return !iterator_->Valid();
}

bool IteratorWrap::NextMvccForward(std::string& out, size_t maxEntries, size_t maxBytes, size_t& count) {
  while (iterator_->Valid() && count < maxEntries && out.size() < maxBytes) {
    const rocksdb::Slice key = iterator_->key();
    if (key.size() < kEpochSuffixBytes) {
      iterator_->Next();
      continue;
    }
    const size_t prefixBytes = key.size() - kEpochSuffixBytes;
    const rocksdb::Slice prefix(key.data(), prefixBytes);
    if (haveAnsweredPrefix_ && prefix == rocksdb::Slice(answeredPrefix_)) {
      iterator_->Next();  // an older version of a key already answered
      continue;
    }
    const rocksdb::Slice suffix(key.data() + prefixBytes, kEpochSuffixBytes);
    if (suffix.compare(rocksdb::Slice(epochSuffix_)) < 0) {
      // Newer than the read epoch: jump straight to the newest version at or before it.
      std::string target(prefix.data(), prefix.size());
      target.append(epochSuffix_);
      iterator_->Seek(target);
      continue;
    }
    answeredPrefix_.assign(prefix.data(), prefix.size());
    haveAnsweredPrefix_ = true;
    const rocksdb::Slice value = iterator_->value();
    if (keepTombstones_ || !IsTombstone(value)) {
      Append(out, key, value);
      count++;
    }
    iterator_->Next();
  }
  return !iterator_->Valid();
}

bool IteratorWrap::NextMvccReverse(std::string& out, size_t maxEntries, size_t maxBytes, size_t& count) {
  // Backwards, the versions of one key arrive oldest first: the visible one is the last seen
  // with an epoch at or before the read epoch, known only when the key changes.
  while (iterator_->Valid() && count < maxEntries && out.size() < maxBytes) {
    const rocksdb::Slice key = iterator_->key();
    if (key.size() < kEpochSuffixBytes) {
      iterator_->Prev();
      continue;
    }
    const size_t prefixBytes = key.size() - kEpochSuffixBytes;
    const rocksdb::Slice prefix(key.data(), prefixBytes);
    if (haveCandidate_) {
      const rocksdb::Slice candidatePrefix(candidateKey_.data(), candidateKey_.size() - kEpochSuffixBytes);
      if (prefix != candidatePrefix) {
        if (keepTombstones_ || !IsTombstone(candidateValue_)) {
          Append(out, candidateKey_, candidateValue_);
          count++;
        }
        haveCandidate_ = false;
        continue;  // re-examine the current key with no candidate
      }
    }
    const rocksdb::Slice suffix(key.data() + prefixBytes, kEpochSuffixBytes);
    if (suffix.compare(rocksdb::Slice(epochSuffix_)) >= 0) {
      candidateKey_.assign(key.data(), key.size());
      const rocksdb::Slice value = iterator_->value();
      candidateValue_.assign(value.data(), value.size());
      haveCandidate_ = true;
    }
    iterator_->Prev();
  }
  if (!iterator_->Valid() && haveCandidate_ && count < maxEntries) {
    if (keepTombstones_ || !IsTombstone(candidateValue_)) {
      Append(out, candidateKey_, candidateValue_);
      count++;
    }
    haveCandidate_ = false;
  }
  return !iterator_->Valid() && !haveCandidate_;
}

// next(maxEntries, maxBytes): a packed Buffer of up to maxEntries entries, or null when the
// iterator is exhausted.
Napi::Value IteratorWrap::NextBatch(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!iterator_) throw UsageError(env, "Closed", "the iterator or its database is closed");
  if (done_) return env.Null();
  EnsurePositioned();
  const size_t maxEntries = info.Length() > 0 && info[0].IsNumber() ? info[0].As<Napi::Number>().Uint32Value() : 1000;
  const size_t maxBytes = info.Length() > 1 && info[1].IsNumber() ? info[1].As<Napi::Number>().Uint32Value() : (1 << 20);
  std::string out;
  size_t count = 0;
  bool exhausted;
  if (!mvcc_) {
    exhausted = NextRaw(out, maxEntries, maxBytes, count);
  } else if (reverse_) {
    exhausted = NextMvccReverse(out, maxEntries, maxBytes, count);
  } else {
    exhausted = NextMvccForward(out, maxEntries, maxBytes, count);
  }
  if (exhausted) {
    ThrowIfError(env, iterator_->status(), "iterator");
    done_ = true;
  }
  if (count == 0) return env.Null();
  return Napi::Buffer<char>::Copy(env, out.data(), out.size());
}

}  // namespace oxbow
