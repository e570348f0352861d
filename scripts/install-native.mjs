// npm install hook: builds the native RocksDB addon (storage/native). STUB until the storage work lands.
console.log('oxbow: native addon not yet part of the build');
